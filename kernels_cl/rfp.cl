/* rfp.cl -- conversions between full row-major storage and RFP (rfp.h).
 *
 *   pack:    arf[o] = a[r*ld + c]  for every offset o < n(n+1)/2, where (r, c)
 *            is the entry stored at o (one work-item per packed entry, so the
 *            writes are contiguous); LOWER selects the triangle that is read.
 *   unpack:  a[r*ld + c] = the stored entry for r >= c (LOWER) or r <= c,
 *            0 in the other triangle (one work-item per entry of a), as
 *            LAPACK's ?tfttr returns it.
 */
#include "common.h"
#include "rfp.h"

#ifndef LOWER
#define LOWER 1            /* 1: lower triangle ('L'), 0: upper ('U') */
#endif

#if LOWER
#define RFP_ENTRY(o, n) rfp_entry_lower((o), (n))
#define RFP_OFFSET(r, c, n) rfp_lower((r), (c), (n))
#define STORED(r, c) ((r) >= (c))
#else
#define RFP_ENTRY(o, n) rfp_entry_upper((o), (n))
#define RFP_OFFSET(r, c, n) rfp_upper((r), (c), (n))
#define STORED(r, c) ((r) <= (c))
#endif

__kernel void pack(__global const real *a, const long a_off, const int ld, const int n,
                   __global real *arf, const long arf_off)
{
    const size_t o = get_global_id(0);
    if (o >= (size_t)n * (n + 1) / 2)
        return;
    const int2 rc = RFP_ENTRY(o, n);
    arf[arf_off + o] = a[a_off + AT(rc.x, rc.y, ld)];
}

__kernel void unpack(__global const real *arf, const long arf_off, const int n,
                     __global real *a, const long a_off, const int ld)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r >= n || c >= n)
        return;
    a[a_off + AT(r, c, ld)] = STORED(r, c) ? arf[arf_off + RFP_OFFSET(r, c, n)] : ZERO;
}
