/* lu.cl -- LU with partial pivoting: the per-pivot kernels and the panel leaf.
 *
 * A is n x n, row-major, leading dimension lda, overwritten by L (strictly
 * below the diagonal, unit diagonal implied) and U (on and above), as
 * LAPACK's ?getrf.  piv[k] = row interchanged with row k (0-based, global;
 * the host fills piv with 0, 1, ..., n-1 first).  info (one int, 0 on entry)
 * receives k+1 for the first exactly-zero pivot.
 *
 * Per-pivot LU: one launch of pivot_step per pivot k = 0 .. n-1, after one
 * pivot_first (argmax of column 0).  Nothing is read back between launches.
 * Launch k finds p = piv[k] already chosen and pivot = a[p, k]; column k is
 * still unswapped and unscaled, so every work-group reads it freely:
 *
 *          k  k+1 ...                     n
 *       +--+--+-----------+-----------+
 *    k  |  |  <- row k <-> row p in each strip's own columns
 *       |  |  |  strip 0  |  strip 1  |   work-groups 0 .. G-2: WX*VW columns
 *       |  |  |  (argmax  |           |   each, rows k+1 .. n-1:
 *       |  |  |  of k+1)  |           |   a[r, c] -= l_r * a[k, c],
 *       +--+--+-----------+-----------+   l_r = a[r, k] / pivot (swap applied)
 *   columns 0 .. k-1: the last work-group ("L part") swaps rows k and p and
 *   finishes column k-1 (its swap, its scaling by 1/pivot, then this swap).
 *
 * Strip 0 owns column k+1: after its update it searches that column and
 * writes piv[k+1].  Launch n-1 has no strips and only finishes column n-2.
 * Each work-item updates VW adjacent columns (vectors on CPUs, VW = 1 with
 * WX items along a row on GPUs); WY items share a strip's rows.
 *
 * Panel leaf (blocked LU): getf2_leaf factors the m x w panel a[c0:n, c0:c0+w]
 * (w <= LEAF_W) in one work-group, column by column, swapping rows inside the
 * panel only (the caller applies the interchanges to the other columns with
 * laswp).  Each work-item owns a contiguous block of rows and treats each
 * row's w entries as one vector; the pass that updates column j also finds
 * the next pivot candidate in column j+1, so a column costs one pass.
 *
 * WG (power of two) is the work-group size of the single-work-group kernels
 * (and WX * WY for pivot_step).  NO_PIVOT = 1 takes the diagonal as pivot
 * (teaching only: unstable).
 */
#include "common.h"

#ifndef WG
#define WG 256             /* work-group size of the single-work-group kernels */
#endif
#ifndef LEAF_W
#define LEAF_W 8           /* getf2_leaf: widest leaf, the vector width of its rows */
#endif
#ifndef VW
#define VW 1               /* pivot_step: adjacent columns per work-item */
#endif
#ifndef NV
#define NV 1               /* pivot_step: vectors of VW columns per work-item */
#endif
#ifndef WX
#define WX 32              /* pivot_step: work-items along a strip's columns */
#endif
#ifndef WY
#define WY 8               /* pivot_step: work-items sharing a strip's rows */
#endif
#ifndef NO_PIVOT
#define NO_PIVOT 0
#endif

/* The (largest value, lowest row) over the work-group's (best, best_row)
 * pairs; called by every item of one work-group, all get the row. */
