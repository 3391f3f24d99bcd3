/* flat_tail.h -- where the blocked LU's flat tail (lu_flat.cl, lu_rows.cl with
 * MAP = 1) keeps its row maps and inverted diagonal blocks.
 *
 * maps holds two row maps of n entries each: the leaf at column c reads the
 * half LEAF_PARITY(c) (logical row r is memory row maps[half * n + r]) and
 * writes the map after its interchanges, for rows c.., to the other half,
 * which its trailing update and the next leaf read.  So the update of leaf c
 * may still read that map while the next leaf writes the other one (and the
 * leaf after next, which writes this half again, waits for it).  A leaf's
 * own first w rows are final in the half it wrote: FINAL_ROW.  linv holds,
 * for the leaf at column c, the strictly lower part of its L11^-1 at
 * LEAF_SLOT(c) (LW x LW, row-major).  Leaves start LW apart from j0, so that
 * neighbours differ in parity and slot.
 */
#ifndef OCLLA_FLAT_TAIL_H
#define OCLLA_FLAT_TAIL_H

#define LEAF_PARITY(c) (((c) / LW) & 1)
#define LEAF_SLOT(c) (((c) / LW) * LW * LW)
/* the memory row of logical row r of the tail from j0, once every leaf is done */
#define FINAL_ROW(maps, n, j0, r) \
    (maps)[(LEAF_PARITY((j0) + ((r) - (j0)) / LW * LW) ^ 1) * (n) + (r)]

#endif
