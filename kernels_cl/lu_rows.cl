/* lu_rows.cl -- the blocked LU's register leaf (a file of its own: it is
 * built once per leaf width LW and work-group size WG; ROWS is the most rows an
 * item can hold, and the slots in use, ceil(m / WG), are found at run time).
 *
 * Same storage, piv and info conventions as lu_inplace.cl.  getf2_rows factors the
 * m x w leaf a[c0:n, c0:c0+w] (w <= LW, m <= ROWS * WG) of a panel held in
 * the registers of one work-group for the whole factorization, and then
 * completes the panel's columns [p0, p1) (the caller passes an empty range to
 * leave them to leaf_columns, a launch across work-groups), so the caller
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
 * LW entries are the item's registers x[slot * LW, slot * LW + LW).  Slots at
 * or past ceil(m / WG) hold no row: the column steps skip them, and the loads
 * and stores stop before them (tests that are the same in every item), so one
 * program serves every m up to ROWS * WG.  An item
 * thus holds its rows' multipliers itself, and a column step j needs from
 * the others only the pivot row:
 *   1. the item of row j publishes it (jrow, by parity of j) and every item
 *      its best candidate for column j; the candidates are reduced
 *      (leaf_pivot, one or two barriers) to the pivot row p;
 *   2. the item of row p publishes it (urow); after a barrier, rows p and j
 *      are interchanged (row p takes jrow, row j urow), and every item scales
 *      its rows' entries of column j by 1 / urow[j] and subtracts l * urow
 *      from the entries right of it, keeping its best candidate for j + 1.
 * Three barriers per column and no other traffic.  The column steps are one
 * loop whose body names every register by a literal index (the rows stay in
 * registers, and the code is one step long): the rows rotate by one entry per
 * step, so that column j is always entry 0 of step j.  The leaf moves between
 * memory and the registers STAGE rows at a time through local memory
 * (coalesced, where an item's own row would touch one line per entry); rows
 * at or past m and columns at or past w are never loaded or stored.  The
 * leaf's interchanges become one permutation of the rows they touch
 * (leaf_permutation, written to perm), which the panel's other columns take
 * one per work-item (panel_column), with the solve by L11 right of the leaf.
 *
 * With MAP = 1 (the last panel, lu_flat.cl) the leaf's row r is memory row
 * rowmap[c0 + r] of the map it reads (flat_tail.h), each row carries its
 * memory row (home) through the interchanges, and the leaf goes back to the
 * rows it came from: its interchanges only permute the map, which it writes
 * to the other half, and it leaves the strictly lower part of L11^-1 for the
 * update instead of touching any other column.
 *
 * With PREV = 1 as well, one launch (with prev = 1) does two leaves' work (flat_update.h's
 * TILE_* / WPT_* with NX * NY = WG): work-group 0 is the leaf, which first
 * applies, as it loads its rows, the update of the leaf LW columns left of it
 * (A22 -= L21 U12 on its own columns, U12 = L11^-1 A12 formed once), and the
 * other work-groups apply that same update to the columns right of the leaf,
 * one tile each.  Neither reads what the other writes: the tiles read the map
 * this leaf reads, not the one it writes.  With prev = 0 the same program is a
 * plain MAP leaf (the tail's first, launched as one work-group).
 */
#include "unroll.h"

#ifndef LW
#define LW 8               /* widest leaf: 1, 4, 8 or 16 */
#endif
#ifndef ROWS
#define ROWS 2             /* most leaf rows per work-item (at most 16); ROWS * LW <= 64 */
#endif
#ifndef STAGE
#define STAGE WG           /* rows moved between memory and registers at once (a power of
                              two from WG / LW up to WG) */
#endif
#ifndef MAP
#define MAP 0              /* 1: the leaf's row r is memory row rowmap[c0 + r], and its
                              interchanges permute the row map instead of rows (the flat
                              tail: lu_flat.cl, which says where the maps live) */
