/* lu_inplace.cl -- the in-place per-pivot LU with partial pivoting (method="pivot",
 * variant="inplace"), whose launches the blocked LU also uses for panels (PANEL="columns").
 *
 * A is n x n, row-major, leading dimension lda, overwritten by L (strictly
 * below the diagonal, unit diagonal implied) and U (on and above), as
 * LAPACK's ?getrf.  piv[k] = row interchanged with row k (0-based, global;
 * the host fills piv with 0, 1, ..., n-1 first).  info (one int, 0 on entry)
 * receives k+1 for the first exactly-zero pivot.
 *
 * pivot_first (argmax of column 0, interchange, scaling), then
 * one launch of pivot_step per pivot k = 0 .. n-2.  Nothing is read back
 * between launches.  Launch k finds rows k and p = piv[k] interchanged and
 * column k scaled (the multipliers l_r), and
 *
 *          k  k+1 ...          c_end
 *       +--+--------+--------+
 *    k  |  | row k (read only)       work-group (i, j): WX x WY items own
 *       |l |  (j=0) |        |       WX*VW*NV columns of strip i and rows
 *       |  | strip 0| strip 1|       k+1+j*RB .. +RB: a[r, c] -= l_r a[k, c]
 *       |  |        |        |
 *       +--+--------+--------+
 *
 * The work-groups of strip 0 also leave their rows' best candidate for
 * pivot k+1 in part_val/part_row.  The last work-group to finish (an atomic
 * counter, reset to 0 afterwards: no work-group waits for another) reduces
 * them, interchanges rows k+1 and p' in columns [s0, s1) and scales column
 * k+1: the precondition of launch k+1.
 * The per-pivot LU updates and swaps all columns (c_end = n, [0, n)); the
 * blocked LU's panel factorization uses the same launches on its columns.
 * Each work-item updates NV vectors of VW adjacent columns (vectors on CPUs,
 * VW = 1 with WX items along a row on GPUs).
 *
 * WG (power of two) is the work-group size (WX * WY for pivot_step).
 * NO_PIVOT = 1 takes the diagonal as pivot (teaching only: unstable).
 */
#include "common.h"

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
#ifndef RB
#define RB 256             /* pivot_step: rows per work-group */
#endif
#ifndef UNR
#define UNR 4              /* pivot_step: rows a work-item loads before it stores */
#endif

#include "pivoting.h"
#include "arrival.h"

/* Interchange rows col and p in columns [s0, s1); piv[col] = p, info if the
 * pivot is zero (column col is scaled later: see pivot_step).  Done by one
 * work-group; `act` = 0 makes it a no-op that still passes the barrier (every
 * work-group passes every barrier: PoCL mishandles barriers that only some
 * work-groups reach).  The matrix is read through a volatile pointer: in a
 * fused pivot_step the entries were written by other work-groups of the same
 * launch, and must not come from a stale cache. */
