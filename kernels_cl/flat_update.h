/* flat_update.h -- the flat tail's trailing update (lu_flat.cl) one tile at a
 * time, for the kernels that run it: lu_flat.cl flat_update (one tile per
 * work-group) and lu_rows.cl getf2_rows with PREV (every work-group but the
 * leaf's).
 *
 * After the leaf at column c (w wide, w <= LW) with the row map it wrote
 * (flat_tail.h): U12 = L11^-1 A12 (the leaf's first w logical rows,
 * columns [col_begin, col_end)) and A22 -= L21 U12 over logical rows
 * [c + w, n).  A tile is TILE_M logical rows x TILE_N columns, updated by
 * NX x NY items: item (tx, ty) owns rows ty * WPT_M + i and columns tx + j *
 * NX of it (consecutive items on consecutive columns).  U12 is formed by
 * every work-group for its own columns; nothing but A22 is written.
 */
#ifndef OCLLA_FLAT_UPDATE_H
#define OCLLA_FLAT_UPDATE_H

#include "flat_tail.h"

#define NX (TILE_N / WPT_N)
#define NY (TILE_M / WPT_M)
#define NT (NX * NY)
#define U12_COLS (TILE_N > LW ? TILE_N : LW)   /* a12 and u12 hold LW x U12_COLS */

/* u12 = L11^-1 a12 (LW x cols, row-major) = a12 + (strictly lower part of
 * L11^-1, li: LW x LW) a12, by items tid of nt; a barrier must follow. */
void form_u12(__local const real *li, __local const real *a12, __local real *u12,
              const int cols, const int tid, const int nt)
{
    for (int t = tid; t < LW * cols; t += nt) {
        const int k = t / cols, j = t % cols;
        real s = a12[t];
        for (int q = 0; q < k; q++)
            s = MUL_ADD(li[k * LW + q], a12[q * cols + j], s);
        u12[t] = s;
    }
}

/* STMT for each entry (i, j) of this item's block of the tile that exists: its
 * memory row `row` and column `col`. */
#define EACH_ENTRY(STMT) \
    _Pragma("unroll") for (int i = 0; i < WPT_M; i++) { \
        const int row = home[ty * WPT_M + i]; \
        _Pragma("unroll") for (int j = 0; j < WPT_N; j++) { \
            const int col = c0 + tx + j * NX; \
            if (row >= 0 && col < col_end) { STMT } } }

/* Tile (gx, gy) of the update of the leaf at column c (w wide) on columns
 * [col_begin, col_end): rows c + w + gy * TILE_M.., columns col_begin + gx *
 * TILE_N..  Local memory: l21 TILE_M x LW, a12 and u12 LW x U12_COLS, li LW x
 * LW, home TILE_M, top LW. */
void flat_update_tile(__global real *a, const int lda, const int n, const int c, const int w,
                      const int col_begin, const int col_end, __global const int *maps,
                      __global const real *linv_all, const int gx, const int gy,
                      const int tx, const int ty, __local real *l21, __local real *a12,
                      __local real *u12, __local real *li, __local int *home,
                      __local int *top)
{
    __global const int *rowmap = maps + (LEAF_PARITY(c) ^ 1) * n;     /* after the leaf */
    __global const real *linv = linv_all + LEAF_SLOT(c);
    const int tid = ty * NX + tx;
    const int r0 = c + w + gy * TILE_M, c0 = col_begin + gx * TILE_N;

    /* the memory rows of the tile's rows and of the leaf's first w rows; L11^-1 */
    for (int t = tid; t < TILE_M; t += NT)
        home[t] = r0 + t < n ? rowmap[r0 + t] : -1;
    for (int t = tid; t < LW; t += NT)
        top[t] = t < w ? rowmap[c + t] : 0;
    for (int t = tid; t < LW * LW; t += NT)
        li[t] = linv[t];
    barrier(CLK_LOCAL_MEM_FENCE);

    /* A12, L21 and this item's entries of the tile */
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

    form_u12(li, a12, u12, TILE_N, tid, NT);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* tile -= L21 U12 */
    #pragma unroll
    for (int k = 0; k < LW; k++)
        #pragma unroll
        for (int i = 0; i < WPT_M; i++)
            #pragma unroll
            for (int j = 0; j < WPT_N; j++)
                acc[i][j] = MUL_ADD(-l21[(ty * WPT_M + i) * LW + k], u12[k * TILE_N + tx + j * NX],
                                acc[i][j]);
    EACH_ENTRY(a[AT(row, col, lda)] = acc[i][j];)
}

#endif
