/* util.cl -- small helpers shared by every routine.
 *
 * count_nonfinite: counts the NaN/Inf entries of a dense vector of n reals
 *   (atomically added into count[slot]; launch with any 1-D NDRange >= 1).
 * set_identity: writes the n x n identity into a (row-major, leading dim ld).
 */
#include "common.h"

__kernel void count_nonfinite(__global const real *x, const int n,
                              __global int *count, const int slot)
{
    int local_count = 0;
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        if (!isfinite(x[i]))
            local_count++;
    if (local_count)
        atomic_add(count + slot, local_count);
}

__kernel void set_identity(__global real *a, const int off, const int ld, const int n)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < n && c < n)
        a[off + AT(r, c, ld)] = (r == c) ? ONE : ZERO;
}
