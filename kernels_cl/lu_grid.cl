/* lu_grid.cl -- a tall panel of the blocked LU in one launch.
 *
 * getrf_grid factors the m x w panel a[c0:n, c0:c0+w] (w <= CPI*WX) with
 * partial pivoting, interchanging rows inside the panel only (the caller
 * applies them to the other columns), as the per-column launches of lu_inplace.cl
 * do, but with one barrier across work-groups per column instead of one
 * launch.  The participating work-groups (grid.h) share the rows: each
 * takes the blocks of WY rows b = id, id + count, ... (b counted from row
 * c0) and keeps the first regs = min(rpi, RPI) of them (rpi an argument) in
 * registers for the whole launch, the rest in memory.  Column col takes one
 * barrier:
 *
 *   1. each work-group publishes its best candidate for col (largest
 *      |a[r, col]|, lowest row on ties) with a copy of that row, and the
 *      owner of row col a copy of it (d); all meet at the barrier;
 *   2. every work-group reduces the candidates to the pivot row p and takes
 *      u = a[p, c0:c0+w] from the copy its owner published (d when p = col);
 *   3. every work-group updates its rows r > col: a[r, c] -= l_r u_c for the
 *      panel columns c > col with l_r = a[r, col] / u_col, stored in place of
 *      a[r, col] (once every item has read it, for rows in memory); the row
 *      in slot p becomes the old row col (d, multipliers included) first; the
 *      item on column col+1 keeps its rows' best candidate; the owner of row
 *      col writes u (with row p's multipliers) into it: row col is final.
 * At the end the register rows below the panel's top w rows are stored.
 * The copies go to buffers of two parities (by column), so that nobody
 * overwrites a copy that a slower work-group may still read; only the owner
 * of a matrix row reads or writes it.  The candidates and copies are stored
 * by atomic exchanges that each item waits for before the barrier (publish.h):
 * with plain stores another work-group, past the barrier, now and then read a
 * stale copy, one an earlier column left (H200, float32: 2 wrong factors in
 * 45, n = 8447 and 10243, the rest of a panel wrong from one column on;
 * benchmarks/results/nvidia-h200-2026-12-02-grid-publish.txt); the wait costs
 * sgetrf 4096 / 8192 15-17 %, dgetrf 4096 / 16384 9 / 5 %.
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
 * Arguments: piv and info as in lu_inplace.cl; syncs[2*slot], syncs[2*slot+1]: 0
 * before the launch (join state, barrier counter); cand_val, cand_row:
 * [2][groups] candidates; cand_copy: [2][groups][CPI*WX] their rows; diag:
 * [2][CPI*WX] the next diagonal row; groups: the work-groups launched; rpi:
 * the register rows per item this panel asks for (at most RPI are kept).
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

#include "pivoting.h"
#include "grid.h"
#include "publish.h"

/* A store that other work-groups read after the next grid_sync: an atomic exchange
 * (publish.h) whose result the item waits for before that barrier. */
#define SHARE(p, v) (seen ^= publish((p), (v)))
#define SHARE_INT(p, v) (seen ^= atomic_xchg((p), (v)))

/* The participant that owns row r of the panel that starts at row c0, and
 * the rows of this item: register row i < regs is block me + i*count; a slot
 * i >= regs holds no row (n: past every row, so every test of it fails). */
