/* lu_grid.cl -- a tall panel of the blocked LU in one launch.
 *
 * getrf_grid factors the m x w panel a[c0:n, c0:c0+w] (w <= CPI*WX) with
 * partial pivoting, interchanging rows inside the panel only (the caller
 * applies them to the other columns), as the per-column launches of lu_inplace.cl
 * do, but in one launch.  The participating work-groups (grid.h) share the
 * rows: each takes the blocks of WY rows b = id, id + count, ... (b counted
 * from row c0) and keeps the first regs = min(rpi, RPI) of them (rpi an
 * argument) in registers for the whole launch, the rest in memory.  Column col
 * (the j-th of the panel, tag = tag0 + j):
 *
 *   1. each work-group publishes its best candidate for col (largest
 *      |a[r, col]|, lowest row on ties) with a copy of that row, and the
 *      owner of row col a copy of it (d);
 *   2. every work-group waits for all candidates (without pivoting too: that
 *      wait keeps the parities below apart), reduces them to the pivot row p
 *      (FOLD items gather them, GRID_CANDS at a time, and every item scans
 *      the FOLD they keep) and waits for u = a[p, c0:c0+w] from the copy its
 *      owner published (d when p = col), and for d;
 *   3. every work-group updates its rows r > col: a[r, c] -= l_r u_c for the
 *      panel columns c > col with l_r = a[r, col] / u_col, stored in place of
 *      a[r, col] (once every item has read it, for rows in memory); the row
 *      in slot p becomes the old row col (d, multipliers included) first; the
 *      item on column col+1 keeps its rows' best candidate; the owner of row
 *      col writes u (with row p's multipliers) into it: row col is final.
 * At the end the register rows below the panel's top w rows are stored.
 * A column takes three barriers of the work-group: after its candidates and
 * column j of its register rows are in local memory, after the participants'
 * candidates are gathered, and before the multipliers of rows in memory are
 * stored.  Multipliers are products with 1 / u_col in a branch that every
 * item takes alike, and quotients only where u_col is subnormal (LAPACK).
 *
 * What a work-group publishes travels as tagged words (tagged.h): a reader
 * loads the words it needs and loads them again until all carry the column's
 * tag, so no barrier across work-groups orders them and no writer waits.
 * Before, a barrier a column with plain stores let a work-group past it read
 * now and then a copy an earlier column had left (H200, float32: 2 wrong
 * factors in 45), and the stores as atomic exchanges that each item waited
 * for before the barrier cost sgetrf 4096 / 8192 15-17 % and dgetrf 5-9 %
 * (benchmarks/results/nvidia-h200-2026-12-02-grid-publish.txt); the words
 * took that back and more (sgetrf 4096 / 8192 18.8 / 52.5 -> 15.4 / 45.4 ms,
 * dgetrf 8192 / 16384 65.2 / 269.1 -> 59.4 / 254.4; -grid-tagged.txt).  The
 * words go to buffers of two parities (by column): a work-group publishes for
 * column col+2 only once every other has published for col+1, that is, once
 * all have read what was published for col.  Without pivoting the candidates
 * are found and published as well: the wait for them keeps the parities apart.
 * Only the owner of a matrix row reads or writes it.
 *
 * Work-groups are WX x WY items: item (x, y) holds the panel columns
 * x + k*WX (k < CPI) of the rows at position y of its work-group's blocks;
 * column j of a register row reaches the other items through local memory.
 * NO_PIVOT = 1 takes the diagonal as pivot (teaching only).
 *
 * One program serves every order and panel width: CPI*WX is the widest
 * panel of the factorization (narrower ones leave columns idle), RPI the
 * most register rows (fewer at run time leave slots idle, each slot's code
 * behind a test of regs that is the same in every item): a program per
 * class of the order cost about 0.35 s of NVIDIA's compiler at each new one.
 *
 * Arguments: piv and info as in lu_inplace.cl; joins[slot]: 0 before the
 * launch (grid_join's state); shared: the words the work-groups hand each
 * other, zeroed before the factorization's first panel and holding no tag
 * tag0 or above: [2][groups] candidate slots of SLOT_WORDS 64-bit words (the
 * value's words, then at CAND_ROW its row), then [2][CPI*WX] reals' words
 * (row col's copy, d), then [2][groups][CPI*WX] (each work-group's candidate
 * row); tag0: the first column's tag (> 0; the panel takes tag0 .. tag0+w-1);
 * rpi: the register rows per item this panel asks for (at most RPI are kept).
 */
