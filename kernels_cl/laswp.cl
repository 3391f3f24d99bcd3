/* laswp.cl -- apply row interchanges to a set of columns (LAPACK ?laswp).
 *
 * For i = k1, k1+1, ..., k2-1 (FORWARD = 1) or k2-1, ..., k1 (FORWARD = 0):
 *     swap rows i and piv[i] of the selected columns.
 * piv holds 0-based row indices and lives on the device, so no host round
 * trip is needed between a pivot search and the swaps that follow it.
 *
 * The selected columns are ncols columns starting at c0, skipping a gap of
 * gap_width columns after the first gap_at of them (so the columns left and
 * right of a panel take one launch):
 *
 *     c0         c0+gap_at      +gap_width
 *     |  selected  |  skipped     |  selected ...   (ncols selected in all)
 *
 * Each work-item owns VW adjacent selected columns on one side of the gap
 * (VW-wide vectors on CPUs; VW = 1 with consecutive items on consecutive
 * columns on GPUs) and walks the pivots in order.
 */
#include "common.h"

#ifndef FORWARD
#define FORWARD 1
#endif
#ifndef VW
#define VW 1               /* adjacent columns per work-item */
#endif

__kernel void laswp(__global real *a, const int a_off, const int lda,
                    const int c0, const int ncols, const int gap_at, const int gap_width,
                    __global const int *piv, const int k1, const int k2)
{
    /* items [0, left_items) take the columns before the gap, the rest those after */
    const int left_items = (gap_at + VW - 1) / VW;
    const int item = get_global_id(0);
    int t = item * VW, end = gap_at, shift = 0;
    if (item >= left_items) {
        t = gap_at + (item - left_items) * VW;
        end = ncols;
        shift = gap_width;
    }
    if (t >= end)
        return;
    a += a_off + c0 + t + shift;
    const int whole = t + VW <= end;
#if FORWARD
    for (int i = k1; i < k2; i++) {
#else
    for (int i = k2 - 1; i >= k1; i--) {
#endif
        const int p = piv[i];
        if (p == i)
            continue;
        __global real *x = a + i * lda, *y = a + p * lda;
        if (whole) {
            const REALV(VW) u = VLOAD(VW)(0, x);
            VSTORE(VW)(VLOAD(VW)(0, y), 0, x);
            VSTORE(VW)(u, 0, y);
        } else {
            for (int v = 0; v < end - t; v++) {
                const real u = x[v];
                x[v] = y[v];
                y[v] = u;
            }
        }
    }
}
