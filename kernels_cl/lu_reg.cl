/* lu_reg.cl -- the blocked LU's register leaf (a file of its own: it is built
 * once per leaf shape, LW x SLOTS, and the build should stay small).
 *
 * Same storage, piv and info conventions as lu.cl.  LW (power of two
 * dividing WG): widest leaf; SLOTS: registers per work-item.
 */
#include "pivoting.h"

#ifndef LW
#define LW 8
#endif
#ifndef SLOTS
#define SLOTS 8
#endif

/* Register leaf (GPUs): the m x w panel a[c0:n, c0:c0+w] (w <= LW, m <= SLOTS *
 * WG / LW) held in registers for the whole factorization, so no column step
 * touches global memory.  Element (r, c) of the panel (r, c relative to c0)
 * lives in item (r % RPS) * LW + c, slot r / RPS, RPS = WG / LW rows per
 * slot: a work-group's loads and stores of one slot cover RPS neighbouring
 * rows, LW contiguous entries each.  Per column j:
 *   the items of rows j and p exchange them through local memory (urow
 *   then holds the pivot row), the items of column j form the multipliers
 *   into local lbuf, and the items of the columns right of j update their
 *   slots; those of column j+1 find the next pivot candidate meanwhile.
 * Rows at or past m and columns at or past w are never loaded or stored. */
#define RPS (WG / LW)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_reg(__global real *a, const int lda, const int n, const int c0, const int w,
               __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    __local real urow[LW], jrow[LW];
    __local real lbuf[SLOTS * RPS];
    const int lid = get_local_id(0);
    const int c = lid % LW, rg = lid / LW;           /* my column, my row in each slot */
    const int m = n - c0;
    const int live = c < w;
    __global real *base = a + AT(c0, c0, lda);
    real x[SLOTS];
    #pragma unroll
    for (int k = 0; k < SLOTS; k++) {
        const int r = k * RPS + rg;
        x[k] = (live && r < m) ? base[AT(r, c, lda)] : ZERO;
    }
    real best = -ONE;
    int best_row = 0;
    if (c == 0) {
        #pragma unroll
        for (int k = 0; k < SLOTS; k++)
            if (k * RPS + rg < m && fabs(x[k]) > best) {
                best = fabs(x[k]);
                best_row = k * RPS + rg;
            }
    }
#if NO_PIVOT
    int p = 0;
#else
    int p = wg_reduce_argmax(best, best_row, vals, rows);
#endif
    for (int j = 0; j < w; j++) {
        /* interchange rows j and p: their holders publish them, then swap */
        const int pk = p / RPS, jk = j / RPS;
        const int holds_p = rg == p % RPS, holds_j = rg == j % RPS;
        #pragma unroll
        for (int k = 0; k < SLOTS; k++) {
            if (holds_p && k == pk)
                urow[c] = x[k];
            if (holds_j && k == jk)
                jrow[c] = x[k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const real pivot = urow[j];
        #pragma unroll
        for (int k = 0; k < SLOTS; k++) {
            if (holds_p && k == pk)
                x[k] = jrow[c];
            if (holds_j && k == jk)
                x[k] = urow[c];
        }
        if (lid == 0) {
            piv[c0 + j] = c0 + p;
            if (pivot == ZERO && *info == 0)
                *info = c0 + j + 1;
        }
        /* multipliers of column j, published in lbuf */
        const real inv = ONE / pivot;
        if (c == j) {
            #pragma unroll
            for (int k = 0; k < SLOTS; k++) {
                const int r = k * RPS + rg;
                if (r > j && r < m) {
                    x[k] = pivot == ZERO ? x[k] : multiplier(x[k], pivot, inv);
                    lbuf[r] = x[k];
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* rank-1 update right of column j; column j+1 finds its pivot candidate */
        best = -ONE;
        best_row = j + 1;
        if (c > j && live) {
            const real u = urow[c];
            #pragma unroll
            for (int k = 0; k < SLOTS; k++) {
                const int r = k * RPS + rg;
                if (r > j && r < m) {
                    x[k] -= lbuf[r] * u;
                    if (c == j + 1 && fabs(x[k]) > best) {
                        best = fabs(x[k]);
                        best_row = r;
                    }
                }
            }
        }
#if NO_PIVOT
        p = j + 1;
        barrier(CLK_LOCAL_MEM_FENCE);                /* urow, jrow and lbuf are reused */
#else
        p = wg_reduce_argmax(best, best_row, vals, rows);
#endif
    }
    #pragma unroll
    for (int k = 0; k < SLOTS; k++) {
        const int r = k * RPS + rg;
        if (live && r < m)
            base[AT(r, c, lda)] = x[k];
    }
}
