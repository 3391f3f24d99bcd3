/* pivoting.h -- the pieces of partial pivoting that the LU kernels share.
 *
 * ARGMAX_FOLD, argmax_scan, wg_reduce_argmax: the (largest value, lowest
 * row) over a work-group: the candidates folded to ARGMAX_SCAN entries, which
 * every item then scans (two or three barriers instead of a tree's log2(WG);
 * selects, not branches, and constant trip counts where count is a constant
 * of the caller, so the loads of a loop issue at once);
 * wg_argmax_stored: the same over candidates other work-groups stored;
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

#ifndef ARGMAX_SCAN
#define ARGMAX_SCAN 32     /* candidates every item scans after the fold */
#endif

/* (v, r) beats (best, best_row): a larger value, or the same value in a lower
 * row (values are never NaN: candidates start at -1 and only grow by >). */
#define BEATS(v, r, best, best_row) (((v) > (best)) | (((v) == (best)) & ((r) < (best_row))))

/* (best, best_row) becomes (v, r) where that beats it, by selects. */
#define KEEP_BEST(v, r, best, best_row) { \
        const real v_ = (v); \
        const int r_ = (r), take_ = BEATS(v_, r_, best, best_row); \
        best = take_ ? v_ : best; \
        best_row = take_ ? r_ : best_row; }

/* Items lid < into fold vals/rows[lid + i*into] for all i into entry lid, so
 * that the winner of [0, count) is that of [0, into).  The entries must be
 * visible to all; a barrier must follow.  Indices past count are clamped to
 * count - 1 (a repeated candidate changes no winner), so every load is
 * unconditional and they all issue before the first comparison.  A macro,
 * so that count and into are constants where the loop is unrolled. */
#define ARGMAX_FOLD(vals, rows, lid, count, into) \
    if ((lid) < (into)) { \
        real fold_best = (vals)[lid]; \
        int fold_row = (rows)[lid]; \
        _Pragma("unroll") for (int k_ = 1; k_ < ((count) + (into) - 1) / (into); k_++) { \
            const int i_ = min((lid) + k_ * (into), (count) - 1); \
            KEEP_BEST((vals)[i_], (rows)[i_], fold_best, fold_row) } \
        (vals)[lid] = fold_best; \
        (rows)[lid] = fold_row; }

/* The candidates every item scans after the folds. */
#define ARGMAX_SCANNED (WG < ARGMAX_SCAN ? WG : ARGMAX_SCAN)

/* The row of the (largest value, lowest row) over vals/rows[0, count),
 * scanned by every item (broadcast reads, no barrier: the caller orders any
 * later rewrite of the entries with one; count a constant of the caller, so
 * that the loops unroll and their loads issue at once); the value goes to
 * *value. */
inline int argmax_scan(__local const real *vals, __local const int *rows, const int count,
                       real *value)
{
    real best = vals[0];
    #pragma unroll
    for (int i = 1; i < count; i++)
        best = fmax(best, vals[i]);
    int best_row = INT_MAX;
    #pragma unroll
    for (int i = 0; i < count; i++)
        best_row = min(best_row, vals[i] == best ? rows[i] : INT_MAX);
    *value = best;
    return best_row;
}

/* The (largest value, lowest row) over the work-group's (best, best_row)
 * pairs; called by every item of one work-group, all get the row and the
 * value (*value).  vals and rows (WG entries) may be rewritten as soon as it
 * returns. */
int wg_reduce_argmax(const real best, const int best_row,
                     __local real *vals, __local int *rows, real *value)
{
    const int lid = get_local_id(1) * get_local_size(0) + get_local_id(0);
    vals[lid] = best;
    rows[lid] = best_row;
    barrier(CLK_LOCAL_MEM_FENCE);
#if WG > ARGMAX_SCAN
    ARGMAX_FOLD(vals, rows, lid, WG, ARGMAX_SCAN)
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    const int row = argmax_scan(vals, rows, ARGMAX_SCANNED, value);
    barrier(CLK_LOCAL_MEM_FENCE);
    return row;
}

/* The (largest value, lowest row) over candidates that work-groups left in
 * global memory, cand_val/cand_row[0, count); `none` if none is above -1 (as
 * with NaN).  Called by every item of one work-group, all get the row and the
 * value (*value); vals and rows (WG entries) as in wg_reduce_argmax. */
int wg_argmax_stored(volatile __global const real *cand_val,
                     volatile __global const int *cand_row, const int count, const int none,
                     __local real *vals, __local int *rows, real *value)
{
    const int lid = get_local_id(1) * get_local_size(0) + get_local_id(0);
    real best = -ONE;
    int best_row = none;
    for (int i = lid; i < count; i += WG)
        KEEP_BEST(cand_val[i], cand_row[i], best, best_row)
    return wg_reduce_argmax(best, best_row, vals, rows, value);
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
    real value;
    return wg_reduce_argmax(best, best_row, vals, rows, &value);
#endif
}

/* Multiplier a / pivot the way LAPACK forms it: by the reciprocal unless the
 * pivot is subnormal. */
real multiplier(const real x, const real pivot, const real inv)
{
    return (fabs(pivot) >= REAL_MIN) ? x * inv : x / pivot;
}

#endif
