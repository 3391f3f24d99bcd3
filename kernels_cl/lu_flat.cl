/* lu_flat.cl -- the blocked LU's flat tail with its row interchanges deferred.
 *
 * Once the trailing matrix A[j0:n, j0:n] is one panel (FLAT_N), its leaves
 * (lu_rows.cl getf2_rows with MAP = 1) leave every row where it is in memory
 * and keep instead a row map: logical row r of the tail is memory row
 * rowmap[r] (flat_tail.h: two maps, one per parity of leaf).  A leaf's
 * interchanges then only permute the map, and the rows above each leaf right
 * of it (A12, LW rows) stay unsolved until the end:
 *
 *   flat_update   after the leaf at column c (w wide, w <= LW): with
 *                 U12 = L11^-1 A12 formed by each work-group for its own
 *                 columns (the leaf's L11^-1 from linv), A22 -= L21 U12 over
 *                 logical rows [c + w, n) and columns [col_begin, col_end)
 *                 (or, with the lu parameter FLAT_AHEAD, inside the next
 *                 leaf's launch: lu_rows.cl PREV);
 *   flat_solve    at the end, every leaf's A12 becomes its U12 in place;
 *   gather_rows   and the tail's rows, all n columns, go to their logical
 *                 places (through a copy: dst row r - j0 = memory row
 *                 rowmap[r]), which is then copied back.
 *
 * No pass over a leaf's rows' other columns, and no interchange launch.
 * Storage as in common.h (row-major).  flat_update's tiles: flat_update.h.
 *
 * UPDATE = 1 builds flat_update alone (with its tile's macros), UPDATE = 0
 * flat_solve and gather_rows (LW alone): where FLAT_AHEAD puts every update
 * into the next leaf's launch, the update's program is never built.
 */
#include "common.h"

#ifndef LW
#define LW 16              /* widest leaf */
#endif
#include "flat_tail.h"
#ifndef UPDATE
#define UPDATE 0           /* 1: the program holds flat_update, 0: flat_solve, gather_rows */
#endif

#if UPDATE
#ifndef TILE_M
#define TILE_M 32
#endif
#ifndef TILE_N
#define TILE_N 32
#endif
#ifndef WPT_M
#define WPT_M 2
#endif
#ifndef WPT_N
#define WPT_N 2
#endif
#include "flat_update.h"

/* One tile per work-group of (NX, NY) items. */
__kernel __attribute__((reqd_work_group_size(NX, NY, 1)))
void flat_update(__global real *a, const int lda, const int n, const int c, const int w,
                 const int col_begin, const int col_end, __global const int *maps,
                 __global const real *linv_all)
{
    __local real l21[TILE_M * LW], a12[LW * U12_COLS], u12[LW * U12_COLS], li[LW * LW];
    __local int home[TILE_M], top[LW];
    flat_update_tile(a, lda, n, c, w, col_begin, col_end, maps, linv_all, get_group_id(0),
                     get_group_id(1), get_local_id(0), get_local_id(1), l21, a12, u12, li,
                     home, top);
}

#else

/* Leaf b (columns [j0 + b LW, + LW); every leaf but the last is LW wide) turns
 * its A12 into U12 for column j0 + b LW + LW + get_global_id(0): one item per
 * column and leaf (the column's LW entries in registers, L11 read from A). */
__kernel void flat_solve(__global real *a, const int lda, const int n, const int j0,
                         __global const int *maps)
{
    const int b = get_global_id(1), c = j0 + b * LW, col = c + LW + get_global_id(0);
    if (col >= n)
        return;
    __global const int *rowmap = maps + (LEAF_PARITY(c) ^ 1) * n;   /* final for its rows */
    real v[LW];
    #pragma unroll
    for (int k = 0; k < LW; k++)
        v[k] = a[AT(rowmap[c + k], col, lda)];
    #pragma unroll
    for (int k = 1; k < LW; k++)
        #pragma unroll
        for (int q = 0; q < k; q++)
            v[k] = MUL_ADD(-a[AT(rowmap[c + k], c + q, lda)], v[q], v[k]);
    #pragma unroll
    for (int k = 0; k < LW; k++)
        a[AT(rowmap[c + k], col, lda)] = v[k];
}

/* dst row r - j0 (columns [0, cols)) = memory row FINAL_ROW(r) of a, for the
 * tail's rows r in [j0, n). */
__kernel void gather_rows(__global const real *a, const int lda, const int j0, const int n,
                          const int cols, __global const int *maps, __global real *dst)
{
    const int col = get_global_id(0), r = j0 + get_global_id(1);
    if (col < cols && r < n)
        dst[AT(r - j0, col, cols)] = a[AT(FINAL_ROW(maps, n, j0, r), col, lda)];
}
#endif
