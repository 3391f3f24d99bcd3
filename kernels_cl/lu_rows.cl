/* lu_rows.cl -- the blocked LU's register leaf (a file of its own: it is
 * built once per leaf shape, LW x ROWS).
 *
 * Same storage, piv and info conventions as lu.cl.  getf2_rows factors the
 * m x w leaf a[c0:n, c0:c0+w] (w <= LW, m <= ROWS * WG) of a panel
 * a[c0:n, p0:p1] held in the registers of one work-group for the whole
 * factorization, and then completes its part of the panel, so the caller
 * needs only one rank-w update (a GEMM) before the next leaf:
 *
 *        p0     c0  c0+w       p1
 *      +------+----+-----------+
 *   c0 |swaps | L11| U12 = L11^-1 A12 (after the swaps)
 *      |      |\   |           |
 *      |      | L21| A22 (the caller: A22 -= L21 U12)
 *      +------+----+-----------+
 *
 * Row r of the leaf (relative to c0) lives in item r % WG, slot r / WG: its
 * LW entries are the item's registers x[slot * LW, slot * LW + LW).  An item
 * thus holds its rows' multipliers itself, and a column step j needs from
 * the others only the pivot row:
 *   1. the item of row j publishes it (jrow, by parity of j) and every item
 *      its best candidate for column j; the candidates are reduced
 *      (leaf_pivot, one or two barriers) to the pivot row p;
 *   2. the item of row p publishes it (urow); after a barrier, rows p and j
 *      are interchanged (row p takes jrow, row j urow), and every item scales
 *      its rows' entries of column j by 1 / urow[j] and subtracts l * urow
 *      from the entries right of it, keeping its best candidate for j + 1.
 * Three barriers per column and no other traffic; the column steps and the
 * entries are unrolled (literal indices: the rows stay in registers).  Rows
 * at or past m and columns at or past w are never loaded or stored.  The
 * panel's other columns are then completed one per work-item
 * (leaf_panel_columns): the leaf's interchanges, and right of the leaf the
 * solve with L11.
 */
#include "unroll.h"

#ifndef LW
#define LW 8               /* widest leaf: 4, 8 or 16 */
#endif
#ifndef ROWS
#define ROWS 2             /* leaf rows per work-item (at most 16); ROWS * LW <= 64 */
#endif
#include "pivoting.h"

/* The pivot row: the (largest value, lowest row) over the candidates in
 * vals/rows[0, count), which every item wrote before the caller's barrier
 * (NO_PIVOT: row `next`).  Every item gets it; vals and rows may be rewritten
 * once the caller has passed one more barrier.  count is a constant of the
 * caller, so the barrier below is taken by all items or none. */
int leaf_pivot(__local real *vals, __local int *rows, const int lid, const int next,
               const int count)
{
#if NO_PIVOT
    return next;
#else
    if (count > ARGMAX_SCAN) {
        argmax_fold(vals, rows, lid, count);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    real value;
    return argmax_scan(vals, rows, min(count, ARGMAX_SCAN), &value);
#endif
}

/* The panel's columns outside the leaf, one per item, once the leaf is
 * stored: the leaf's interchanges in order (swaps[i]: the row that row c0 + i
 * was interchanged with; interchange.h), and for the columns right of the
 * leaf the unit lower triangular solve with L11 (l11: LW x LW, row-major). */
#define IX_T real
#define IX_N LW
#include "interchange.h"

void leaf_panel_columns(__global real *a, const int lda, const int c0, const int w,
                        const int p0, const int p1, __local const int *swaps,
                        __local const real *l11, const int lid)
{
    for (int col = p0 + lid; col < p1; col += WG) {
        if (col >= c0 && col < c0 + w)
            continue;
        int p[LW];
        real u[LW], far[LW];
        #pragma unroll
        for (int i = 0; i < LW; i++)
            if (i < w) {
                p[i] = swaps[i];
                u[i] = a[AT(c0 + i, col, lda)];
                if (IX_OUTSIDE(p[i], c0, w))
                    far[i] = a[AT(p[i], col, lda)];
            }
        interchange_chunk(u, far, p, w, c0);
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
                if (IX_OUTSIDE(p[i], c0, w))   /* in order: a repeated row ends as the last */
                    a[AT(p[i], col, lda)] = far[i];
            }
    }
}

/* X(s, c): column c of the item's row in slot s (row s * WG + lid of the leaf) */
#define X(s, c) x[(s) * LW + (c)]
#define NEXT_COL(j) ((j) + 1 < LW ? (j) + 1 : (j))

/* Literal indices (unroll.h's E8 and A8, and C8 here, one macro family per
 * level): G(j, s) for the slots s < ROWS, G(j, s, c) for the columns c < LW,
 * F(j) for the column steps j < LW; each G or F guarded by its bound. */
#define C8(G, j, s, b) G(j, s, b) G(j, s, b + 1) G(j, s, b + 2) G(j, s, b + 3) \
                       G(j, s, b + 4) G(j, s, b + 5) G(j, s, b + 6) G(j, s, b + 7)