int wg_reduce_argmax(const real best, const int best_row,
                     __local real *vals, __local int *rows)
{
    const int lid = get_local_id(1) * get_local_size(0) + get_local_id(0);
    vals[lid] = best;
    rows[lid] = best_row;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            const real v = vals[lid + s];
            const int r = rows[lid + s];
            if (v > vals[lid] || (v == vals[lid] && r < rows[lid])) {
                vals[lid] = v;
                rows[lid] = r;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int result = rows[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return result;
}

/* Row of the largest |a[r, col]| for r in [r0, n), lowest index on ties
 * (LAPACK's i?amax; r0 if the range is empty or all NaN).  Called by every
 * item of one work-group; all get it. */
int wg_argmax_abs(__global const real *a, const int lda, const int col,
                  const int r0, const int n,
                  __local real *vals, __local int *rows)
{
#if NO_PIVOT
    return r0;
#else
    const int lid = get_local_id(1) * get_local_size(0) + get_local_id(0);
    real best = -ONE;
    int best_row = r0;
    for (int r = r0 + lid; r < n; r += WG) {
        const real v = fabs(a[AT(r, col, lda)]);
        if (v > best) { best = v; best_row = r; }
    }
    return wg_reduce_argmax(best, best_row, vals, rows);
#endif
}

/* Multiplier a / pivot the way LAPACK forms it: by the reciprocal unless the
 * pivot is subnormal. */
real multiplier(const real x, const real pivot, const real inv)
{
    return (fabs(pivot) >= REAL_MIN) ? x * inv : x / pivot;
}

/* Row p of the largest |a[r, col]|, r in [r0, n): piv[step] = p, info if zero. */
void choose_pivot(__global const real *a, const int lda, const int n, const int col,
                  const int r0, __global int *piv, __global int *info,
                  __local real *vals, __local int *rows)
{
    const int p = wg_argmax_abs(a, lda, col, r0, n, vals, rows);
    if (get_local_id(0) == 0 && get_local_id(1) == 0) {
        piv[col] = p;
        if (a[AT(p, col, lda)] == ZERO && *info == 0)
            *info = col + 1;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void pivot_first(__global const real *a, const int lda, const int n,
                 __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    choose_pivot(a, lda, n, 0, 0, piv, info, vals, rows);
}

/* column k's entry of row r once rows k and p are interchanged */
#define COLK(r) a[AT((r) == p ? k : (r), k, lda)]

/* The last work-group of launch k (the "L part") interchanges rows k and p
 * in columns [0, k-1) and finishes column j = k-1: the interchange of step j
 * (rows j and q = piv[j]), the scaling of rows j+1.. by 1/pivot, then the
 * interchange of this step.  left_read runs before the barrier that
 * separates every read of an entry from its overwrite; it returns step j's
 * pivot, and work-item 0 also gets the final entries of rows k, p and q. */
#define SCALED(x) (pivot == ZERO ? (x) : multiplier((x), pivot, ONE / pivot))
real left_read(__global const real *a, const int lda, const int k, const int p,
               __global const int *piv, const int lid, real *special)
{
    if (k == 0)
        return ZERO;
    const int j = k - 1, q = piv[j];
    const real pivot = a[AT(q, j, lda)];
    if (lid == 0) {
        /* column j's entry at row r >= k after step j's interchange */
#define V1(r) a[AT((r) == q ? j : (r), j, lda)]
        special[0] = SCALED(V1(p));                  /* ends in row k */
        special[1] = SCALED(V1(k));                  /* ends in row p */
        special[2] = SCALED(a[AT(j, j, lda)]);       /* ends in row q */
#undef V1
    }
    return pivot;
}

void left_write(__global real *a, const int lda, const int n, const int k, const int p,
                __global const int *piv, const int lid, const real pivot,
                const real *special)
{
    if (p != k)
        for (int c = lid; c < k - 1; c += WG) {
            const real t = a[AT(k, c, lda)];
            a[AT(k, c, lda)] = a[AT(p, c, lda)];
            a[AT(p, c, lda)] = t;
        }
    if (k == 0)
        return;
    const int j = k - 1, q = piv[j];
    for (int r = k + lid; r < n; r += WG)
        if (r != k && r != p && r != q)              /* the special rows: item 0 */
            a[AT(r, j, lda)] = SCALED(a[AT(r, j, lda)]);
    if (lid == 0) {
        a[AT(j, j, lda)] = pivot;
        if (q != j && q != k && q != p)
            a[AT(q, j, lda)] = special[2];
        a[AT(k, j, lda)] = special[0];
        if (p != k)
            a[AT(p, j, lda)] = special[1];
    }
}
#undef SCALED

#define CW (VW * NV)        /* columns per work-item of pivot_step */

/* Rows k+1+y, k+1+y+WY, ... of this work-item's columns c0 .. c0+CW-1:
 * a[r, c] -= l_r * a[k, c].  `whole` (all CW columns inside the matrix) and
 * `by_inverse` (multiply by 1/pivot, LAPACK's choice unless the pivot is
 * subnormal) are literals at each call, so each case compiles to its own loop. */
inline __attribute__((always_inline))
void update_rows(__global real *a, const int lda, const int n, const int k, const int p,
                 const int c0, const real *tk, const real *tp, const int whole,
                 const int by_inverse, const real pivot, const real inv)
{
    for (int r = k + 1 + get_local_id(1); r < n; r += WY) {
        const real x = COLK(r);
        const real l = by_inverse ? x * inv : x / pivot;
        if (whole) {
            #pragma unroll
            for (int v = 0; v < NV; v++) {
                __global real *row = a + AT(r, c0 + v * VW, lda);
                const REALV(VW) old = (r == p) ? VLOAD(VW)(0, tk + v * VW) : VLOAD(VW)(0, row);
                VSTORE(VW)(old - l * VLOAD(VW)(0, tp + v * VW), 0, row);
            }
        } else {
            for (int q = 0; q < CW && c0 + q < n; q++) {
                const real old = (r == p) ? tk[q] : a[AT(r, c0 + q, lda)];
                a[AT(r, c0 + q, lda)] = old - l * tp[q];
            }
        }
    }
}

/* Strip work of launch k for this work-item's columns (tk, tp: rows k and p
 * of them, read before anything was written): row p moves to row k, every
 * row below loses l_r times it. */
void update_strip(__global real *a, const int lda, const int n, const int k, const int p,
                  const int c0, const real *tk, const real *tp)
{
    const int whole = c0 + CW <= n;
    if (get_local_id(1) == 0)
        for (int q = 0; q < CW && c0 + q < n; q++)
            a[AT(k, c0 + q, lda)] = tp[q];
    const real pivot = a[AT(p, k, lda)];
    if (pivot == ZERO)                /* the column below is zero: nothing to subtract */
        return;
    const real inv = ONE / pivot;
    if (fabs(pivot) >= REAL_MIN) {
        if (whole) update_rows(a, lda, n, k, p, c0, tk, tp, 1, 1, pivot, inv);
        else       update_rows(a, lda, n, k, p, c0, tk, tp, 0, 1, pivot, inv);
    } else {
        if (whole) update_rows(a, lda, n, k, p, c0, tk, tp, 1, 0, pivot, inv);
        else       update_rows(a, lda, n, k, p, c0, tk, tp, 0, 0, pivot, inv);
    }
}

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void pivot_step(__global real *a, const int lda, const int n, const int k,
                __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    const int lid = get_local_id(1) * WX + get_local_id(0);
    const int p = piv[k];
    const int left = get_group_id(0) == get_num_groups(0) - 1;
    const int c0 = k + 1 + (get_group_id(0) * WX + get_local_id(0)) * CW;
    real tk[CW], tp[CW];                             /* rows k and p of this item's columns */
    real pivot_j = ZERO, special[3];                 /* the L part's reads */
    if (left) {
        pivot_j = left_read(a, lda, k, p, piv, lid, special);
    } else {
        for (int q = 0; q < CW && c0 + q < n; q++) {
            tk[q] = a[AT(k, c0 + q, lda)];
            tp[q] = a[AT(p, c0 + q, lda)];
        }
    }
    /* Every entry read above is read before any is overwritten.  Every
     * work-group passes every barrier (PoCL mishandles barriers that only
     * some work-groups reach). */
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (left)
        left_write(a, lda, n, k, p, piv, lid, pivot_j, special);
    else
        update_strip(a, lda, n, k, p, c0, tk, tp);
    /* strip 0 owns column k+1: search it once its update is visible */
    barrier(CLK_GLOBAL_MEM_FENCE);
    const int owner = get_group_id(0) == 0 && k + 1 < n;
    const int next = wg_argmax_abs(a, lda, k + 1, owner ? k + 1 : n, n, vals, rows);
    if (owner && lid == 0) {
        piv[k + 1] = next;
        if (a[AT(next, k + 1, lda)] == ZERO && *info == 0)
            *info = k + 2;
    }
}

/* One column step of the leaf on this work-item's rows [rb, re): scales
 * column j of the rows below `col` and subtracts l_r times the pivot row
 * (now row col) from their columns right of j; returns (through best,
 * best_row) the largest |entry| of column j+1 among them.  `whole` (a
 * literal at each call: the panel is exactly LEAF_W wide) keeps each row's
 * segment in a vector, with the pivot row's in u; otherwise entries are
 * updated in place one by one (any width). */
inline __attribute__((always_inline))
void leaf_rows(__global real *a, const int lda, const int c0, const int w, const int j,
               const int rb, const int re, const real pivot, const real *u,
               const int whole, real *best, int *best_row)
{
    const int col = c0 + j;
    const real inv = ONE / pivot;
    for (int r = max(rb, col + 1); r < re; r++) {
        __global real *row = a + AT(r, c0, lda);
        real next;
        if (whole) {
            real s[LEAF_W];
            VSTORE(LEAF_W)(VLOAD(LEAF_W)(0, row), 0, s);
            const real l = pivot == ZERO ? s[j] : multiplier(s[j], pivot, inv);
            #pragma unroll
            for (int c = 0; c < LEAF_W; c++)
                s[c] = (c > j) ? s[c] - l * u[c] : (c == j ? l : s[c]);
            VSTORE(LEAF_W)(VLOAD(LEAF_W)(0, s), 0, row);
            next = s[min(j + 1, LEAF_W - 1)];
        } else {
            const real l = pivot == ZERO ? row[j] : multiplier(row[j], pivot, inv);
            row[j] = l;
            for (int c = j + 1; c < w; c++)
                row[c] -= l * a[AT(col, c0 + c, lda)];
            next = (j + 1 < w) ? row[j + 1] : ZERO;
        }
        if (j + 1 < w && fabs(next) > *best) {
            *best = fabs(next);
            *best_row = r;
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_leaf(__global real *a, const int lda, const int n, const int c0, const int w,
                __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    const int lid = get_local_id(0);
    const int per = (n - c0 + WG - 1) / WG;          /* contiguous rows per work-item */
    const int rb = min(n, c0 + lid * per), re = min(n, rb + per);
    const int whole = w == LEAF_W;
    int p = wg_argmax_abs(a, lda, c0, c0, n, vals, rows);
    for (int j = 0; j < w; j++) {
        const int col = c0 + j;
        const real pivot = a[AT(p, col, lda)];
        real u[LEAF_W];                              /* the pivot row's segment */
        if (whole)
            VSTORE(LEAF_W)(VLOAD(LEAF_W)(0, a + AT(p, c0, lda)), 0, u);
        barrier(CLK_GLOBAL_MEM_FENCE);               /* all read row p before the swap */
        if (lid == 0) {
            piv[col] = p;
            if (pivot == ZERO && *info == 0)
                *info = col + 1;
            if (p != col)
                for (int c = 0; c < w; c++) {
                    const real t = a[AT(p, c0 + c, lda)];
                    a[AT(p, c0 + c, lda)] = a[AT(col, c0 + c, lda)];
                    a[AT(col, c0 + c, lda)] = t;
                }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        real best = -ONE;
        int best_row = col + 1;
        if (whole)
            leaf_rows(a, lda, c0, w, j, rb, re, pivot, u, 1, &best, &best_row);
        else
            leaf_rows(a, lda, c0, w, j, rb, re, pivot, u, 0, &best, &best_row);
#if NO_PIVOT
        p = col + 1;
#else
        p = wg_reduce_argmax(best, best_row, vals, rows);
#endif
    }
}