#include "common.h"

#ifndef WX
#define WX 32              /* items along a row */
#endif
#ifndef WY
#define WY 8               /* rows of a block: items along a column */
#endif
#ifndef CPI
#define CPI 8              /* columns per item: the panel is at most CPI*WX wide */
#endif
#ifndef RPI
#define RPI 0              /* most rows per item held in registers (the rest in memory) */
#endif
#define WG (WX * WY)
#define PW (CPI * WX)

#ifndef SLOT_WORDS
#define SLOT_WORDS 16      /* 64-bit words of a candidate's slot: a 128-byte line each */
#endif
#define CAND_ROW 2         /* the slot's word of the candidate's row (after the value's) */

#include "pivoting.h"
#include "grid.h"
#include "tagged.h"

#define FOLD ARGMAX_SCANNED  /* items that gather the participants' candidates */
#ifndef GRID_GROUPS
#define GRID_GROUPS FOLD   /* the most work-groups of a launch (any count works) */
#endif
#define GRID_CANDS ((GRID_GROUPS + FOLD - 1) / FOLD)   /* candidates an item loads at once */

/* The participant that owns row r of the panel that starts at row c0, and
 * the rows of this item: register row i < regs is block me + i*count; a slot
 * i >= regs holds no row (n: past every row, so every test of it fails). */
