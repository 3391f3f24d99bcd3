/* views.cl -- device array arguments that are views: gather them into a dense
 * work array, scatter results back into the view's own elements, and copy a
 * device pivot vector with its entries checked.
 *
 * A view (a pyopencl array with an offset or strides, both in elements here)
 * of rows x cols entries addresses entry (r, c) at
 *
 *     base[off + r*rs + c*cs]          (a 1-D view: cols = 1, rs its stride)
 *
 * The strides may be negative (a reversed slice) or larger than a row (a
 * sub-block, every k-th row or column); a transpose swaps rs and cs.  The
 * dense array is the same entries row-major from offset 0: dense[r*cols + c].
 * Entry i of the dense array is (r, c) = (i / cols, i % cols).  For example
 * the view a[1:3, ::2] of a 4 x 5 row-major a (off = 5, rs = 5, cs = 2):
 *
 *     base:  . . . . .      dense:  d0 d1 d2
 *            d0 . d1 . d2           d3 d4 d5
 *            d3 . d4 . d5
 *            . . . . .
 *
 * scatter writes exactly the view's rows*cols entries and nothing else of
 * the buffer; the host never scatters into a view whose entries overlap
 * (a stride of 0, or strides that interleave), where the result would
 * depend on the order of the writes.
 *
 * Every index is 64-bit (long/ulong): a view may address a buffer larger
 * than 2^31 entries.  Each kernel runs over any 1-D NDRange, item g taking
 * the entries g, g + global size, ... or, for gather and scatter with
 * runs = 1 (CPUs: their items run as loops), the g-th of global-size
 * contiguous runs of dense entries, the base index stepped along the run
 * instead of divided out per entry.
 */
#include "common.h"

/* element index in the base buffer of entry i (row-major) of the view */
long view_index(const ulong i, const ulong cols, const long off, const long rs, const long cs)
{
    return off + (long)(i / cols) * rs + (long)(i % cols) * cs;
}

/* MOVE(i, at) for every entry of this item: i its dense index, at its base index
 * (runs: one contiguous run, at stepped by cs and by rs at a row's end) */
#define FOR_ITEM_ENTRIES(MOVE)                                                  \
    if (runs) {                                                                 \
        const ulong items = get_global_size(0), per = (size + items - 1) / items; \
        const ulong first = get_global_id(0) * per, end = min(size, first + per); \
        ulong c = first % cols;                                                 \
        long at = view_index(first, cols, off, rs, cs);                         \
        for (ulong i = first; i < end; i++) {                                   \
            MOVE(i, at);                                                        \
            if (++c == cols) {                                                  \
                c = 0;                                                          \
                at += rs - (long)(cols - 1) * cs;                               \
            } else {                                                            \
                at += cs;                                                       \
            }                                                                   \
        }                                                                       \
    } else {                                                                    \
        for (ulong i = get_global_id(0); i < size; i += get_global_size(0))     \
            MOVE(i, view_index(i, cols, off, rs, cs));                          \
    }

/* dense[i] := view entry i, i < size */
__kernel void gather(__global const real *base, const long off, const long rs, const long cs,
                     const ulong cols, const ulong size, __global real *dense, const int runs)
{
#define TO_DENSE(i, at) dense[i] = base[at]
    FOR_ITEM_ENTRIES(TO_DENSE)
}

/* view entry i := dense[i], i < size (nothing else of base is written) */
__kernel void scatter(__global const real *dense, __global real *base, const long off,
                      const long rs, const long cs, const ulong cols, const ulong size,
                      const int runs)
{
#define TO_VIEW(i, at) base[at] = dense[i]
    FOR_ITEM_ENTRIES(TO_VIEW)
}

/* The pivot vector piv (int, entry i at piv[off + i*stride], i < n) copied
 * into dense[i], each entry outside [0, n) replaced by i -- the interchange
 * of row i with itself, so that laswp never addresses a row outside the
 * matrix -- and counted into status[slot] (the host raises for any). */
__kernel void check_pivots(__global const int *piv, const long off, const long stride,
                           const ulong n, __global int *dense, __global int *status,
                           const int slot)
{
    int bad = 0;
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
        const int p = piv[off + (long)i * stride];
        const int valid = p >= 0 && (ulong)p < n;
        dense[i] = valid ? p : (int)i;
        bad += !valid;
    }
    if (bad)
        atomic_add(status + slot, bad);
}