#if ROWS <= 8
#define EACH_SLOT(G, j) E8(G, j, 0)
#else
#define EACH_SLOT(G, j) E8(G, j, 0) E8(G, j, 8)
#endif
#if LW <= 8
#define EACH_COL(G, j, s) C8(G, j, s, 0)
#define EACH_STEP(F) A8(F, 0)
#else
#define EACH_COL(G, j, s) C8(G, j, s, 0) C8(G, j, s, 8)
#define EACH_STEP(F) A8(F, 0) A8(F, 8)
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_rows(__global real *a, const int lda, const int n, const int c0, const int w,
                const int p0, const int p1, __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    __local real urow[LW], jrow[2][LW];
    __local real l11[LW * LW];
    __local int swaps[LW];
    const int lid = get_local_id(0);
    const int m = n - c0;
    __global real *base = a + AT(c0, c0, lda);
    real x[ROWS * LW], u[LW];

    /* the leaf, and the candidates for column 0 */
    real best = -ONE;
    int best_row = 0;
#define LOAD_ENTRY(j, s, c) if ((c) < LW) \
        X(s, c) = (c) < w ? base[AT(r, c, lda)] : ZERO;
#define LOAD(j, s) if ((s) < ROWS) { \
        const int r = (s) * WG + lid; \
        if (r < m) { \
            EACH_COL(LOAD_ENTRY, j, s) \
            { const int take = fabs(X(s, 0)) > best; \
                best = take ? fabs(X(s, 0)) : best; \
                best_row = take ? r : best_row; } } \
        else { \
            EACH_COL(ZERO_ENTRY, j, s) } }
#define ZERO_ENTRY(j, s, c) if ((c) < LW) X(s, c) = ZERO;
    EACH_SLOT(LOAD, 0)

    /* the row-j item publishes it (slot j / WG); the row-p item publishes it
     * (urow) and, after a barrier, takes row j (jrow), the row-j item urow */
#define PUBLISH_J(j, s, c) if ((c) < LW) jrow[(j) & 1][c] = X(s, c);
#define PUBLISH_P_ENTRY(j, s, c) if ((c) < LW) urow[c] = X(s, c);
#define PUBLISH_P(j, s) if ((s) < ROWS && (s) == p_slot) { EACH_COL(PUBLISH_P_ENTRY, j, s) }
#define TAKE_J_ENTRY(j, s, c) if ((c) < LW) X(s, c) = jrow[(j) & 1][c];
#define TAKE_J(j, s) if ((s) < ROWS && (s) == p_slot) { EACH_COL(TAKE_J_ENTRY, j, s) }
#define TAKE_P(j, s, c) if ((c) < LW) X(s, c) = urow[c];
    /* the rows below j: the multiplier in column j, the rank-1 update right of
     * it (u: the pivot row), the candidates for column j + 1 */
#define LOAD_U(j, s, c) if ((c) > (j) && (c) < LW) u[c] = urow[c];
#define UPDATE_ENTRY(j, s, c) if ((c) > (j) && (c) < LW) X(s, c) -= l * u[c];
#define UPDATE(j, s) if ((s) < ROWS) { \
        const int r = (s) * WG + lid; \
        if (r > (j) && r < m) { \
            const real l = pivot == ZERO ? X(s, j) : multiplier(X(s, j), pivot, inv); \
            X(s, j) = l; \
            EACH_COL(UPDATE_ENTRY, j, s) \
            if ((j) + 1 < LW) { \
                const int take = fabs(X(s, NEXT_COL(j))) > best; \
                best = take ? fabs(X(s, NEXT_COL(j))) : best; \
                best_row = take ? r : best_row; } } }
    /* every item meets every barrier of the LW steps (straight-line code: a
     * barrier under a condition is costly to compile for CPUs); steps past w
     * do no work */
#define STEP(j) if ((j) < LW) { \
        if ((j) < w) { \
            if ((j) / WG < ROWS && lid == (j) % WG) { \
                EACH_COL(PUBLISH_J, j, (j) / WG) } \
            vals[lid] = best; \
            rows[lid] = best_row; } \
        barrier(CLK_LOCAL_MEM_FENCE); \
        const int p = leaf_pivot(vals, rows, lid, j, WG); \
        const int p_item = p % WG, p_slot = p / WG; \
        if ((j) < w) { \
            if (lid == p_item) { \
                EACH_SLOT(PUBLISH_P, j) } \
            if (lid == 0) { \
                swaps[j] = c0 + p; \
                piv[c0 + (j)] = c0 + p; } } \
        barrier(CLK_LOCAL_MEM_FENCE); \
        if ((j) < w) { \
            const real pivot = urow[j], inv = ONE / pivot; \
            if (lid == 0 && pivot == ZERO && *info == 0) \
                *info = c0 + (j) + 1; \
            if (lid == p_item) { \
                EACH_SLOT(TAKE_J, j) } \
            if ((j) / WG < ROWS && lid == (j) % WG) { \
                EACH_COL(TAKE_P, j, (j) / WG) } \
            EACH_COL(LOAD_U, j, 0) \
            best = -ONE; \
            best_row = (j) + 1; \
            EACH_SLOT(UPDATE, j) } }
    EACH_STEP(STEP)

    /* the leaf back to memory; L11 to local memory */
#define STORE_ENTRY(j, s, c) if ((c) < LW && (c) < w) { \
        base[AT(r, c, lda)] = X(s, c); \
        if (r < w) \
            l11[r * LW + (c)] = X(s, c); }
#define STORE(j, s) if ((s) < ROWS) { \
        const int r = (s) * WG + lid; \
        if (r < m) { \
            EACH_COL(STORE_ENTRY, j, s) } }
    EACH_SLOT(STORE, 0)
    barrier(CLK_LOCAL_MEM_FENCE);
    leaf_panel_columns(a, lda, c0, w, p0, p1, swaps, l11, lid);
}
