/* lu_window.cl -- per-pivot LU with delayed updates: Crout order inside a
 * window of WIN pivots, one rank-WIN update of the trailing matrix between
 * windows.
 *
 * A is n x n, row-major, leading dimension lda, factored as ?getrf does:
 * P·A = L·U, L strictly below the diagonal (unit diagonal implied), U on and
 * above, piv[k] = row interchanged with row k (0-based).  info (one int, 0 on
 * entry) receives k+1 for the first exactly-zero pivot.
 *
 * The Crout kernel (lu_crout.cl) forms pivot k's row of U and the next
 * column from all k finished columns of L and rows of U: 2k(n-k) entries
 * read per pivot.  Here the pivots are taken in windows [k0, k0+WIN): inside a
 * window, pivot k forms, from the t = k - k0 pending pivots of its window
 * only (A' is A with the rank-WIN updates of all earlier windows applied),
 *
 *     row k of U:        u[k, j] = a'[k, j] - l[k, k0:k] · u[k0:k, j]           j > k
 *     column k of L:     l[i, k] = c[i] / u[k, k]                               i > k
 *     next column:       c'[i]   = a'[i, k+1] - l[i, k0:k+1] · u[k0:k+1, k+1]   i > k
 *
 * and pivot k+1 = argmax |c'[i]|: about 2t(n-k) entries read.  After the
 * window's last pivot the host interchanges the window's rows in all columns
 * (laswp) and applies the window to the trailing matrix in one GEMM,
 * A'[k0+WIN:, k0+WIN+1:] -= L[k0+WIN:, k0:k0+WIN] · U[k0:k0+WIN, k0+WIN+1:]
 * (column k0+WIN is already the next candidate column).  Same arithmetic as
 * ?getf2, summed in another order.
 *
 * Inside a window rows stay where they are: logical row i is physical row
 * phys(i), from perm entries written in this window (the identity for the
 * others, see phys).  A launch needs no handshake between its work-groups:
 * what one launch decides, the next one reads.
 *
 *   cand_val/cand_row  [2][*]: launch k reads the candidates for pivot k from
 *                      side k % 2 (prev of them) and writes its own to the other;
 *   perm               [2][n]: launch k reads side k % 2 (the interchanges of
 *                      pivots k0..k-1) and work-group 0 brings the other side
 *                      (pivots up to k-2) up to date with pivots k-1 and k;
 *   u_next             [2]: u[k, k+1] leaves launch k there (its work-groups all
 *                      read a[k, k+1] as it was); launch k+1 stores it in A.
 *
 * Launch k (k = 0 .. n-1; window_first chose pivot 0) takes k as its global
 * offset (so the host sets no argument between launches).  Every work-group
 * folds the previous candidates to pivot p; work-groups [0, col_blocks) take
 * WG logical rows k+1.. of the column part each (one per item), the rest WG
 * columns k+2.. of row k each (one per item).  The loads that do not depend
 * on p are issued before it is known.  Work-group 0 also writes piv[k], the
 * perm side of launch k+1, u[k-1, k] and info.
 *
 * WG is a power of two; 1 <= WIN <= WG.  NO_PIVOT = 1 takes the diagonal as pivot
 * (teaching only: unstable).
 */
#include "common.h"
#include "pivoting.h"

#ifndef WIN
#define WIN 32             /* pivots per window */
#endif

/* state: piv and what one launch passes to the next, in one buffer (every
 * buffer argument adds to the host's enqueue time, thousands of times over).
 * In ints: [0, n) piv, [n] info; from ST_REALS (even) the reals u_next[2] and
 * cand_val[2][stride]; then the ints cand_row[2][stride]; then perm[2][n] as
 * int2 (8-byte aligned: every offset before it is even).  oclla/lu.py
 * (_WindowState) lays it out the same way. */