void finish_column(volatile __global real *a, const int lda, const int n, const int col,
                   const int p, const int s0, const int s1, const int act,
                   __global int *piv, __global int *info, const int lid)
{
    const real pivot = act ? a[AT(p, col, lda)] : ONE;
    barrier(CLK_GLOBAL_MEM_FENCE);                   /* all read the pivot first */
    if (act && lid == 0) {
        piv[col] = p;
        if (pivot == ZERO && *info == 0)
            *info = col + 1;
    }
    if (act && p != col)
        for (int c = s0 + lid; c < s1; c += WG) {
            const real t = a[AT(col, c, lda)];
            a[AT(col, c, lda)] = a[AT(p, c, lda)];
            a[AT(p, c, lda)] = t;
        }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void pivot_first(__global real *a, const int lda, const int n, const int col,
                 const int s0, const int s1, __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    const int p = wg_argmax_abs(a, lda, col, col, n, vals, rows);
    finish_column(a, lda, n, col, p, s0, s1, 1, piv, info, get_local_id(0));
}

/* Reduce the partial candidates of column col (rows, lowest on ties) and
 * finish the column (`act` = 0: pass the barriers only). */
void finish_pivot(__global real *a, const int lda, const int n, const int col,
                  const int s0, const int s1, const int act, const int parts,
                  __global int *piv, __global int *info,
                  volatile __global real *part_val, volatile __global int *part_row,
                  __local real *vals, __local int *rows, const int lid)
{
    real best = -ONE;
    int best_row = col;
    for (int i = lid; i < parts; i += WG) {
        const real v = part_val[i];
        const int r = part_row[i];
        if (v > best || (v == best && r < best_row)) { best = v; best_row = r; }
    }
#if NO_PIVOT
    const int p = col;
#else
    real value;
    const int p = wg_reduce_argmax(best, best_row, vals, rows, &value);
#endif
    finish_column(a, lda, n, col, p, s0, s1, act, piv, info, lid);
}

#define CW (VW * NV)        /* columns per work-item of pivot_step */

/* l = x / pivot the way LAPACK forms multipliers (x itself if the pivot is 0:
 * then the whole column below it is 0 and LAPACK leaves it). */
real scaled(const real x, const real pivot)
{
    return pivot == ZERO ? x : multiplier(x, pivot, ONE / pivot);
}

/* Scale columns [j0, j1) below their diagonals: the multipliers pivot_step
 * leaves unscaled after the last launch of a panel (or of the matrix). */
__kernel void scale_tail(__global real *a, const int lda, const int n, const int j0,
                         const int j1)
{
    const int r = j0 + 1 + get_global_id(0);
    for (int j = j0; j < j1; j++)
        if (r > j && r < n)
            a[AT(r, j, lda)] = scaled(a[AT(r, j, lda)], a[AT(j, j, lda)]);
}

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void pivot_step(__global real *a, const int lda, const int n, const int k, const int c_begin,
                const int c_end,
                const int s0, const int s1, __global int *piv, __global int *info,
                __global real *part_val, __global int *part_row, __global int *counter)
{
    __local real vals[WG];
    __local int rows[WG];
    __local int flag;
    const int lid = get_local_id(1) * WX + get_local_id(0);
    const int c0 = k + 1 + (get_group_id(0) * WX + get_local_id(0)) * CW;
    const int rb = get_group_id(1);
    const int r0 = k + 1 + rb * RB, r1 = min(n, r0 + RB);

    /* rank-1 update of rows [r0, r1) x this item's columns [c0, min(c0 + CW, c_end)),
     * UNR rows at a time: all their loads are issued before their stores.
     * Column k is read unscaled (every work-group forms l_r itself) and
     * scaled by the next launch, when nobody reads it any more. */
    const real pivot = a[AT(k, k, lda)];
    const real inv = ONE / pivot;
    const int by_inverse = fabs(pivot) >= REAL_MIN;
#define LMUL(x) (pivot == ZERO ? (x) : (by_inverse ? (x) * inv : (x) / pivot))
    if (c0 + CW <= c_end) {
        REALV(VW) u[NV];
        #pragma unroll
        for (int v = 0; v < NV; v++)
            u[v] = VLOAD(VW)(0, a + AT(k, c0 + v * VW, lda));
        for (int r = r0 + get_local_id(1); r < r1; r += WY * UNR) {
            real l[UNR];
            REALV(VW) x[UNR][NV];
            #pragma unroll
            for (int i = 0; i < UNR; i++) {
                const int ri = min(r + i * WY, r1 - 1);      /* past the block: reload, no store */
                l[i] = LMUL(a[AT(ri, k, lda)]);
                #pragma unroll
                for (int v = 0; v < NV; v++)
                    x[i][v] = VLOAD(VW)(0, a + AT(ri, c0 + v * VW, lda));
            }
            #pragma unroll
            for (int i = 0; i < UNR; i++)
                if (r + i * WY < r1) {
                    #pragma unroll
                    for (int v = 0; v < NV; v++)
                        VSTORE(VW)(x[i][v] - l[i] * u[v], 0, a + AT(r + i * WY, c0 + v * VW, lda));
                }
        }
    } else {
        for (int r = r0 + get_local_id(1); r < r1; r += WY) {
            const real l = LMUL(a[AT(r, k, lda)]);
            for (int c = c0; c < c_end; c++)
                a[AT(r, c, lda)] -= l * a[AT(k, c, lda)];
        }
    }

#undef LMUL
    /* strip 0 scales column k-1 in its rows (and work-group (0, 0) row k) */
    if (get_group_id(0) == 0 && k - 1 >= c_begin) {
        const real pk = a[AT(k - 1, k - 1, lda)];
        for (int r = r0 + lid; r < r1; r += WG)
            a[AT(r, k - 1, lda)] = scaled(a[AT(r, k - 1, lda)], pk);
        if (rb == 0 && lid == 0)
            a[AT(k, k - 1, lda)] = scaled(a[AT(k, k - 1, lda)], pk);
    }

    /* the work-groups of strip 0 own column k+1: their rows' best candidate */
    barrier(CLK_GLOBAL_MEM_FENCE);
    const int own = get_group_id(0) == 0 && k + 1 < c_end;
    real best = -ONE;
    int best_row = r0;
    if (own)
        for (int r = r0 + lid; r < r1; r += WG) {
            const real v = fabs(a[AT(r, k + 1, lda)]);
            if (v > best) { best = v; best_row = r; }
        }
    real value;
    const int cand = wg_reduce_argmax(best, best_row, vals, rows, &value);
    if (own && lid == 0) {
        part_val[rb] = value;
        part_row[rb] = cand;
    }

    /* the last work-group to finish chooses pivot k+1 and finishes its column */
    const int last = last_to_arrive(counter, get_num_groups(0) * get_num_groups(1), 1, lid,
                                    &flag);
    const int fin = last && k + 1 < c_end;
    finish_pivot(a, lda, n, k + 1, s0, s1, fin, fin ? get_num_groups(1) : 0, piv, info,
                 part_val, part_row, vals, rows, lid);
}
