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
 * Per column j, two barriers: the items of rows j and p exchange them
 * through local memory (urow then holds the pivot row); every item forms
 * the multipliers it needs from column j, which the items of column j
 * published (unscaled) in local memory during the step before, and updates
 * its slots; the items of column j+1 publish their new entries and their
 * best pivot candidate, which every item then reduces over the RPS row
 * groups (pivoting.h: argmax_fold, argmax_scan).  Rows at or past m and columns at or past
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

/* The pivot row: the (largest value, lowest row) over the RPS row groups'
 * candidates in vals/rows[0, RPS) (NO_PIVOT: row `next`).  Every item gets
 * it; vals and rows may be rewritten once the caller has passed one more
 * barrier. */
int pivot_row(__local real *vals, __local int *rows, const int lid, const int next)
{
    barrier(CLK_LOCAL_MEM_FENCE);
#if NO_PIVOT
    return next;
#else
#if RPS > ARGMAX_SCAN
    argmax_fold(vals, rows, lid, RPS);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    real value;
    return argmax_scan(vals, rows, min(RPS, ARGMAX_SCAN), &value);
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_reg(__global real *a, const int lda, const int n, const int c0, const int w,
               const int p0, const int p1, __global int *piv, __global int *info)
{
    __local real vals[RPS];
    __local int rows[RPS];
    __local real urow[LW], jrow[LW];
    __local real cols[2][SLOTS * RPS];   /* column j, unscaled, rows > j: cols[j % 2] */
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
    /* column 0 published, and its candidates */
    real best = -ONE;
    int best_row = 0;
    if (c == 0) {
#define FIRST_COLUMN(k) if ((k) < SLOTS && (k) * RPS + rg < m) { \
            cols[0][(k) * RPS + rg] = x[k]; \
            if (fabs(x[k]) > best) { best = fabs(x[k]); best_row = (k) * RPS + rg; } }
        FOR_SLOTS(FIRST_COLUMN)
        vals[rg] = best;
        rows[rg] = best_row;
    }
    int p = pivot_row(vals, rows, lid, 0);
    for (int j = 0; j < w; j++) {
        __local const real *col = cols[j % 2];
        __local real *next = cols[(j + 1) % 2];
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
        /* every item forms the multipliers it needs from the published column
         * (row p now holds row j's entry); those of column j store them */
        const real inv = ONE / pivot;
#define MULT(v) (pivot == ZERO ? (v) : multiplier((v), pivot, inv))
        if (c == j) {
#define SCALE(k) if ((k) < SLOTS) { \
            const int r = (k) * RPS + rg; \
            if (r > j && r < m) \
                x[k] = MULT(x[k]); }
            FOR_SLOTS(SCALE)
        }
        /* rank-1 update right of column j; column j+1 is published with its
         * candidates */
        best = -ONE;
        best_row = j + 1;
        if (c > j && live) {
            const real u = urow[c];
#define UPDATE(k) if ((k) < SLOTS) { \
            const int r = (k) * RPS + rg; \
            if (r > j && r < m) { \
                x[k] -= MULT((r) == p ? jrow[j] : col[r]) * u; \
                if (c == j + 1) { \
                    next[r] = x[k]; \
                    if (fabs(x[k]) > best) { best = fabs(x[k]); best_row = r; } } } }
            FOR_SLOTS(UPDATE)
        }
        if (c == j + 1) {
            vals[rg] = best;
            rows[rg] = best_row;
        }
        p = pivot_row(vals, rows, lid, j + 1);
    }
    /* the leaf back to memory; L11 to local memory */
#define STORE(k) if ((k) < SLOTS) { \
        const int r = (k) * RPS + rg; \
        if (live && r < m) base[AT(r, c, lda)] = x[k]; \
        if (live && r < w) l11[r * LW + c] = x[k]; }
    FOR_SLOTS(STORE)
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the rest of the panel: interchanges, then U12 = L11^-1 A12.  Each item
     * loads its column's leaf rows u and the pivot rows below the leaf (far)
     * at once, interchanges them in registers, and stores them back: two
     * memory round trips, not a dependent load per interchange. */
    const int below = c0 + w;
    for (int col = p0 + lid; col < p1; col += WG) {
        if (col >= c0 && col < below)
            continue;
        real u[LW], far[LW];
        #pragma unroll
        for (int i = 0; i < LW; i++)
            if (i < w) {
                u[i] = a[AT(c0 + i, col, lda)];
                far[i] = swaps[i] >= below ? a[AT(swaps[i], col, lda)] : ZERO;
            }
        #pragma unroll
        for (int i = 0; i < LW; i++)
            if (i < w) {
                const int r = swaps[i];
                if (r >= below) {              /* far[i] holds row r as it is now */
                    const real t = far[i];
                    far[i] = u[i];
                    u[i] = t;
                    #pragma unroll
                    for (int k = i + 1; k < LW; k++)
                        if (k < w && swaps[k] == r)
                            far[k] = far[i];
                } else {                       /* a leaf row: r - c0 >= i */
                    #pragma unroll
                    for (int t = i + 1; t < LW; t++)
                        if (t == r - c0) {
                            const real v = u[t];
                            u[t] = u[i];
                            u[i] = v;
                        }
                }
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
            if (i < w) {
                a[AT(c0 + i, col, lda)] = u[i];
                if (swaps[i] >= below)         /* in order: a repeated row ends as the last */
                    a[AT(swaps[i], col, lda)] = far[i];
            }
    }
}