#endif
#ifndef PREV
#define PREV 0             /* with MAP: 1 to apply the previous leaf's update first (above) */
#endif
#include "pivoting.h"
#include "flat_tail.h"
#if PREV
#include "flat_update.h"
#endif

/* The pivot row: the (largest value, lowest row) over the WG candidates in
 * vals/rows, which every item wrote before the caller's barrier (NO_PIVOT:
 * row `next`).  Every item gets it; vals and rows may be rewritten once the
 * caller has passed one more barrier.  The candidates are folded to
 * ARGMAX_SCAN^2 entries (if more), then to ARGMAX_SCAN (if more), and those
 * scanned by every item.  The folds are chosen by the preprocessor: PoCL 3.1
 * loses work-item values across a barrier inside a branch, even one that all
 * items take. */
int leaf_pivot(__local real *vals, __local int *rows, const int lid, const int next)
{
#if NO_PIVOT
    return next;
#else
#if WG > ARGMAX_SCAN * ARGMAX_SCAN
    ARGMAX_FOLD(vals, rows, lid, WG, ARGMAX_SCAN * ARGMAX_SCAN)
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
#if WG > ARGMAX_SCAN
    ARGMAX_FOLD(vals, rows, lid, WG < ARGMAX_SCAN * ARGMAX_SCAN ? WG : ARGMAX_SCAN * ARGMAX_SCAN,
                ARGMAX_SCAN)
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    real value;
    return argmax_scan(vals, rows, ARGMAX_SCANNED, &value);
#endif
}

/* The row whose entries the leaf's interchanges (swaps[i]: the row that row
 * c0 + i was interchanged with, at or below it) bring to row x: the
 * interchanges undone, last first. */
int origin_of(__local const int *swaps, const int c0, const int w, int x)
{
    for (int i = w - 1; i >= 0; i--) {
        const int p = swaps[i];
        x = x == c0 + i ? p : x == p ? c0 + i : x;
    }
    return x;
}

/* Where the leaf's interchanges take the rows, once for all columns:
 * afterwards row c0 + i (i < w) holds what row from[i] held, and row
 * out_row[k] (k < *outs, rows below the leaf's first w, in the order they are
 * first named in swaps) what row out_from[k] held.  Called by every item; the
 * results are visible after one more barrier of the caller's. */
void leaf_permutation(__local const int *swaps, const int c0, const int w,
                      __local int *from, __local int *out_row, __local int *out_from,
                      __local int *outs, __local int *named_first, const int lid)
{
    for (int t = lid; t < w; t += WG) {
        from[t] = origin_of(swaps, c0, w, c0 + t);
        const int p = swaps[t];
        int first = p >= c0 + w;
        for (int s = 0; s < t; s++)
            first &= swaps[s] != p;
        named_first[t] = first;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = lid; t < w; t += WG) {
        int k = 0;
        for (int s = 0; s < t; s++)
            k += named_first[s];
        if (named_first[t]) {
            out_row[k] = swaps[t];
            out_from[k] = origin_of(swaps, c0, w, swaps[t]);
        }
        if (t == w - 1)
            *outs = k + named_first[t];
    }
}

/* Column col of the panel, outside the leaf, once the leaf is stored: the
 * leaf's interchanges (leaf_permutation's rows: every load before the
 * stores), and right of the leaf the unit lower triangular solve with L11
 * (l11: LW x LW, row-major). */
