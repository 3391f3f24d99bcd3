/* rfp.cl -- conversions between full row-major storage and RFP (rfp.h).
 *
 *   pack:    arf[o] = a[r*ld + c]  for every offset o < n(n+1)/2, where (r, c)
 *            is the entry stored at o (one work-item per packed entry, so the
 *            writes are contiguous); `lower` selects the triangle that is read.
 *   unpack:  a[r*ld + c] = the stored entry for r >= c (`lower`) or r <= c,
 *            0 in the other triangle (one work-item per entry of a), as
 *            LAPACK's ?tfttr returns it.
 *
 * The triangle is an argument (1: lower, 'L'; 0: upper, 'U'), so one program
 * serves both.
 */
#include "common.h"
#include "rfp.h"

__kernel void pack(__global const real *a, const long a_off, const int ld, const int n,
                   __global real *arf, const long arf_off, const int lower)
{
    const size_t o = get_global_id(0);
    if (o >= (size_t)n * (n + 1) / 2)
        return;
    const int2 rc = lower ? rfp_entry_lower(o, n) : rfp_entry_upper(o, n);
    arf[arf_off + o] = a[a_off + AT(rc.x, rc.y, ld)];
}

__kernel void unpack(__global const real *arf, const long arf_off, const int n,
                     __global real *a, const long a_off, const int ld, const int lower)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r >= n || c >= n)
        return;
    const int stored = lower ? r >= c : r <= c;
    a[a_off + AT(r, c, ld)] = !stored ? ZERO
        : arf[arf_off + (lower ? rfp_lower(r, c, n) : rfp_upper(r, c, n))];
}
