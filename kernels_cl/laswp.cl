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
 * columns on GPUs) and applies the pivots CHUNK at a time: it loads the
 * chunk's rows i and the rows piv[i] outside the chunk all at once,
 * interchanges them in registers in order, and stores them back, so a chunk
 * costs one memory round trip instead of one per interchange (each
 * interchange's loads would otherwise wait for the stores before them;
 * interchange.h).  Any piv[i] in [0, n) is applied exactly as the sequence
 * of interchanges.
 */
#include "common.h"

#ifndef FORWARD
#define FORWARD 1
#endif
#ifndef VW
#define VW 1               /* adjacent columns per work-item */
#endif
#ifndef CHUNK
#define CHUNK 16           /* interchanges per round of loads */
#endif

#define IX_T REALV(VW)
#define IX_N CHUNK
#include "interchange.h"

/* the chunks [lo, hi) of [k1, k2) in the order of application */
#if FORWARD
#define EACH_CHUNK(lo, hi) \
    for (int lo = k1, hi = min(k2, k1 + CHUNK); lo < k2; lo = hi, hi = min(k2, hi + CHUNK))
#else
#define EACH_CHUNK(lo, hi) \
    for (int hi = k2, lo = max(k1, k2 - CHUNK); hi > k1; hi = lo, lo = max(k1, lo - CHUNK))
#endif

/* the item's VW entries of a row (x), or the first `cols` of them where the
 * item's columns end before VW (whole = 0) */
REALV(VW) load_row(__global const real *x, const int whole, const int cols)
{
    if (whole)
        return VLOAD(VW)(0, x);
    LANES(VW) v;
    for (int k = 0; k < VW; k++)
        v.s[k] = k < cols ? x[k] : ZERO;
    return v.v;
}

void store_row(const REALV(VW) value, __global real *x, const int whole, const int cols)
{
    if (whole) {
        VSTORE(VW)(value, 0, x);
        return;
    }
    LANES(VW) v;
    v.v = value;
    for (int k = 0; k < cols; k++)
        x[k] = v.s[k];
}

__kernel void laswp(__global real *a, const long a_off, const int lda,
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
    const int whole = t + VW <= end, cols = end - t;
    EACH_CHUNK(lo, hi) {
        /* the chunk: rows lo + c, c < count, and their pivots */
        const int count = hi - lo;
        int p[CHUNK];
        REALV(VW) u[CHUNK], far[CHUNK];
        #pragma unroll
        for (int c = 0; c < CHUNK; c++)
            if (c < count) {
                p[c] = piv[lo + c];
                u[c] = load_row(a + AT(lo + c, 0, lda), whole, cols);
                if (IX_OUTSIDE(p[c], lo, count))
                    far[c] = load_row(a + AT(p[c], 0, lda), whole, cols);
            }
        interchange_chunk(u, far, p, count, lo);
        /* back to memory, in order: a row named twice ends with its last value */
        #pragma unroll
        IN_ORDER(c)
            if (c < count) {
                store_row(u[c], a + AT(lo + c, 0, lda), whole, cols);
                if (IX_OUTSIDE(p[c], lo, count))
                    store_row(far[c], a + AT(p[c], 0, lda), whole, cols);
            }
    }
}

/* Rows [0, n) of the ncols columns at a (leading dimension lda) as the interchanges
 * (i, piv[i]), i = 0 .. n-1 (FORWARD: in that order, else reversed; every piv[i] below
 * n <= 65536) leave them, for the few columns of a solve: one work-group.  The
 * interchanges are first composed into a permutation of the row indices in local
 * memory (perm[r]: the row whose entries row r ends with, n ushorts), walked by one
 * work-item there: a local round trip per interchange instead of laswp's global one
 * per CHUNK; the pivots come to local memory (pv, one int per work-item) a work-group
 * at a time.  Then each entry moves once, through w (n x ncols, row stride ncols). */
__kernel void permute_rows(__global real *a, const long a_off, const int lda, const int ncols,
                           const int n, __global const int *piv, __global real *w,
                           __local ushort *perm, __local int *pv)
{
    const int lid = get_local_id(0), items = get_local_size(0);
    a += a_off;
    for (int r = lid; r < n; r += items)
        perm[r] = (ushort)r;
    for (int done = 0; done < n; done += items) {
        const int count = min(items, n - done);
#if FORWARD
        const int first = done;                /* this round: pivots first .. + count */
#else
        const int first = n - done - count;
#endif
        barrier(CLK_LOCAL_MEM_FENCE);          /* perm written, pv read */
        if (lid < count)
            pv[lid] = piv[first + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
#if FORWARD
            for (int c = 0; c < count; c++) {
#else
            for (int c = count - 1; c >= 0; c--) {
#endif
                const int i = first + c, p = pv[c];
                const ushort held = perm[i];
                perm[i] = perm[p];
                perm[p] = held;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < n * ncols; e += items)
        w[e] = a[AT(perm[e / ncols], e % ncols, lda)];
    barrier(CLK_GLOBAL_MEM_FENCE);        /* every entry read before any is written */
    for (int e = lid; e < n * ncols; e += items)
        a[AT(e / ncols, e % ncols, lda)] = w[e];
}