void panel_column(__global real *a, const int lda, const int c0, const int w, const int col,
                  __local const int *from, __local const int *out_row,
                  __local const int *out_from, const int outs, __local const real *l11)
{
    real u[LW], out[LW];
    #pragma unroll
    for (int i = 0; i < LW; i++) {
        if (i < w)
            u[i] = a[AT(from[i], col, lda)];
        if (i < outs)
            out[i] = a[AT(out_from[i], col, lda)];
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
    for (int i = 0; i < LW; i++) {
        if (i < w)
            a[AT(c0 + i, col, lda)] = u[i];
        if (i < outs)
            a[AT(out_row[i], col, lda)] = out[i];
    }
}

#if !MAP
/* The panel's columns [p0, p1) outside the leaf (c0, w) of getf2_rows, one per
 * item of any number of work-groups (a launch of its own, where the panel has
 * more columns than one work-group of the leaf could take at once): the
 * leaf's row permutation from perm (PERM_* below), L11 from the stored leaf. */
#define PERM_OUTS 0
#define PERM_FROM 1
#define PERM_OUT_ROW (1 + LW)
#define PERM_OUT_FROM (1 + 2 * LW)
#define PERM_SIZE (1 + 3 * LW)

__kernel void leaf_columns(__global real *a, const int lda, const int c0, const int w,
                           const int p0, const int p1, __global const int *perm)
{
    __local int map[PERM_SIZE];
    __local real l11[LW * LW];
    const int lid = get_local_id(0), size = get_local_size(0);
    for (int e = lid; e < PERM_SIZE; e += size)
        map[e] = perm[e];
    for (int e = lid; e < LW * LW; e += size)
        l11[e] = e / LW < w && e % LW < w ? a[AT(c0 + e / LW, c0 + e % LW, lda)] : ZERO;
    barrier(CLK_LOCAL_MEM_FENCE);
    int col = p0 + get_global_id(0);
    col += col >= c0 ? w : 0;                 /* the leaf's own columns are skipped */
    if (col < p1)
        panel_column(a, lda, c0, w, col, map + PERM_FROM, map + PERM_OUT_ROW,
                     map + PERM_OUT_FROM, map[PERM_OUTS], l11);
}
#endif

/* The leaf moves between memory and registers through stage, STAGE rows at a
 * time (a chunk): the work-group moves a chunk together, consecutive items on
 * consecutive entries of a row, so that the accesses coalesce; row r of a
 * chunk sits at stage[STAGED(r, 0)], padded by one entry (an item reading its
 * own row meets no bank conflicts).  An item moves CHUNK_PART entries of each
 * chunk: its entry k is element CHUNK_ELEM(k) of the chunk (a row-major
 * STAGE x LW block). */
#define STAGED(r, i) ((r) * (LW + 1) + (i))
#if PREV
/* two chunks (the leaf's and the previous leaf's L21), or one tile of the
 * update (its ints after its reals, an int no larger than a real) */
#define TILE_POOL (TILE_M * LW + 2 * LW * U12_COLS + LW * LW + TILE_M + LW)
#define STAGE_POOL (2 * STAGE * (LW + 1) > TILE_POOL ? 2 * STAGE * (LW + 1) : TILE_POOL)
#else
#define STAGE_POOL (STAGE * (LW + 1))
#endif
#define CHUNK_PART (STAGE * LW / WG)
#define CHUNK_ELEM(k) ((k) * WG + lid)

/* Rows [r0, r0 + STAGE) of the leaf (columns [0, w) from column c0, rows below
 * m; zeros elsewhere) from memory rows from[r - r0] to stage; with PREV also
 * the previous leaf's columns [c0 - LW, c0) of those rows (its L21; zeros
 * where prev = 0) to the stage's second half.  Every load is issued before the first store (a store
 * to the stage, which the compiler cannot tell from `from`, would otherwise
 * wait for the load before it).  A barrier must follow before the stage is
 * read, and precede it where the stage was read before. */
#define LOAD_PARTS (1 + PREV)
void load_chunk(__global const real *a, const int lda, const int c0, const int m,
                const int w, const int r0, __local real *stage, __local const int *from,
                const int lid, const int prev)
{
    real v[LOAD_PARTS][CHUNK_PART];
    #pragma unroll
    for (int p = 0; p < LOAD_PARTS; p++)
        #pragma unroll
        for (int k = 0; k < CHUNK_PART; k++) {
            const int r = CHUNK_ELEM(k) / LW, i = CHUNK_ELEM(k) % LW;
            v[p][k] = r0 + r < m && i < (p ? LW * prev : w)
                    ? a[AT(from[r], (p ? c0 - LW : c0) + i, lda)] : ZERO;
        }
    #pragma unroll
    for (int p = 0; p < LOAD_PARTS; p++)
        #pragma unroll
        for (int k = 0; k < CHUNK_PART; k++)
            stage[p * STAGE * (LW + 1) + STAGED(CHUNK_ELEM(k) / LW, CHUNK_ELEM(k) % LW)]
                = v[p][k];
}

/* Rows [r0, r0 + STAGE) of the leaf (columns [0, w) from column c0, rows below
 * m) from stage to memory rows to[r - r0]; the stage must be visible to all (a
 * barrier) before. */
void store_chunk(__global real *a, const int lda, const int c0, const int m, const int w,
                 const int r0, __local const real *stage, __local const int *to,
                 const int lid)
{
    #pragma unroll
    for (int k = 0; k < CHUNK_PART; k++) {
        const int r = CHUNK_ELEM(k) / LW, i = CHUNK_ELEM(k) % LW;
        if (r0 + r < m && i < w)
            a[AT(to[r], c0 + i, lda)] = stage[STAGED(r, i)];
    }
}

/* The rows of L11 (the leaf's first w rows and columns; zero elsewhere in
 * LW x LW) that lie in the chunk of rows [r0, r0 + STAGE) held in stage, to
 * l11; the first chunk (r0 = 0) also writes the zeros. */
void store_l11_part(__local real *l11, __local const real *stage, const int r0, const int w,
                    const int lid)
{
    if (r0 >= w)
        return;
    for (int t = lid; t < LW * LW; t += WG) {
        const int r = t / LW, i = t % LW;
        if (r < w ? r >= r0 && r < r0 + STAGE : r0 == 0)
            l11[t] = r < w && i < w ? stage[STAGED(r - r0, i)] : ZERO;
    }
}

/* The strictly lower part of L11^-1 (L11: the unit lower triangular w x w
 * leaf top, strictly lower part in l11, LW x LW row-major) to linv (LW x LW,
 * row-major, zero elsewhere): item t < w solves L11 x = e_t in registers.
 * l11 must be visible to all. */
void store_l11_inverse(__local const real *l11, const int w, __global real *linv,
                       const int lid)
{
    for (int t = lid; t < LW; t += WG) {
        real v[LW];
        #pragma unroll
        for (int k = 0; k < LW; k++)
            v[k] = k == t ? ONE : ZERO;
        #pragma unroll
        for (int k = 1; k < LW; k++)
            #pragma unroll
            for (int q = 0; q < k; q++)
                v[k] = MUL_ADD(-l11[k * LW + q], v[q], v[k]);
        #pragma unroll
        for (int k = 0; k < LW; k++)
            linv[k * LW + t] = k > t && k < w && t < w ? v[k] : ZERO;
    }
}

/* X(s, i): the item's row in slot s (row s * WG + lid of the leaf), entry i */
#define X(s, i) x[(s) * LW + (i)]

/* Literal indices (unroll.h's E8, and C8 here): G(j, s) for the slots s <
 * ROWS, G(j, s, i) for the entries i < LW, each guarded by its bound. */
#define C8(G, j, s, b) G(j, s, b) G(j, s, b + 1) G(j, s, b + 2) G(j, s, b + 3) \
                       G(j, s, b + 4) G(j, s, b + 5) G(j, s, b + 6) G(j, s, b + 7)
#if ROWS <= 8
#define EACH_SLOT(G, j) E8(G, j, 0)
#else
#define EACH_SLOT(G, j) E8(G, j, 0) E8(G, j, 8)
#endif
#if LW <= 8
#define EACH_COL(G, j, s) C8(G, j, s, 0)
#else
#define EACH_COL(G, j, s) C8(G, j, s, 0) C8(G, j, s, 8)
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void getf2_rows(__global real *a, const int lda, const int n, const int c0, const int w,
#if MAP
                __global int *maps, __global real *linv, const int prev,
#else
                const int p0, const int p1, __global int *perm,
#endif
                __global int *piv, __global int *info)
{
    __local real vals[WG];
    __local int rows[WG];
    __local real urow[LW], jrow[2][LW];
    __local real l11[LW * LW];
    __local int swaps[LW], from[LW], out_row[LW], out_from[LW], outs[1], named_first[LW];
    __local real stage[STAGE_POOL];
    __local int to[STAGE], jhome[2], uhome[1];     /* memory rows of a chunk, jrow, urow */
    const int lid = get_local_id(0);
    const int m = n - c0;
    const int slots = (m + WG - 1) / WG;     /* slots holding rows: the same in every item */
    real x[ROWS * LW], u[LW];
    int home[ROWS];          /* memory row of each slot's row (with MAP it moves with the
                                row; without, rows move and it stays c0 + r) */
#if !MAP
    __global int *rowmap = 0, *map_out = 0;
    const int prev = 0;
#else
    __global int *rowmap = maps + LEAF_PARITY(c0) * n, *map_out = maps + (LEAF_PARITY(c0) ^ 1) * n;
#endif
#if PREV
    /* the update of the leaf at c0 - LW (LW wide): tiles right of this leaf in
     * the stage's memory; U12 on this leaf's columns (prev_u, row k a vector)
     * for work-group 0 */
    __local real prev_a12[LW * LW], prev_li[LW * LW];
    __local REALV(LW) prev_u[LW];
    if (get_group_id(0) > 0) {          /* launched only with prev = 1 */
        const int tiles_x = (n - c0 - w + TILE_N - 1) / TILE_N, g = get_group_id(0) - 1;
        __local real *l21 = stage, *a12 = l21 + TILE_M * LW, *u12 = a12 + LW * U12_COLS,
                     *li = u12 + LW * U12_COLS;
        __local int *tile_home = (__local int *)(li + LW * LW);
        flat_update_tile(a, lda, n, c0 - LW, LW, c0 + w, n, maps, linv, g % tiles_x,
                         g / tiles_x, lid % NX, lid / NX, l21, a12, u12, li, tile_home,
                         tile_home + TILE_M);
        return;
    }
    for (int t = lid; t < LW * LW; t += WG) {
        prev_a12[t] = prev && t % LW < w ? a[AT(rowmap[c0 - LW + t / LW], c0 + t % LW, lda)]
                                         : ZERO;
        prev_li[t] = prev ? linv[LEAF_SLOT(c0 - LW) + t] : ZERO;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    form_u12(prev_li, prev_a12, (__local real *)prev_u, LW, lid, WG);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif

    /* the leaf (entry i of a row: column i), and the candidates for column 0 */
    real best = -ONE;
    int best_row = 0;
#define MEMORY_ROW(r) ((r) >= m ? 0 : MAP ? rowmap[c0 + (r)] : c0 + (r))
#define HOME(j, s) if ((s) < ROWS) home[s] = MEMORY_ROW((s) * WG + lid);
    EACH_SLOT(HOME, 0)
/* The slots are loaded one chunk at a time by a loop over the slots in use (the
 * chunk's moves between memory and the stage are one piece of code for all of
 * them): an item of the chunk copies its row from the stage to y, where with
 * PREV it subtracts the previous leaf's L21 U12 (its L21 from the stage's second
 * half, where load_chunk put it), and only the copy from y to the registers
 * names slot s by a literal, one case per slot (LOAD_SLOT): the update's code is
 * written once, not once per slot. */
#define Y_ENTRY(j, s, i) if ((i) < LW) y[i] = stage[STAGED(lid % STAGE, i)];
#define PREV_ENTRY(j, s, i) if ((i) < LW) y[i] = MUL_ADD(-l, uk[i], y[i]);
#define LOAD_ENTRY(j, s, i) if ((i) < LW) X(s, i) = y[i];
#define LOAD_SLOT(js, s) if ((s) < ROWS && (s) == (js)) { \
        EACH_COL(LOAD_ENTRY, 0, s) \
        const int take = r < m && fabs(X(s, 0)) > best; \
        best = take ? fabs(X(s, 0)) : best; \
        best_row = take ? r : best_row; }
    for (int js = 0; js < slots; js++)
        for (int h = 0; h < WG / STAGE; h++) {
            const int r = js * WG + lid;
            if (lid / STAGE == h)
                to[lid % STAGE] = MEMORY_ROW(r);
            barrier(CLK_LOCAL_MEM_FENCE);
            load_chunk(a, lda, c0, m, w, js * WG + h * STAGE, stage, to, lid, prev);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (lid / STAGE == h) {
                real y[LW];
                EACH_COL(Y_ENTRY, 0, 0)
#if PREV
                if (prev)
                    for (int k = 0; k < LW; k++) {
                        const real l = stage[STAGE * (LW + 1) + STAGED(lid % STAGE, k)];
                        real uk[LW];
                        VSTORE(LW)(prev_u[k], 0, uk);
                        EACH_COL(PREV_ENTRY, 0, 0)
                    }
#endif
                EACH_SLOT(LOAD_SLOT, js) }
            barrier(CLK_LOCAL_MEM_FENCE);
        }

    /* Column step j: the row-j item publishes it (jrow, by parity of j), the
     * row-p item publishes it (urow) and, after a barrier, takes row j, the
     * row-j item urow.  The rows below j scale entry 0 (column j) to the
     * multiplier l and subtract l * urow right of it, and every row rotates by
     * one entry: entry 0 holds column j + 1 for the next step, and the rows'
     * column j moves to entry LW - 1.  Entries i >= LW - j hold finished
     * columns (multipliers and U): u is zero there, so that one FMA per entry
     * leaves them as they are (|l| <= 1), and only slot 0 holds rows at or
     * above j (WG >= LW), which a select keeps.  A zero pivot scales nothing
     * and updates nothing (its column below is zero: LAPACK's update is then
     * the identity); a subnormal one divides (LAPACK's ?getf2). */
#define PUBLISH_J_ENTRY(j, s, i) if ((i) < LW) jrow[(j) & 1][i] = X(s, i);
#define PUBLISH_J(j, s) if ((s) < ROWS && (s) == j_slot) { EACH_COL(PUBLISH_J_ENTRY, j, s) \
        if (MAP) jhome[(j) & 1] = home[s]; }
#define PUBLISH_P_ENTRY(j, s, i) if ((i) < LW) urow[i] = X(s, i);
#define PUBLISH_P(j, s) if ((s) < ROWS && (s) == p_slot) { EACH_COL(PUBLISH_P_ENTRY, j, s) \
        if (MAP) uhome[0] = home[s]; }