#define OWNER(r) ((((r) - c0) / WY) % count)
#define REG_ROW(i) ((i) < regs ? c0 + (me + (i) * count) * WY + y : n)

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void getrf_grid(__global real *a, const int lda, const int n, const int c0, const int w,
                __global int *piv, __global int *info, volatile __global int *joins,
                const int slot, volatile __global long *shared, const int tag0, const int rpi)
{
    __local real vals[WY], top_vals[FOLD];       /* this work-group's candidates; the */
    __local int rows[WY], top_rows[FOLD];        /* participants' folded to FOLD */
    __local real xs[2][RPI > 0 ? RPI * WY : 1];     /* column j of the register rows, by parity */
    __local int joined[2];
    const int x = get_local_id(0), y = get_local_id(1), lid = y * WX + x;
    const int groups = get_num_groups(0);
    int count;
    const int me = grid_join(joins + slot, groups, lid, joined, &count);
    const int act = me >= 0;        /* a work-group that takes no part still meets every
                                       barrier: PoCL loses work-items' values across a
                                       barrier behind a branch (arrival.h) */
    volatile __global long *cands = shared;         /* [2][groups][SLOT_WORDS] */
    volatile __global words *diag = (volatile __global words *)(cands + 2 * groups * SLOT_WORDS);
    volatile __global words *copies = diag + 2 * PW;   /* [2][groups][PW] */
    const int blocks = (n - c0 + WY - 1) / WY;
    const int regs = min(rpi, RPI);                 /* register rows per item */
    const int spill = me + regs * count;            /* the first block kept in memory */

    real v[RPI > 0 ? RPI : 1][CPI];                 /* register rows, columns x + k*WX */
    #pragma unroll
    for (int i = 0; i < RPI; i++) {
        const int r = act ? REG_ROW(i) : n;
        #pragma unroll
        for (int k = 0; k < CPI; k++)
            v[i][k] = (r < n && x + k * WX < w) ? a[AT(r, c0 + x + k * WX, lda)] : ZERO;
    }

    /* the candidates for column c0 */
    real best = -ONE;
    int best_row = c0;
    if (act && x == 0) {
        #pragma unroll
        for (int i = 0; i < RPI; i++)
            if (REG_ROW(i) < n && fabs(v[i][0]) > best) { best = fabs(v[i][0]); best_row = REG_ROW(i); }
        for (int b = spill; b < blocks; b += count) {
            const int r = c0 + b * WY + y;
            if (r < n && fabs(a[AT(r, c0, lda)]) > best) { best = fabs(a[AT(r, c0, lda)]); best_row = r; }
        }
    }

    for (int j = 0; j < w; j++) {
        const int col = c0 + j, par = j & 1, tag = tag0 + j;

        /* 1. publish this work-group's candidate for col with a copy of its row,
         *    and (its owner) a copy of row col.  Only the items on column col
         *    (x == j % WX) hold candidates for it, one per y; they also hand the
         *    others column j of their register rows (xs, by parity: a fast item
         *    may write column j+1's while others still read column j's). */
        if (x == j % WX) {
            vals[y] = best;
            rows[y] = best_row;
            #pragma unroll
            for (int i = 0; i < RPI; i++) {
                real xj = ZERO;
                #pragma unroll
                for (int k = 0; k < CPI; k++)
                    xj = k == j / WX ? v[i][k] : xj;
                xs[par][y * RPI + i] = xj;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);   /* they, and the rows in
                                                                 memory, are stored */
        real mine;                                  /* (without pivoting too: unused) */
        const int cand = argmax_scan(vals, rows, WY, &mine);
        volatile __global words *to = copies + (par * groups + me) * PW;
        volatile __global words *dto = diag + par * PW;
        if (act) {
            if (lid == 0) {
                volatile __global long *at = cands + (par * groups + me) * SLOT_WORDS;
                *(volatile __global words *)at = TAGGED(mine, tag);
                at[CAND_ROW] = WORD(cand, tag);
            }
            #pragma unroll
            for (int i = 0; i < RPI; i++) {
                const int r = REG_ROW(i);
                if ((r == cand && mine >= ZERO) || r == col)
                    #pragma unroll
                    for (int k = 0; k < CPI; k++)
                        if (x + k * WX < w) {
                            if (r == cand && mine >= ZERO) to[x + k * WX] = TAGGED(v[i][k], tag);
                            if (r == col) dto[x + k * WX] = TAGGED(v[i][k], tag);
                        }
            }
            const int cand_b = (cand - c0) / WY, col_b = (col - c0) / WY;
            if (mine >= ZERO && cand_b >= spill)
                for (int jc = lid; jc < w; jc += WG)
                    to[jc] = TAGGED(a[AT(cand, c0 + jc, lda)], tag);
            if (OWNER(col) == me && col_b >= spill)
                for (int jc = lid; jc < w; jc += WG)
                    dto[jc] = TAGGED(a[AT(col, c0 + jc, lda)], tag);
        }

        /* 2. every participant's candidate, once there: items lid < FOLD take the
         *    participants lid, lid + FOLD, ..., GRID_CANDS at a time with all their
         *    loads in flight before the tests (this work-group's own from registers:
         *    a CPU device may run a work-group's items one after another between
         *    barriers, so no item waits for a word another item of its work-group
         *    stores in the same stretch); then the pivot row p and its values u, and d */
        if (lid < FOLD) {
            real top = -ONE;
            int top_row = col;
            for (int g0 = 0; g0 < count; g0 += FOLD * GRID_CANDS) {
                real value[GRID_CANDS];
                int row[GRID_CANDS], there;
                do {
                    there = 1;
                    #pragma unroll
                    for (int c = 0; c < GRID_CANDS; c++) {
                        const int g = g0 + lid + c * FOLD;
                        volatile __global long *at =
                            cands + (par * groups + min(g, groups - 1)) * SLOT_WORDS;
                        const words vw = *(volatile __global words *)at;
                        const long rw = at[CAND_ROW];
                        value[c] = g == me ? mine : VALUE(vw);
                        row[c] = g == me ? cand : WORD_BITS(rw);
                        there &= (g >= count) | (g == me) | (CARRY(vw, tag) & (WORD_TAG(rw) == tag));
                    }
                } while (!there);
                #pragma unroll
                for (int c = 0; c < GRID_CANDS; c++)
                    if (g0 + lid + c * FOLD < count)
                        KEEP_BEST(value[c], row[c], top, top_row)
            }
            top_vals[lid] = top;
            top_rows[lid] = top_row;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        real value;
        const int winner = argmax_scan(top_vals, top_rows, FOLD, &value);
#if NO_PIVOT
        const int p = col;
#else
        const int p = value >= ZERO ? winner : col;     /* all NaN: keep the diagonal */
#endif
        /* this item's columns of row p and of d, loaded together (every load in
         * flight before the test of their tags) */
        volatile __global words *from = (p == col || !act) ? dto
            : copies + (par * groups + OWNER(p)) * PW;
        real pivot, dj, urow[CPI], drow[CPI], u[CPI];
        int there;
        do {
            const words pw = from[j], djw = dto[j];
            pivot = VALUE(pw);
            dj = VALUE(djw);
            there = CARRY(pw, tag) & CARRY(djw, tag);
            #pragma unroll
            for (int k = 0; k < CPI; k++) {
                const int jc = min(x + k * WX, w - 1);  /* columns past w: any real's words */
                const words uw = from[jc], dw = dto[jc];
                urow[k] = VALUE(uw);
                drow[k] = VALUE(dw);
                there &= CARRY(uw, tag) & CARRY(dw, tag);
            }
        } while (act && !there);
        const real inv = ONE / pivot;
        const int by_inv = fabs(pivot) >= REAL_MIN;    /* the same in every item */
        #pragma unroll
        for (int k = 0; k < CPI; k++)
            u[k] = x + k * WX > j && x + k * WX < w ? urow[k] : ZERO;

        /* 3. this work-group's rows below col (slot p takes the old row col, d)
         *    and their best candidate for col+1 */
        best = -ONE;
        best_row = col + 1;
        real l[RPI > 0 ? RPI : 1];                  /* the register rows' multipliers */
        #pragma unroll
        for (int i = 0; i < RPI; i++)
            l[i] = act && REG_ROW(i) == p ? dj : xs[par][y * RPI + i];
        if (by_inv) {                               /* one branch, no division, in the */
            #pragma unroll                          /* common case */
            for (int i = 0; i < RPI; i++)
                l[i] *= inv;
        } else if (pivot != ZERO) {
            #pragma unroll
            for (int i = 0; i < RPI; i++)
                l[i] /= pivot;
        }
        #pragma unroll
        for (int i = 0; i < RPI; i++) {
            const int r = REG_ROW(i);
            if (act && r == p)
                #pragma unroll
                for (int k = 0; k < CPI; k++)
                    v[i][k] = drow[k];
            if (act && r > col && r < n) {
                real next = -ONE;
                #pragma unroll
                for (int k = 0; k < CPI; k++) {
                    const int jc = x + k * WX;
                    v[i][k] = jc == j ? l[i] : v[i][k] - l[i] * u[k];
                    next = jc == j + 1 ? fabs(v[i][k]) : next;
                }
                if (next > best) { best = next; best_row = r; }
            }
        }
        const int b0 = max(spill, (col + 1 - c0) / WY);
        int b1 = blocks;                            /* its first block in memory below col */
        if (act && b0 < blocks)
            b1 = b0 + ((me - b0 % count) + count) % count;
        if (act) {
            for (int b = b1; b < blocks; b += count) {
                const int r = c0 + b * WY + y;
                if (r <= col || r >= n)
                    continue;
                const int from_d = r == p;
                const real xc = from_d ? dj : a[AT(r, col, lda)];
                const real l = pivot == ZERO ? xc : multiplier(xc, pivot, inv);
                #pragma unroll
                for (int k = 0; k < CPI; k++) {
                    const int jc = x + k * WX;
                    if (jc > j && jc < w) {
                        const real t = (from_d ? drow[k] : a[AT(r, c0 + jc, lda)]) - l * u[k];
                        a[AT(r, c0 + jc, lda)] = t;
                        if (jc == j + 1 && fabs(t) > best) { best = fabs(t); best_row = r; }
                    }
                    if (from_d && jc < j)               /* the multipliers of the old row col */
                        a[AT(r, c0 + jc, lda)] = drow[k];
                }
            }
            if (OWNER(col) == me && y == (col - c0) % WY)   /* row col is final: u */
                #pragma unroll
                for (int k = 0; k < CPI; k++)
                    if (x + k * WX < w)
                        a[AT(col, c0 + x + k * WX, lda)] = urow[k];
            if (me == 0 && lid == 0) {
                piv[col] = p;
                if (pivot == ZERO && *info == 0)
                    *info = col + 1;
            }
        }
        /* in memory, the multipliers replace column col once every item has read it */
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (act && x == j % WX)
            for (int b = b1; b < blocks; b += count) {
                const int r = c0 + b * WY + y;
                if (r > col && r < n) {
                    const real xc = r == p ? dj : a[AT(r, col, lda)];
                    a[AT(r, col, lda)] = pivot == ZERO ? xc : multiplier(xc, pivot, inv);
                }
            }
    }

    /* the register rows below the panel's diagonal block (the rows above it
     * were written as the pivot rows u of their columns) */
    #pragma unroll
    for (int i = 0; i < RPI; i++) {
        const int r = act ? REG_ROW(i) : n;
        if (r >= c0 + w && r < n)
            #pragma unroll
            for (int k = 0; k < CPI; k++)
                if (x + k * WX < w)
                    a[AT(r, c0 + x + k * WX, lda)] = v[i][k];
    }
}
