/* lu_grid.cl -- a tall panel of the blocked LU in one launch.
 *
 * getrf_grid factors the m x w panel a[c0:n, c0:c0+w] (w <= CPI*WX) with
 * partial pivoting, interchanging rows inside the panel only (the caller
 * applies them to the other columns), as the per-column launches of lu.cl
 * do, but with one barrier across work-groups per column instead of one
 * launch: the participating work-groups (grid.h) share the rows, each the
 * blocks of WY rows b = id, id + count, ... (b counted from row c0), and
 * for column col
 *
 *   1. every work-group reduces the candidates the participants published
 *      (largest |a[r, col]|, lowest row on ties) to the pivot row p and
 *      takes the pivot row u = a[p, c0:c0+w] from the copy its owner
 *      published (the diagonal row's copy when p = col);
 *   2. every work-group updates its rows r > col: a[r, c] -= l_r u_c for
 *      the panel columns c > col with l_r = a[r, col] / u_col (the row in
 *      slot p is the old row col: its published copy d, multipliers
 *      included), and the item on column col+1 keeps its rows' best
 *      candidate; once all its items have read column col, l_r replaces
 *      a[r, col]; the owner of row col writes u (with row p's multipliers)
 *      into it;
 *   3. each work-group publishes its best candidate for column col+1 with a
 *      copy of that row, the owner of row col+1 a copy of it, then all meet
 *      at the barrier.
 * The copies go to buffers of two parities (by column), so that nobody
 * overwrites a copy that a slower work-group may still read.  Only the owner
 * of a matrix row ever reads or writes it.
 *
 * Work-groups are WX x WY items: item (x, y) takes the columns
 * col+1+x+k*WX (k < CPI) of the rows at position y of its work-group's
 * blocks.  NO_PIVOT = 1 takes the diagonal as pivot (teaching only).
 *
 * Arguments: piv and info as in lu.cl; syncs[2*slot], syncs[2*slot+1]: 0
 * before the launch (join state, barrier counter); cand_val, cand_row:
 * [2][groups] candidates; cand_copy: [2][groups][CPI*WX] their rows; diag:
 * [2][CPI*WX] the next diagonal row; groups: the work-groups launched.
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
#define WG (WX * WY)
#define PW (CPI * WX)

#include "pivoting.h"
#include "grid.h"

/* The participant that owns row r of the panel that starts at row c0. */
#define OWNER(r) ((((r) - c0) / WY) % count)

/* Publish this work-group's candidate (best, best_row) for column col, a
 * copy of its row, and (its owner) a copy of row col, into parity par.
 * Every item of every work-group calls it; act = 0 passes the barriers. */
