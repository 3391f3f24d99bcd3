/* rfp.cl -- conversions between full row-major storage and RFP (rfp.h).
 *
 *   pack:    arf[o] = a[r*ld + c]  for every offset o < n(n+1)/2, where (r, c)
 *            is the entry stored at o (one work-item per packed entry, so the
 *            writes are contiguous); `lower` selects the triangle that is read.
 *   unpack:  a[r*ld + c] = the stored entry for r >= c (`lower`) or r <= c,
 *            0 in the other triangle (one work-item per entry of a), as
 *            LAPACK's ?tfttr returns it.
 *   transpose: dst[o'] = src[o], o' the offset of (c, r) in the other triangle's
 *            layout where (r, c) is the entry stored at o of src (`lower`: src
 *            holds r >= c): a symmetric matrix between the two layouts, or a
 *            Cholesky factor L (A = L L^T) to U = L^T and back.  Work-groups of
 *            T x R items, each a T x T tile of src's picture (lda x nc, entry
 *            (p, q) at offset q*lda + p) read down its columns into local memory
 *            (tile: T x (T + 1) reals, row by row): T1's and T2's entries land
 *            down dst's columns too and are written as read, S's land across them
 *            (a row of S becomes a column) and are written from the tile read
 *            across, so a row of items reads and writes consecutive offsets
 *            either way.  `t2_too` = 0 (even n only): T2's entries, the trailing
 *            block of order n/2, which lies in both layouts at the same place of
 *            its block, are neither read nor written.
 *   transpose_triangle: dst[c*ldd + r] = src[r*lds + c] for the entries (r, c) of
 *            the n x n triangle of src (`lower`: r >= c, else r <= c), so that
 *            dst's other triangle holds it transposed; nothing else of either
 *            matrix is read or written (the packed Cholesky's T2 through an upper
 *            copy and back).  Work-groups as transpose's: a T x T tile of src read
 *            along its rows into local memory, written along dst's rows.
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

__kernel void transpose(__global const real *src, const long src_off, const int n,
                        __global real *dst, const long dst_off, const int lower,
                        const int t2_too, __local real *tile)
{
    const int e = 1 - (n & 1), lda = n + e, nc = (n + 1) / 2;
    const int t = get_local_size(0), rows = get_local_size(1);
    const int x = get_local_id(0), p0 = get_group_id(0) * t, q0 = get_group_id(1) * t;
    const int split = lower ? n - n / 2 : n / 2;          /* S: one index on each side */
    /* Is the tile wholly T2's (even n: its entries' rows p - n/2 (upper) or p (lower),
     * whichever lies in the picture's T2, at most their column q)? */
    const int last = p0 + t - 1 - (lower ? 0 : split);
    const int idle = !t2_too && (lower || p0 >= split) && last <= q0;
    for (int y = get_local_id(1); y < t; y += rows)
        if (!idle && p0 + x < lda && q0 + y < nc)
            tile[y * (t + 1) + x] = src[src_off + AT(q0 + y, p0 + x, lda)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int y = get_local_id(1); y < t && !idle; y += rows) {
        for (int across = 0; across < 2; across++) {
            const int p = p0 + (across ? y : x), q = q0 + (across ? x : y);
            if (p >= lda || q >= nc)
                continue;
            const int2 rc = lower ? rfp_entry_lower_at(p, q, n)
                                  : rfp_entry_upper_at(p, q, n);
            const int in_s = lower ? rc.y < split && rc.x >= split
                                   : rc.x < split && rc.y >= split;
            if (in_s == across && (t2_too || rc.x < split || rc.y < split))
                dst[dst_off + (lower ? rfp_upper(rc.y, rc.x, n) : rfp_lower(rc.y, rc.x, n))]
                    = across ? tile[x * (t + 1) + y] : tile[y * (t + 1) + x];
        }
    }
}

__kernel void transpose_triangle(__global const real *src, const long src_off, const int lds,
                                 __global real *dst, const long dst_off, const int ldd,
                                 const int n, const int lower, __local real *tile)
{
    const int t = get_local_size(0), rows = get_local_size(1), x = get_local_id(0);
    const int c0 = get_group_id(0) * t, r0 = get_group_id(1) * t;    /* src's tile */
    for (int y = get_local_id(1); y < t; y += rows) {
        const int r = r0 + y, c = c0 + x;
        if (r < n && c < n && (lower ? c <= r : c >= r))
            tile[y * (t + 1) + x] = src[src_off + AT(r, c, lds)];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int y = get_local_id(1); y < t; y += rows) {
        const int r = r0 + x, c = c0 + y;            /* src's (r, c) to dst's (c, r) */
        if (r < n && c < n && (lower ? c <= r : c >= r))
            dst[dst_off + AT(c, r, ldd)] = tile[x * (t + 1) + y];
    }
}