#define TAKE_J_ENTRY(j, s, i) if ((i) < LW) X(s, i) = jrow[(j) & 1][i];
#define TAKE_J(j, s) if ((s) < ROWS && (s) == p_slot) { EACH_COL(TAKE_J_ENTRY, j, s) \
        if (MAP) home[s] = jhome[(j) & 1]; }
#define TAKE_P_ENTRY(j, s, i) if ((i) < LW) X(s, i) = urow[i];
#define TAKE_P(j, s) if ((s) < ROWS && (s) == j_slot) { EACH_COL(TAKE_P_ENTRY, j, s) \
        if (MAP) home[s] = uhome[0]; }
#define LOAD_U(j, s, i) if ((i) > 0 && (i) < LW) u[i] = (i) < live ? urow[i] : ZERO;
#define SHIFT_ENTRY(j, s, i) if ((i) > 0 && (i) < LW) X(s, (i) - 1) = X(s, i) - f * u[i];
#define SHIFT_ENTRY_ABOVE(j, s, i) if ((i) > 0 && (i) < LW) \
        X(s, (i) - 1) = below ? X(s, i) - f * u[i] : X(s, i);
#define UPDATE(j, s) if ((s) < ROWS && (s) < slots) { \
        const int r = (s) * WG + lid; \
        const int below = (s) > 0 && WG >= LW ? 1 : r > j; \
        const real first = X(s, 0); \
        const real f = !scale ? ZERO : tiny ? first / pivot : first * inv; \
        if ((s) > 0 && WG >= LW) { \
            EACH_COL(SHIFT_ENTRY, j, s) \
        } else { \
            EACH_COL(SHIFT_ENTRY_ABOVE, j, s) \
        } \
        X(s, LW - 1) = below && scale ? f : first; \
        const int take = below && r < m && fabs(X(s, 0)) > best; \
        best = take ? fabs(X(s, 0)) : best; \
        best_row = take ? r : best_row; }
    for (int j = 0; j < w; j++) {
        const int j_item = j % WG, j_slot = WG >= LW ? 0 : j / WG;
        if (lid == j_item) {
            EACH_SLOT(PUBLISH_J, j) }
        vals[lid] = best;
        rows[lid] = best_row;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int p = leaf_pivot(vals, rows, lid, j);
        const int p_item = p % WG, p_slot = p / WG;
        if (lid == p_item) {
            EACH_SLOT(PUBLISH_P, j) }
        if (lid == 0) {
            swaps[j] = c0 + p;
            piv[c0 + j] = c0 + p;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const real pivot = urow[0], inv = ONE / pivot;
        const int scale = pivot != ZERO, tiny = fabs(pivot) < REAL_MIN;
        if (lid == 0 && !scale && *info == 0)
            *info = c0 + j + 1;
        if (lid == p_item) {
            EACH_SLOT(TAKE_J, j) }
        if (lid == j_item) {
            EACH_SLOT(TAKE_P, j) }
        const int live = LW - j;
        EACH_COL(LOAD_U, j, 0)
        best = -ONE;
        best_row = j + 1;
        EACH_SLOT(UPDATE, j)
    }
    /* w rotations so far: LW - w more bring entry i back to column i */
#define ROTATE_ENTRY(j, s, i) if ((i) > 0 && (i) < LW) X(s, (i) - 1) = X(s, i);
#define ROTATE(j, s) if ((s) < ROWS && (s) < slots) { \
        const real first = X(s, 0); \
        EACH_COL(ROTATE_ENTRY, j, s) \
        X(s, LW - 1) = first; }
    for (int k = w; k < LW; k++) {
        EACH_SLOT(ROTATE, 0)
    }

