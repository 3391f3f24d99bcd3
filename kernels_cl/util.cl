/* util.cl -- small helpers shared by every routine.
 *
 * count_nonfinite: counts the NaN/Inf entries of a dense vector of n reals
 *   (n a long: a matrix may hold 2^31 entries or more), atomically added
 *   into count[slot] (0 before); launch with a 1-D NDRange of 1 to INT_MAX
 *   items.  An item adds at most INT_MAX / (global size) of its entries, so
 *   the int total never wraps: exact up to that, a lower bound beyond, and
 *   never 0 when there is one.  runs = 1: item g reads the g-th of global-size
 *   contiguous runs (a CPU compiler vectorizes the run); runs = 0: the entries
 *   g, g + global size, ... (neighbouring GPU items read neighbouring entries).
 *   An entry is NaN or Inf when its exponent bits are all ones.
 * set_identity: writes the n x n identity into a (row-major, leading dim ld).
 * zero_other_triangle: zeroes the strictly upper (lower = 1) or strictly lower
 *   (lower = 0) part of the n x n row-major matrix at a + off: the triangle a
 *   factor does not use.
 */
#include "common.h"

#if PRECISION == 64
#define NONFINITE(v) ((as_ulong(v) & 0x7ff0000000000000UL) == 0x7ff0000000000000UL)
#else
#define NONFINITE(v) ((as_uint(v) & 0x7f800000u) == 0x7f800000u)
#endif

__kernel void count_nonfinite(__global const real *x, const long n,
                              __global int *count, const int slot, const int runs)
{
    const long g = get_global_id(0), items = get_global_size(0);
    int local_count = 0;
    if (runs) {
        const long per = (n + items - 1) / items, end = min(n, (g + 1) * per);
        for (long i = g * per; i < end; i++)
            local_count += NONFINITE(x[i]);
    } else {
        for (long i = g; i < n; i += items)
            local_count += NONFINITE(x[i]);
    }
    if (local_count)
        atomic_add(count + slot, min(local_count, (int)(INT_MAX / get_global_size(0))));
}

__kernel void set_identity(__global real *a, const long off, const int ld, const int n)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < n && c < n)
        a[off + AT(r, c, ld)] = (r == c) ? ONE : ZERO;
}

__kernel void zero_other_triangle(__global real *a, const long off, const int ld,
                                  const int n, const int lower)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < n && c < n && (lower ? c > r : c < r))
        a[off + AT(r, c, ld)] = ZERO;
}