#define ST_INFO(n) (n)
#define ST_REALS(n) ((n) + 2 - (n) % 2)
#define ST_CAND_ROW(n, stride) \
    (ST_REALS(n) + (2 + 2 * (stride)) * (int)(sizeof(real) / sizeof(int)))
#define ST_PERM(n, stride) (ST_CAND_ROW(n, stride) + 2 * (stride))

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void window_first(__global const real *a, const int lda, const int n, __global int *state,
                  const int stride)
{
    __local real vals[WG];
    __local int rows[WG];
    const int p = wg_argmax_abs(a, lda, 0, 0, n, vals, rows);
    if (get_local_id(0) == 0) {
        ((__global real *)(state + ST_REALS(n)))[2] = ONE;       /* cand_val[0][0] */
        state[ST_CAND_ROW(n, stride)] = p;                       /* cand_row[0][0] */
    }
}

/* Physical row of logical row i: perm entries are (row, window start) and
 * count only in the window that wrote them (the identity elsewhere), so the
 * permutation needs no reset between windows. */
int phys(__global const int2 *pm, const int i, const int k0)
{
    const int2 e = pm[i];
    return e.y == k0 ? e.x : i;
}

/* Physical row r's c[i] = a[r, k], a'[r, k+1] and l[r, k0:k0+t] (t <= WIN,
 * the rest of lrow zero): independent loads, all in flight at once. */
