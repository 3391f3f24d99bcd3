/* lu.cl -- LU with partial pivoting: the per-pivot kernels and the panel leaf.
 *
 * A is n x n, row-major, leading dimension lda, overwritten by L (strictly
 * below the diagonal, unit diagonal implied) and U (on and above), as
 * LAPACK's ?getrf.  piv[k] = row interchanged with row k (0-based, global).
 * info (one int, 0 on entry) receives k+1 for the first exactly-zero pivot.
 *
 * Per-pivot step k (host loop over k, nothing read back between steps):
 *   pivot_swap_scale  one work-group: argmax |a[k:n, k]| -> piv[k], swap rows
 *                     k and piv[k] across all n columns, a[k+1:n, k] /= a[k, k]
 *   rank1_update      NDRange over the active (n-k-1)^2 submatrix only:
 *                     a[r, c] -= a[r, k] * a[k, c]
 *
 * Panel leaf (blocked LU): getf2_leaf factors the m x w panel a[c0:n, c0:c0+w]
 * in one work-group, column by column, swapping rows inside the panel only
 * (the caller applies the interchanges to the other columns with laswp).
 *
 * WG (power of two) is the work-group size of the single-work-group kernels.
 * NO_PIVOT = 1 takes the diagonal as pivot (teaching only: unstable).
 */
#include "common.h"

#ifndef WG
#define WG 256             /* work-group size of pivot_swap_scale and getf2_leaf */
#endif
#ifndef LEAF_W
#define LEAF_W 16          /* widest panel getf2_leaf handles */
#endif
#ifndef NO_PIVOT
#define NO_PIVOT 0
#endif

/* Row of the largest |a[r, col]| for r in [r0, n), lowest index on ties
 * (LAPACK's i?amax).  Called by every item of one work-group; all get it. */
int wg_argmax_abs(__global const real *a, const int lda, const int col,
                  const int r0, const int n,
                  __local real *vals, __local int *rows)
{
#if NO_PIVOT
    return r0;
#else
    const int lid = get_local_id(0);
    real best = -ONE;
    int best_row = n;
    for (int r = r0 + lid; r < n; r += WG) {
        const real v = fabs(a[AT(r, col, lda)]);
        if (v > best) { best = v; best_row = r; }
    }
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
    const int result = rows[0] < n ? rows[0] : r0;   /* a column of NaNs keeps the diagonal */
    barrier(CLK_LOCAL_MEM_FENCE);
    return result;
#endif
}

/* Multiplier a / pivot the way LAPACK forms it: by the reciprocal unless the
 * pivot is subnormal. */
real multiplier(const real x, const real pivot, const real inv)
{
    return (fabs(pivot) >= REAL_MIN) ? x * inv : x / pivot;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void pivot_swap_scale(__global real *a, const int lda, const int n, const int k,
                      __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    const int lid = get_local_id(0);
    const int p = wg_argmax_abs(a, lda, k, k, n, vals, rows);
    const real pivot = a[AT(p, k, lda)];
    barrier(CLK_GLOBAL_MEM_FENCE);     /* every item has read the pivot before the swap */
    if (lid == 0) {
        piv[k] = p;
        if (pivot == ZERO && *info == 0)
            *info = k + 1;
    }
    if (p != k) {
        for (int c = lid; c < n; c += WG) {
            const real t = a[AT(k, c, lda)];
            a[AT(k, c, lda)] = a[AT(p, c, lda)];
            a[AT(p, c, lda)] = t;
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (pivot == ZERO)
        return;
    const real inv = ONE / pivot;
    for (int r = k + 1 + lid; r < n; r += WG)
        a[AT(r, k, lda)] = multiplier(a[AT(r, k, lda)], pivot, inv);
}

__kernel void rank1_update(__global real *a, const int lda, const int n, const int k)
{
    const int c = k + 1 + get_global_id(0);
    const int r = k + 1 + get_global_id(1);
    if (r < n && c < n)
        a[AT(r, c, lda)] -= a[AT(r, k, lda)] * a[AT(k, c, lda)];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_leaf(__global real *a, const int lda, const int n, const int c0, const int w,
                __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    const int lid = get_local_id(0);
    for (int j = 0; j < w; j++) {
        const int col = c0 + j;
        const int p = wg_argmax_abs(a, lda, col, col, n, vals, rows);
        const real pivot = a[AT(p, col, lda)];
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) {
            piv[col] = p;
            if (pivot == ZERO && *info == 0)
                *info = col + 1;
        }
        if (p != col) {
            for (int c = lid; c < w; c += WG) {
                const real t = a[AT(col, c0 + c, lda)];
                a[AT(col, c0 + c, lda)] = a[AT(p, c0 + c, lda)];
                a[AT(p, c0 + c, lda)] = t;
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (pivot != ZERO) {
            const real inv = ONE / pivot;
            for (int r = col + 1 + lid; r < n; r += WG) {
                const real l = multiplier(a[AT(r, col, lda)], pivot, inv);
                a[AT(r, col, lda)] = l;
                for (int c = j + 1; c < w; c++)
                    a[AT(r, c0 + c, lda)] -= l * a[AT(col, c0 + c, lda)];
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}
