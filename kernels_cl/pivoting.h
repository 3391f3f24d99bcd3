/* pivoting.h -- the pieces of partial pivoting that the LU kernels share.
 *
 * argmax_tree, wg_reduce_argmax: the (largest value, lowest row) over a
 * work-group;
 * wg_argmax_abs: LAPACK's i?amax of a column by one work-group;
 * multiplier: a multiplier the way LAPACK forms it.
 *
 * WG (power of two) is the work-group size of the kernels that call them;
 * NO_PIVOT = 1 takes the diagonal as pivot (teaching only: unstable).
 */
#ifndef OCLLA_PIVOTING_H
#define OCLLA_PIVOTING_H

#include "common.h"

#ifndef WG
#define WG 256             /* work-group size of the single-work-group kernels */
#endif
#ifndef NO_PIVOT
#define NO_PIVOT 0
#endif

/* The (largest value, lowest row) over vals/rows[0, count), count a power of
 * two; the entries must be visible to all (a barrier after they were
 * written).  Every item gets the row. */
int argmax_tree(__local real *vals, __local int *rows, const int lid, const int count)
{
    for (int s = count / 2; s > 0; s >>= 1) {
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

/* The (largest value, lowest row) over the work-group's (best, best_row)
 * pairs; called by every item of one work-group, all get the row. */
int wg_reduce_argmax(const real best, const int best_row,
                     __local real *vals, __local int *rows)
{
    const int lid = get_local_id(1) * get_local_size(0) + get_local_id(0);
    vals[lid] = best;
    rows[lid] = best_row;
    barrier(CLK_LOCAL_MEM_FENCE);
    return argmax_tree(vals, rows, lid, WG);
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

#endif