void publish(__global const real *a, const int lda, const int c0, const int w,
             const int col, const int par, const int me, const int count, const int act,
             const real best, const int best_row, const int groups,
             volatile __global real *cand_val, volatile __global int *cand_row,
             volatile __global real *cand_copy, volatile __global real *diag,
             __local real *vals, __local int *rows, const int lid)
{
    barrier(CLK_GLOBAL_MEM_FENCE);                   /* this work-group's rows are stored */
#if NO_PIVOT
    const real value = -ONE;
    const int cand = col;
#else
    real value;
    const int cand = wg_reduce_argmax(best, best_row, vals, rows, &value);
#endif
    if (!act)
        return;
    if (lid == 0) {
        cand_val[par * groups + me] = value;
        cand_row[par * groups + me] = cand;
    }
    if (value >= ZERO)
        for (int j = lid; j < w; j += WG)
            cand_copy[(par * groups + me) * PW + j] = a[AT(cand, c0 + j, lda)];
    if (OWNER(col) == me)
        for (int j = lid; j < w; j += WG)
            diag[par * PW + j] = a[AT(col, c0 + j, lda)];
}

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void getrf_grid(__global real *a, const int lda, const int n, const int c0, const int w,
                __global int *piv, __global int *info, volatile __global int *syncs,
                const int slot, volatile __global real *cand_val, volatile __global int *cand_row,
                volatile __global real *cand_copy, volatile __global real *diag)
{
    __local real vals[WG];
    __local int rows[WG];
    __local int shared[2];
    const int x = get_local_id(0), y = get_local_id(1), lid = y * WX + x;
    const int groups = get_num_groups(0);
    volatile __global int *sync = syncs + 2 * slot;
    int count;
    const int me = grid_join(sync, groups, lid, shared, &count);
    const int act = me >= 0;
    const int blocks = (n - c0 + WY - 1) / WY;

    /* the candidates for column c0 */
    real best = -ONE;
    int best_row = c0;
    if (act)
        for (int b = me; b < blocks; b += count) {
            const int r = c0 + b * WY + y;
            const real v = fabs(a[AT(min(r, n - 1), c0, lda)]);
            if (x == 0 && r < n && v > best) { best = v; best_row = r; }
        }
    publish(a, lda, c0, w, c0, 0, me, count, act, best, best_row, groups, cand_val, cand_row,
            cand_copy, diag, vals, rows, lid);

    for (int j = 0; j < w; j++) {
        const int col = c0 + j, par = j & 1;
        grid_sync(sync + 1, (j + 1) * count, act, lid);

        /* 1. the pivot row p and its values u */
#if NO_PIVOT
        const int p = col;
#else
        real top = -ONE;
        int top_row = col;
        for (int i = lid; i < count; i += WG) {
            const real v = cand_val[par * groups + i];
            const int r = cand_row[par * groups + i];
            if (BEATS(v, r, top, top_row)) { top = v; top_row = r; }
        }
        real value;
        const int winner = wg_reduce_argmax(top, top_row, vals, rows, &value);
        const int p = value >= ZERO ? winner : col;     /* all NaN: keep the diagonal */
#endif
        volatile __global real *dcopy = diag + par * PW;
        volatile __global real *ucopy = (p == col || !act) ? dcopy
            : cand_copy + (par * groups + OWNER(p)) * PW;
        const real pivot = act ? ucopy[j] : ONE;
        const real inv = ONE / pivot;
        real u[CPI];
        #pragma unroll
        for (int k = 0; k < CPI; k++) {
            const int jc = j + 1 + x + k * WX;
            u[k] = (act && jc < w) ? ucopy[jc] : ZERO;
        }

        /* 2. this work-group's rows below col; the best candidate for col+1 */
        best = -ONE;
        best_row = col + 1;
        if (act) {
            const int b0 = (col + 1 - c0) / WY;
            for (int b = b0 + ((me - b0 % count) + count) % count; b < blocks; b += count) {
                const int r = c0 + b * WY + y;
                if (r <= col || r >= n)
                    continue;
                const int from_d = r == p;          /* slot p takes the old row col */
                const real xc = from_d ? dcopy[j] : a[AT(r, col, lda)];
                const real l = pivot == ZERO ? xc : multiplier(xc, pivot, inv);
                #pragma unroll
                for (int k = 0; k < CPI; k++) {
                    const int jc = j + 1 + x + k * WX;
                    if (jc < w) {
                        const real v = (from_d ? dcopy[jc] : a[AT(r, c0 + jc, lda)]) - l * u[k];
                        a[AT(r, c0 + jc, lda)] = v;
                        if (k == 0 && x == 0 && fabs(v) > best) {
                            best = fabs(v);
                            best_row = r;
                        }
                    }
                }
                if (from_d)                          /* the multipliers of the old row col */
                    for (int jc = x; jc < j; jc += WX)
                        a[AT(r, c0 + jc, lda)] = dcopy[jc];
            }
            if (p != col && OWNER(col) == me && y == (col - c0) % WY) {
                #pragma unroll
                for (int k = 0; k < CPI; k++) {
                    const int jc = j + 1 + x + k * WX;
                    if (jc < w)
                        a[AT(col, c0 + jc, lda)] = u[k];
                }
                if (x == 0)
                    a[AT(col, col, lda)] = pivot;
                for (int jc = x; jc < j; jc += WX)
                    a[AT(col, c0 + jc, lda)] = ucopy[jc];
            }
            if (me == 0 && lid == 0) {
                piv[col] = p;
                if (pivot == ZERO && *info == 0)
                    *info = col + 1;
            }
        }
        /* the multipliers l_r replace column col once every item has read it */
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (act && x == 0) {
            const int b0 = (col + 1 - c0) / WY;
            for (int b = b0 + ((me - b0 % count) + count) % count; b < blocks; b += count) {
                const int r = c0 + b * WY + y;
                if (r > col && r < n) {
                    const real xc = r == p ? dcopy[j] : a[AT(r, col, lda)];
                    a[AT(r, col, lda)] = pivot == ZERO ? xc : multiplier(xc, pivot, inv);
                }
            }
        }

        /* 3. the candidates for col+1 */
        publish(a, lda, c0, w, col + 1, par ^ 1, me, count, act && j + 1 < w, best, best_row,
                groups, cand_val, cand_row, cand_copy, diag, vals, rows, lid);
    }
}
