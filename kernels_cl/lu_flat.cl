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
 *                 logical rows [c + w, n) and columns [col_begin, col_end):
 *                 the next leaf's columns first, the rest beside that leaf
 *                 (look-ahead: it touches neither those columns nor the map
 *                 the next leaf writes);
 *   flat_solve    at the end, every leaf's A12 becomes its U12 in place;
 *   gather_rows   and the tail's rows, all n columns, go to their logical
 *                 places (through a copy: dst row r - j0 = memory row
 *                 rowmap[r]), which is then copied back.
 *
 * No pass over a leaf's rows' other columns, and no interchange launch.
 * Storage as in common.h (row-major).
 *
 * flat_update's tile: TILE_M logical rows x TILE_N columns per work-group of
 * (TILE_N / WPT_N) x (TILE_M / WPT_M) items; item (x, y) owns rows y * WPT_M
 * + i and columns x + j * (TILE_N / WPT_N) (consecutive items on consecutive
 * columns).
 */
#include "common.h"

#ifndef LW
#define LW 16              /* widest leaf */
#endif
#include "flat_tail.h"
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
#define NX (TILE_N / WPT_N)
#define NY (TILE_M / WPT_M)
#define NT (NX * NY)

/* STMT for each entry (i, j) of this item's block of C that exists: its memory
 * row `row` and column `col`. */
#define EACH_ENTRY(STMT) \
    _Pragma("unroll") for (int i = 0; i < WPT_M; i++) { \
        const int row = home[ty * WPT_M + i]; \
        _Pragma("unroll") for (int j = 0; j < WPT_N; j++) { \
            const int col = c0 + tx + j * NX; \
            if (row >= 0 && col < col_end) { STMT } } }

__kernel __attribute__((reqd_work_group_size(NX, NY, 1)))
void flat_update(__global real *a, const int lda, const int n, const int c, const int w,
                 const int col_begin, const int col_end, __global const int *maps,
                 __global const real *linv_all)
{
    __global const int *rowmap = maps + (LEAF_PARITY(c) ^ 1) * n;     /* after the leaf */
    __global const real *linv = linv_all + LEAF_SLOT(c);
    __local real l21[TILE_M * LW], a12[LW * TILE_N], u12[LW * TILE_N], li[LW * LW];
    __local int home[TILE_M], top[LW];
    const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * NX + tx;
    const int r0 = c + w + get_group_id(1) * TILE_M, c0 = col_begin + get_group_id(0) * TILE_N;

    /* the memory rows of the tile's rows and of the leaf's first w rows; L11^-1 */
    for (int t = tid; t < TILE_M; t += NT)
        home[t] = r0 + t < n ? rowmap[r0 + t] : -1;
    for (int t = tid; t < LW; t += NT)
        top[t] = t < w ? rowmap[c + t] : 0;
    for (int t = tid; t < LW * LW; t += NT)
        li[t] = linv[t];
    barrier(CLK_LOCAL_MEM_FENCE);

    /* A12, L21 and this item's entries of C */
    for (int t = tid; t < LW * TILE_N; t += NT) {
        const int k = t / TILE_N, j = t % TILE_N;
        a12[t] = k < w && c0 + j < col_end ? a[AT(top[k], c0 + j, lda)] : ZERO;
    }
    for (int t = tid; t < TILE_M * LW; t += NT) {
        const int i = t / LW, k = t % LW;
        l21[t] = k < w && home[i] >= 0 ? a[AT(home[i], c + k, lda)] : ZERO;
    }
    real acc[WPT_M][WPT_N] = {{ZERO}};
    EACH_ENTRY(acc[i][j] = a[AT(row, col, lda)];)
    barrier(CLK_LOCAL_MEM_FENCE);

    /* U12 = L11^-1 A12 = A12 + (strictly lower part of L11^-1) A12 */
    for (int t = tid; t < LW * TILE_N; t += NT) {
        const int k = t / TILE_N, j = t % TILE_N;
        real s = a12[t];
        for (int q = 0; q < k; q++)
            s = fma(li[k * LW + q], a12[q * TILE_N + j], s);
        u12[t] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* C -= L21 U12 */
    #pragma unroll
    for (int k = 0; k < LW; k++)
        #pragma unroll
        for (int i = 0; i < WPT_M; i++)
            #pragma unroll
            for (int j = 0; j < WPT_N; j++)
                acc[i][j] = fma(-l21[(ty * WPT_M + i) * LW + k], u12[k * TILE_N + tx + j * NX],
                                acc[i][j]);
    EACH_ENTRY(a[AT(row, col, lda)] = acc[i][j];)
}

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
            v[k] = fma(-a[AT(rowmap[c + k], c + q, lda)], v[q], v[k]);
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
