/* lu_leaf.cl -- the blocked LU's one-work-group panel leaf (PANEL="leaf").
 *
 * Same storage, piv and info conventions as lu_inplace.cl.  getf2_leaf factors
 * the m x w panel a[c0:n, c0:c0+w] (w <= LEAF_W) in one work-group, column by
 * column, swapping rows inside the panel only (the caller applies the
 * interchanges to the other columns with laswp).  The pass that updates column j
 * also finds the next pivot candidate in column j+1, so a column costs one pass
 * over the rows.  Below the device's SMALL_N the whole matrix is one panel.
 *
 * WG (power of two) is the work-group size.
 * NO_PIVOT = 1 takes the diagonal as pivot (teaching only: unstable).
 */
#include "common.h"

#ifndef LEAF_W
#define LEAF_W 1           /* widest leaf, the vector width of its rows */
#endif
#ifndef LUNR
#define LUNR 4             /* rows a work-item loads before it stores */
#endif

#include "pivoting.h"

/* Panel leaf: the m x w panel a[c0:n, c0:c0+w] by one work-group, column
 * by column (w <= LEAF_W for a leaf of the blocked LU; any w when the whole
 * matrix is one panel: the LEAF_W-column chunk holding column j is updated
 * in registers, the columns right of it by a plain loop).
 * Item lid owns rows col+1+lid, +WG, +2WG, ... (neighbouring items,
 * neighbouring rows) and handles LUNR of them at once: all their loads are
 * issued before the first store.  Per column: the pivot row chosen by the
 * previous pass is interchanged with row col; every row below col gets its
 * multiplier and the rank-1 update of the columns right of col, and the same
 * pass finds the next column's pivot candidate.  Columns past w are never
 * touched. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_leaf(__global real *a, const int lda, const int n, const int c0, const int w,
                __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    const int lid = get_local_id(0);
    int p = wg_argmax_abs(a, lda, c0, c0, n, vals, rows);
    for (int j = 0; j < w; j++) {
        const int col = c0 + j;
        barrier(CLK_GLOBAL_MEM_FENCE);               /* the last pass's stores are visible */
        const real pivot = a[AT(p, col, lda)];
        barrier(CLK_GLOBAL_MEM_FENCE);               /* all have read it before the swap */
        for (int c = lid; c < w; c += WG) {
            const real t = a[AT(p, c0 + c, lda)];
            a[AT(p, c0 + c, lda)] = a[AT(col, c0 + c, lda)];
            a[AT(col, c0 + c, lda)] = t;
        }
        if (lid == 0) {
            piv[col] = p;
            if (pivot == ZERO && *info == 0)
                *info = col + 1;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);               /* row col is the pivot row now */
        const real inv = ONE / pivot;
        real best = -ONE;
        int best_row = col + 1;
        const int cb = j - j % LEAF_W;               /* the chunk of LEAF_W columns holding j */
        const int full = cb + LEAF_W <= w;           /* whole: vector loads and stores */
        real uc[LEAF_W];
        if (full)
            VSTORE(LEAF_W)(VLOAD(LEAF_W)(0, a + AT(col, c0 + cb, lda)), 0, uc);
        else {
            #pragma unroll
            for (int c = 0; c < LEAF_W; c++)
                uc[c] = (cb + c < w) ? a[AT(col, c0 + cb + c, lda)] : ZERO;
        }
        #pragma unroll
        for (int c = 0; c < LEAF_W; c++)
            uc[c] = (cb + c > j) ? uc[c] : ZERO;
        for (int r0 = col + 1 + lid; r0 < n; r0 += WG * LUNR) {
            real s[LUNR][LEAF_W];
            #pragma unroll
            for (int i = 0; i < LUNR; i++) {
                const int r = min(r0 + i * WG, n - 1);   /* past the end: reload, no store */
                if (full)
                    VSTORE(LEAF_W)(VLOAD(LEAF_W)(0, a + AT(r, c0 + cb, lda)), 0, s[i]);
                else {
                    #pragma unroll
                    for (int c = 0; c < LEAF_W; c++)
                        s[i][c] = (cb + c < w) ? a[AT(r, c0 + cb + c, lda)] : ZERO;
                }
            }
            #pragma unroll
            for (int i = 0; i < LUNR; i++) {
                const int r = r0 + i * WG;
                real x = ZERO;
                #pragma unroll
                for (int c = 0; c < LEAF_W; c++)
                    x = (cb + c == j) ? s[i][c] : x;
                const real l = pivot == ZERO ? x : multiplier(x, pivot, inv);
                real next = -ONE;
                #pragma unroll
                for (int c = 0; c < LEAF_W; c++) {
                    s[i][c] = (cb + c == j) ? l : s[i][c] - l * uc[c];
                    next = (cb + c == j + 1) ? fabs(s[i][c]) : next;
                }
                if (r < n) {
                    if (full)
                        VSTORE(LEAF_W)(VLOAD(LEAF_W)(0, s[i]), 0, a + AT(r, c0 + cb, lda));
                    else {
                        #pragma unroll
                        for (int c = 0; c < LEAF_W; c++)
                            if (cb + c < w)
                                a[AT(r, c0 + cb + c, lda)] = s[i][c];
                    }
                    /* the columns right of the chunk (the whole matrix as one panel) */
                    __global real *row = a + AT(r, c0, lda);
                    __global const real *prow = a + AT(col, c0, lda);
                    for (int c = cb + LEAF_W; c < w; c++)
                        row[c] -= l * prow[c];
                    if (j + 1 == cb + LEAF_W && j + 1 < w)
                        next = fabs(row[j + 1]);
                    if (next > best) {
                        best = next;
                        best_row = r;
                    }
                }
            }
        }
#if NO_PIVOT
        p = col + 1;
#else
        real value;
        p = wg_reduce_argmax(best, best_row, vals, rows, &value);
#endif
    }
}