#define OWNER(r) ((((r) - c0) / WY) % count)
#define REG_ROW(i) ((i) < regs ? c0 + (me + (i) * count) * WY + y : n)

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void getrf_grid(__global real *a, const int lda, const int n, const int c0, const int w,
                __global int *piv, __global int *info, volatile __global int *syncs,
                const int slot, volatile __global real *cand_val, volatile __global int *cand_row,
                volatile __global real *cand_copy, volatile __global real *diag,
                const int rpi)
{
    __local real vals[WG];
    __local int rows[WG];
    __local real xs[RPI > 0 ? RPI * WY : 1];        /* column j of the register rows */
    __local int shared[2];
    const int x = get_local_id(0), y = get_local_id(1), lid = y * WX + x;
    const int groups = get_num_groups(0);
    volatile __global int *sync = syncs + 2 * slot;
    int count;
    const int me = grid_join(sync, groups, lid, shared, &count);
    const int act = me >= 0;
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
        const int col = c0 + j, par = j & 1;

        /* 1. publish this work-group's candidate for col with a copy of its row,
         *    and (its owner) a copy of row col; meet the others.  Only the items
         *    on column col (x == j % WX) hold candidates for it, one per y. */
        if (x == j % WX) {
            vals[y] = best;
            rows[y] = best_row;
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);   /* they, and the rows in
                                                                 memory, are stored */
#if NO_PIVOT
        const real mine = -ONE;
        const int cand = col;
#else
        real mine;
        const int cand = argmax_scan(vals, rows, WY, &mine);
#endif
        int seen = 0;                               /* publish.h: what the stores return */
        if (act) {
            if (lid == 0) {
                SHARE(cand_val + par * groups + me, mine);
                SHARE_INT(cand_row + par * groups + me, cand);
            }
            volatile __global real *to = cand_copy + (par * groups + me) * PW;
            #pragma unroll
            for (int i = 0; i < RPI; i++) {
                const int r = REG_ROW(i);
                if ((r == cand && mine >= ZERO) || r == col)
                    #pragma unroll
                    for (int k = 0; k < CPI; k++)
                        if (x + k * WX < w) {
                            if (r == cand && mine >= ZERO) SHARE(to + x + k * WX, v[i][k]);
                            if (r == col) SHARE(diag + par * PW + x + k * WX, v[i][k]);
                        }
            }
            const int cand_b = (cand - c0) / WY, col_b = (col - c0) / WY;
            if (mine >= ZERO && cand_b >= spill)
                for (int jc = lid; jc < w; jc += WG)
                    SHARE(to + jc, a[AT(cand, c0 + jc, lda)]);
            if (OWNER(col) == me && col_b >= spill)
                for (int jc = lid; jc < w; jc += WG)
                    SHARE(diag + par * PW + jc, a[AT(col, c0 + jc, lda)]);
        }
        if (act && PUBLISHED(seen))                 /* wait for them; stores what lid 0 did */
            cand_val[par * groups + me] = mine;
        grid_sync(sync + 1, (j + 1) * count, act, lid);

        /* 2. the pivot row p and its values u */
#if NO_PIVOT
        const int p = col;
#else
        real value;
        const int winner = wg_argmax_stored(cand_val + par * groups, cand_row + par * groups,
                                            count, col, vals, rows, &value);
        const int p = value >= ZERO ? winner : col;     /* all NaN: keep the diagonal */
#endif
        volatile __global real *dcopy = diag + par * PW;
        volatile __global real *ucopy = (p == col || !act) ? dcopy
            : cand_copy + (par * groups + OWNER(p)) * PW;
        const real pivot = act ? ucopy[j] : ONE;
        const real inv = ONE / pivot;
        /* this item's columns of row p and of d, loaded together by every item: the
         * owner of row p then finds d in registers, not behind a round trip of its own
         * (H200, sgetrf 4096 16.5 -> 15.7 ms, 8192 46.6 -> 45.9, float64 level) */
        real urow[CPI], drow[CPI], u[CPI];
        #pragma unroll
        for (int k = 0; k < CPI; k++) {
            const int jc = x + k * WX;
            urow[k] = jc < w ? ucopy[jc] : ZERO;
            drow[k] = jc < w ? dcopy[jc] : ZERO;
            u[k] = (act && jc > j) ? urow[k] : ZERO;
        }

        /* 3. this work-group's rows below col (slot p takes the old row col, d)
         *    and their best candidate for col+1 */
        best = -ONE;
        best_row = col + 1;
        #pragma unroll
        for (int i = 0; i < RPI; i++) {
            if (act && REG_ROW(i) == p)
                #pragma unroll
                for (int k = 0; k < CPI; k++)
                    v[i][k] = drow[k];
            if (x == j % WX) {                      /* column j: element j / WX */
                real xj = ZERO;
                #pragma unroll
                for (int k = 0; k < CPI; k++)
                    xj = k == j / WX ? v[i][k] : xj;
                xs[y * RPI + i] = xj;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int i = 0; i < RPI; i++) {
            const int r = REG_ROW(i);
            const real xc = xs[y * RPI + i];
            const real l = pivot == ZERO ? xc : multiplier(xc, pivot, inv);
            if (act && r > col && r < n) {
                real next = -ONE;
                #pragma unroll
                for (int k = 0; k < CPI; k++) {
                    const int jc = x + k * WX;
                    v[i][k] = jc == j ? l : v[i][k] - l * u[k];
                    next = jc == j + 1 ? fabs(v[i][k]) : next;
                }
                if (next > best) { best = next; best_row = r; }
            }
        }
        if (act) {
            const int b0 = max(spill, (col + 1 - c0) / WY);
            for (int b = b0 + ((me - b0 % count) + count) % count; b < blocks; b += count) {
                const int r = c0 + b * WY + y;
                if (r <= col || r >= n)
                    continue;
                const int from_d = r == p;
                const real xc = from_d ? dcopy[j] : a[AT(r, col, lda)];
                const real l = pivot == ZERO ? xc : multiplier(xc, pivot, inv);
                #pragma unroll
                for (int k = 0; k < CPI; k++) {
                    const int jc = x + k * WX;
                    if (jc > j && jc < w) {
                        const real t = (from_d ? dcopy[jc] : a[AT(r, c0 + jc, lda)]) - l * u[k];
                        a[AT(r, c0 + jc, lda)] = t;
                        if (jc == j + 1 && fabs(t) > best) { best = fabs(t); best_row = r; }
                    }
                }
                if (from_d)                          /* the multipliers of the old row col */
                    for (int jc = x; jc < j; jc += WX)
                        a[AT(r, c0 + jc, lda)] = dcopy[jc];
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
        if (act && x == j % WX) {
            const int b0 = max(spill, (col + 1 - c0) / WY);
            for (int b = b0 + ((me - b0 % count) + count) % count; b < blocks; b += count) {
                const int r = c0 + b * WY + y;
                if (r > col && r < n) {
                    const real xc = r == p ? dcopy[j] : a[AT(r, col, lda)];
                    a[AT(r, col, lda)] = pivot == ZERO ? xc : multiplier(xc, pivot, inv);
                }
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