#if !MAP
    leaf_permutation(swaps, c0, w, from, out_row, out_from, outs, named_first, lid);
#endif

    /* the leaf back to memory; L11 to local memory */
#define STORE_ENTRY(j, s, i) if ((i) < LW) stage[STAGED(lid % STAGE, i)] = X(s, i);
#define STORE_SLOT(js, s) if ((s) < ROWS && (s) == (js)) { \
        to[lid % STAGE] = home[s]; \
        if (MAP && r < m) \
            map_out[c0 + r] = home[s]; \
        EACH_COL(STORE_ENTRY, 0, s) }
    for (int js = 0; js < slots; js++)
        for (int h = 0; h < WG / STAGE; h++) {
            const int r = js * WG + lid;
            if (lid / STAGE == h) {
                EACH_SLOT(STORE_SLOT, js) }
            barrier(CLK_LOCAL_MEM_FENCE);
            store_l11_part(l11, stage, js * WG + h * STAGE, w, lid);
            store_chunk(a, lda, c0, m, w, js * WG + h * STAGE, stage, to, lid);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
#if MAP
    store_l11_inverse(l11, w, linv + LEAF_SLOT(c0), lid);
#else
    for (int e = lid; e < PERM_SIZE; e += WG)
        perm[e] = e == PERM_OUTS ? *outs
                : e < PERM_OUT_ROW ? from[e - PERM_FROM]
                : e < PERM_OUT_FROM ? out_row[e - PERM_OUT_ROW] : out_from[e - PERM_OUT_FROM];
    for (int col = p0 + lid; col < p1; col += WG)
        if (col < c0 || col >= c0 + w)
            panel_column(a, lda, c0, w, col, from, out_row, out_from, *outs, l11);
#endif
}
