/* lu_reg.cl -- the blocked LU's register leaf (a file of its own: it is built
 * once per leaf shape, LW x SLOTS, and the build should stay small).
 *
 * Same storage, piv and info conventions as lu.cl.  LW (power of two
 * dividing WG): widest leaf; SLOTS: registers per work-item.
 *
 * getf2_reg factors the m x w leaf a[c0:n, c0:c0+w] (w <= LW, m <= SLOTS *
 * WG / LW) of a panel a[c0:n, p0:p1] held in registers for the whole
 * factorization, so no column step touches global memory, and then
 * completes its part of the panel, so the caller only needs one rank-w
 * update (a GEMM) before the next leaf:
 *
 *        p0     c0  c0+w       p1
 *      +------+----+-----------+
 *   c0 |swaps | L11| U12 = L11^-1 A12 (after the swaps)
 *      |      |\   |           |
 *      |      | L21| A22 (the caller: A22 -= L21 U12)
 *      +------+----+-----------+
 *
 * Element (r, c) of the leaf (relative to c0) lives in item (r % RPS) * LW + c,
 * slot r / RPS, RPS = WG / LW rows per slot: a work-group's loads and stores
 * of one slot cover RPS neighbouring rows, LW contiguous entries each.
 * Per column j: the items of rows j and p exchange them through local memory
 * (urow then holds the pivot row), the items of column j form the
 * multipliers into local lbuf, and the items of the columns right of j
 * update their slots; those of column j+1 find the next pivot candidate,
 * reduced over the RPS row groups.  Rows at or past m and columns at or past
 * w are never loaded or stored.  The other panel columns are then handled
 * one per work-item (neighbouring items, neighbouring columns): the leaf's
 * interchanges in order, and for the columns right of the leaf the unit
 * lower triangular solve with L11.
 */
#include "pivoting.h"
#include "unroll.h"

#ifndef LW
#define LW 8
#endif
#ifndef SLOTS
#define SLOTS 8            /* at most 64 */
#endif
#define RPS (WG / LW)

/* the per-slot code: F(k) for every slot, literal k (unroll.h), each F guarded
 * by (k) < SLOTS */
#define FOR_SLOTS(F) ALL64(F)

/* The (largest value, lowest row) over the RPS row groups' candidates in
 * vals/rows[0, RPS); every item gets the row. */
int groups_argmax(__local real *vals, __local int *rows, const int lid)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    return argmax_tree(vals, rows, lid, RPS);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_reg(__global real *a, const int lda, const int n, const int c0, const int w,
               const int p0, const int p1, __global int *piv, __global int *info)
{
    __local real vals[RPS];
    __local int rows[RPS];
    __local real urow[LW], jrow[LW];
    __local real lbuf[SLOTS * RPS];
    __local real l11[LW * LW];
    __local int swaps[LW];
    const int lid = get_local_id(0);
    const int c = lid % LW, rg = lid / LW;           /* my column, my row in each slot */
    const int m = n - c0;
    const int live = c < w;
    __global real *base = a + AT(c0, c0, lda);
    real x[64];
#define LOAD(k) if ((k) < SLOTS) { \
        const int r = (k) * RPS + rg; \
        x[k] = (live && r < m) ? base[AT(r, c, lda)] : ZERO; }
    FOR_SLOTS(LOAD)
    /* candidates of column 0 */
    real best = -ONE;
    int best_row = 0;
#define FIRST_CANDIDATE(k) if ((k) < SLOTS && (k) * RPS + rg < m && fabs(x[k]) > best) { \
        best = fabs(x[k]); \
        best_row = (k) * RPS + rg; }
    FOR_SLOTS(FIRST_CANDIDATE)
    if (c == 0) {
        vals[rg] = best;
        rows[rg] = best_row;
    }
#if NO_PIVOT
    barrier(CLK_LOCAL_MEM_FENCE);
    int p = 0;
#else
    int p = groups_argmax(vals, rows, lid);
#endif
    for (int j = 0; j < w; j++) {
        /* interchange rows j and p: their holders publish them, then swap */
        const int pk = p / RPS, jk = j / RPS;
        const int holds_p = rg == p % RPS, holds_j = rg == j % RPS;
#define PUBLISH(k) if ((k) < SLOTS) { \
            if (holds_p && (k) == pk) urow[c] = x[k]; \
            if (holds_j && (k) == jk) jrow[c] = x[k]; }
        FOR_SLOTS(PUBLISH)
        if (lid == 0)
            swaps[j] = c0 + p;
        barrier(CLK_LOCAL_MEM_FENCE);
        const real pivot = urow[j];
#define SWAP(k) if ((k) < SLOTS) { \
            if (holds_p && (k) == pk) x[k] = jrow[c]; \
            if (holds_j && (k) == jk) x[k] = urow[c]; }
        FOR_SLOTS(SWAP)
        if (lid == 0) {
            piv[c0 + j] = c0 + p;
            if (pivot == ZERO && *info == 0)
                *info = c0 + j + 1;
        }
        /* multipliers of column j, published in lbuf */
        const real inv = ONE / pivot;
        if (c == j) {
#define SCALE(k) if ((k) < SLOTS) { \
            const int r = (k) * RPS + rg; \
            if (r > j && r < m) { \
                x[k] = pivot == ZERO ? x[k] : multiplier(x[k], pivot, inv); \
                lbuf[r] = x[k]; } }
            FOR_SLOTS(SCALE)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* rank-1 update right of column j; column j+1 finds its pivot candidate */
        best = -ONE;
        best_row = j + 1;
        if (c > j && live) {
            const real u = urow[c];
#define UPDATE(k) if ((k) < SLOTS) { \
            const int r = (k) * RPS + rg; \
            if (r > j && r < m) { \
                x[k] -= lbuf[r] * u; \
                if (c == j + 1 && fabs(x[k]) > best) { best = fabs(x[k]); best_row = r; } } }
            FOR_SLOTS(UPDATE)
        }
        if (c == j + 1) {
            vals[rg] = best;
            rows[rg] = best_row;
        }
#if NO_PIVOT
        p = j + 1;
        barrier(CLK_LOCAL_MEM_FENCE);                /* urow, jrow and lbuf are reused */
#else
        p = groups_argmax(vals, rows, lid);
#endif
    }
    /* the leaf back to memory; L11 to local memory */
#define STORE(k) if ((k) < SLOTS) { \
        const int r = (k) * RPS + rg; \
        if (live && r < m) base[AT(r, c, lda)] = x[k]; \
        if (live && r < w) l11[r * LW + c] = x[k]; }
    FOR_SLOTS(STORE)
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the rest of the panel: interchanges, then U12 = L11^-1 A12 */
    for (int col = p0 + lid; col < p1; col += WG) {
        if (col >= c0 && col < c0 + w)
            continue;
        real u[LW];
        #pragma unroll
        for (int i = 0; i < LW; i++)
            if (i < w) {
                const int r = swaps[i];
                const real t = a[AT(r, col, lda)];
                a[AT(r, col, lda)] = a[AT(c0 + i, col, lda)];
                u[i] = t;
            }
        if (col > c0) {
            #pragma unroll
            for (int i = 1; i < LW; i++)
                #pragma unroll
                for (int k = 0; k < LW; k++)
                    if (k < i && i < w)
                        u[i] -= l11[i * LW + k] * u[k];
        }
        #pragma unroll
        for (int i = 0; i < LW; i++)
            if (i < w)
                a[AT(c0 + i, col, lda)] = u[i];
    }
}