void load_row(__global const real *a, const int lda, const int r, const int k, const int k0,
              const int t, real *c, real *x, real *lrow)
{
    __global const real *row = a + AT(r, 0, lda);
    *c = row[k];
    *x = row[k + 1];
    #pragma unroll
    for (int m = 0; m < WIN; m++)
        lrow[m] = m < t ? row[k0 + m] : ZERO;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void window_step(__global real *a, const int lda, const int n, __global int *state,
                 const int stride)
{
    __global int *piv = state;
    __global real *u_next = (__global real *)(state + ST_REALS(n));
    __global real *cand_val = u_next + 2;
    __global int *cand_row = state + ST_CAND_ROW(n, stride);
    __global int2 *perm = (__global int2 *)(state + ST_PERM(n, stride));
    __global int *info = state + ST_INFO(n);
    __local real vals[WG];
    __local int rows[WG];
    __local real lk[WIN];        /* l[k, k0 + m] */
    __local real uk1[WIN];       /* u[k0 + m, k + 1] */
    const int lid = get_local_id(0), group = get_group_id(0);
    const int k = get_global_offset(0), t = k % WIN, k0 = k - t;
    const int prev = k == 0 ? 1 : (n - k + WG - 1) / WG;       /* launch k-1's column blocks */
    const int side = k & 1;
    __global const int2 *pm = perm + side * n;
    __global int2 *out = perm + (1 - side) * n;
    const int col_blocks = (n - k - 1 + WG - 1) / WG;
    const int is_col = group < col_blocks;
    const int i = k + 1 + group * WG + lid;                     /* column part: logical row */
    const int j = k + 2 + (group - col_blocks) * WG + lid;      /* row part: column */
    const int has_row = is_col && i < n, has_col = !is_col && j < n;
    const int lead = group == 0 && lid == 0;      /* writes what launch k+1 reads */

    /* 1. loads that do not depend on pivot k, in flight while it is chosen: the
     * column part's row (at physical row phys(i) unless i turns out to be the
     * pivot row), the row part's u[k0:k, j], u[k0:k, k+1], and the lead item's
     * entries of perm, piv, u_next and info */
    int ri = has_row ? phys(pm, i, k0) : 0;
    real c = ZERO, x = ZERO, lrow[WIN];
    if (has_row)
        load_row(a, lda, ri, k, k0, t, &c, &x, lrow);
    real ucol[WIN];                                              /* u[k0 + m, j] */
    #pragma unroll
    for (int m = 0; m < WIN; m++)
        ucol[m] = has_col && m < t ? a[AT(phys(pm, k0 + m, k0), j, lda)] : ZERO;
    if (lid < t)
        uk1[lid] = k + 1 < n ? a[AT(phys(pm, k0 + lid, k0), k + 1, lda)] : ZERO;
    int q = 0, o_prev = 0, o_q = 0, o_k = 0, r_prev = 0, info_in = 1;
    real u_prev = ZERO;
    if (lead) {
        info_in = *info;
        o_k = phys(out, k, k0);
        if (k > 0) {
            u_prev = u_next[side];                               /* u[k-1, k] */
            r_prev = phys(pm, k - 1, k0);
        }
        if (t > 0) {
            q = piv[k - 1];
            o_prev = phys(out, k - 1, k0);
            o_q = phys(out, q, k0);
        }
    }

    /* 2. pivot k: the largest candidate of launch k-1 (lowest row on ties; k if
     * there are none above -1, as with NaN) */
    real value;
    const int p = wg_argmax_stored(cand_val + side * stride, cand_row + side * stride, prev, k,
                                   vals, rows, &value);
    const int rk = phys(pm, p, k0);                     /* logical row k after the interchange */
    if (has_row && i == p) {                            /* logical row p: row k's entries */
        ri = phys(pm, k, k0);
        load_row(a, lda, ri, k, k0, t, &c, &x, lrow);
    }
    if (lid < t)
        lk[lid] = a[AT(rk, k0 + lid, lda)];
    const real d = a[AT(rk, k, lda)];                            /* the pivot */
    real ukk1 = k + 1 < n ? a[AT(rk, k + 1, lda)] : ZERO;
    real u = has_col ? a[AT(rk, j, lda)] : ZERO;
    const int o_p = lead ? phys(out, p, k0) : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int m = 0; m < t; m++)                                  /* u[k, k+1] */
        ukk1 -= lk[m] * uk1[m];

    /* 3. column part: l[i, k] and c'[i]; row part: u[k, j] */
    real best = -ONE;
    int best_row = k + 1;
    if (has_row) {
        #pragma unroll
        for (int m = 0; m < WIN; m++)
            x -= m < t ? lrow[m] * uk1[m] : ZERO;
        const real l = d == ZERO ? c : multiplier(c, d, ONE / d);
        x -= l * ukk1;
        a[AT(ri, k, lda)] = l;
        a[AT(ri, k + 1, lda)] = x;
#if NO_PIVOT
        best = i == k + 1 ? ONE : ZERO;
#else
        best = fabs(x);
#endif
        best_row = i;
    }
    if (has_col) {
        #pragma unroll
        for (int m = 0; m < WIN; m++)
            u -= m < t ? lk[m] * ucol[m] : ZERO;
        a[AT(rk, j, lda)] = u;
    }
    /* the column block's candidate for pivot k+1 (outside the branch: no barrier in it) */
    const int cand = wg_reduce_argmax(best, best_row, vals, rows, &value);
    if (is_col && lid == 0) {
        cand_val[(1 - side) * stride + group] = value;
        cand_row[(1 - side) * stride + group] = cand;
        if (group == 0)
            u_next[1 - side] = ukk1;
    }

    /* 4. the lead item: k+1, piv[k], u[k-1, k], info, and the other perm side
     * (left by launch k-2) brought up to date with interchanges k-1 and k */
    if (lead) {
        piv[k] = p;
        if (k > 0)
            a[AT(r_prev, k, lda)] = u_prev;
        if (info_in == 0 && d == ZERO)
            *info = k + 1;
        const int now_k = t > 0 && q == k ? o_prev : o_k;       /* after interchange k-1 */
        const int now_p = t > 0 && q == p ? o_prev : o_p;
        if (t > 0) {
            out[k - 1] = (int2)(o_q, k0);
            out[q] = (int2)(o_prev, k0);
        }
        out[k] = (int2)(now_p, k0);
        out[p] = (int2)(now_k, k0);
    }
}
