/* lu_crout.cl -- per-pivot LU, left-looking (Crout order): one launch per pivot.
 *
 * A is n x n, row-major, leading dimension lda, factored as ?getrf does:
 * P·A = L·U, L strictly below the diagonal (unit diagonal implied), U on and
 * above, piv[k] = row interchanged with row k (0-based).  info (one int, 0 on
 * entry) receives k+1 for the first exactly-zero pivot.
 *
 * The right-looking per-pivot LU (lu_inplace.cl) rewrites the whole active submatrix
 * at every pivot: 2(n-k)² entries read and written.  This one leaves the
 * active submatrix alone and forms, at pivot k, only what pivot k+1 needs,
 * from the finished parts of L and U (c is column k before its scaling):
 *
 *     row k of U:        u[k, j] = a[k, j] - l[k, 0:k] · u[0:k, j]        j > k
 *     column k of L:     l[i, k] = c[i] / u[k, k]                          i > k
 *     next column:       c'[i]   = a[i, k+1] - l[i, 0:k+1] · u[0:k+1, k+1] i > k
 *
 * and chooses pivot k+1 = argmax |c'[i]|: 2k(n-k) entries read, none of the
 * active submatrix written.  Same arithmetic as ?getf2, summed in another order.
 *
 * Rows stay where they are during the loop: logical row i is physical row
 * perm[i] (perm starts as the identity and receives the interchange of pivot
 * k at the end of launch k).  The host applies piv to the whole matrix
 * afterwards (laswp), which moves every row to its place.
 *
 * ut (n x n, leading dimension n) receives U transposed, ut[j, m] = u[m, j]
 * for m < j - 1: the column part of launch k reads u[0:k, k+1] from one
 * contiguous row of it instead of a strided column of A (u[k, k+1] itself
 * every column block forms in that launch).
 *
 * crout_first chooses pivot 0.  Launch k of crout_step (k = 0 .. n-2) finds
 * L's columns < k and U's rows < k finished, column k holding c in logical
 * rows >= k, piv[k] = p chosen and perm without pivot k's interchange.  Both
 * of its products are sums over m < k, split in chunks over work-groups
 * (1-D, WG items each); the last work-group to finish a block (a counter per
 * block, reset by it) adds the chunks' partial sums in chunk order and
 * finishes the block:
 *
 *   row part     block of RJ*VW columns of u[k, :] (aligned to RJ*VW, those
 *                right of k+1 kept) x chunk of MB rows of U; WG/RJ items per
 *                column, VW adjacent columns per item.
 *   column part  block of ROWS-1 rows of c' plus row k itself (slot 0, whose
 *                sum gives u[k, k+1]: every block forms it, the same way) x
 *                chunk of KC columns of L; WG/CL sub-groups of CL items, one
 *                slot after another, VW adjacent entries per item.  The block
 *                leaves its best candidate in part_val/part_row.
 *
 * The last block to finish (counter) chooses pivot k+1, stores u[k, k+1],
 * applies pivot k's interchange to perm and sets info if pivot k is zero (the
 * host checks the last pivot).
 *
 * WG, RJ, CL are powers of two, RJ <= WG, 2 * CL <= WG; VW (1, 2 or 4) divides
 * lda and n; MB >= 1 and KC a multiple of VW.  NO_PIVOT = 1 takes the diagonal
 * as pivot (teaching only: unstable).
 */
#include "common.h"
#include "pivoting.h"
#include "arrival.h"

#ifndef RJ
#define RJ 32              /* row part: items along a block's columns */
#endif
#ifndef MB
#define MB 128             /* row part: rows of U per chunk */
#endif
#ifndef CL
#define CL 32              /* column part: items per row */
#endif
#ifndef KC
#define KC 1024            /* column part: columns of L per chunk */
#endif
#ifndef RR
#define RR 2               /* column part: rows per sub-group */
#endif
#ifndef VW
#define VW 1               /* adjacent entries per item */
#endif
#ifndef UNROLL
#define UNROLL 4           /* loads in flight per item in the inner loops */
#endif
#define MLANES (WG / RJ)
#define ROWS (WG / CL * RR)   /* slots of a column-part block: row k and ROWS-1 rows */
#define RW (RJ * VW)          /* columns of a row-part block */
#define STAGE (MB > KC ? MB : KC)

/* Physical row of logical row i once pivot k (row p) is interchanged. */
#define PHYS(i) ((i) == k ? perm[p] : ((i) == p ? perm[k] : perm[i]))

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void crout_first(__global const real *a, const int lda, const int n, __global int *piv)
{
    __local real vals[WG];
    __local int rows[WG];
    const int p = wg_argmax_abs(a, lda, 0, 0, n, vals, rows);
    if (get_local_id(0) == 0)
        piv[0] = p;
}

/* Row part: this item's share of l[k, m0:m1] · u[m0:m1, j0:j0+VW]; lk and rows
 * hold l[k, m0:m1] and the physical rows of u[m0:m1, :] (local copies). */
REALV(VW) row_partial(__global const real *a, const int lda, const int j0, const int len,
                      __local const real *lk, __local const int *rows)
{
    REALV(VW) s = ZERO;
    #pragma unroll UNROLL
    for (int m = (int)get_local_id(0) / RJ; m < len; m += MLANES)
        s += lk[m] * VLOAD(VW)(0, a + AT(rows[m], j0, lda));
    return s;
}

/* Column part: this item's share of row[0:len] · u[0:len] (u: a local copy). */
real column_partial(__global const real *row, __local const real *u, const int len,
                    const int lane)
{
    const int lv = len / VW * VW;                      /* [0, lv) by vectors, then a tail */
    REALV(VW) s = ZERO;
    real x = ZERO;
    #pragma unroll UNROLL
    for (int m = lane * VW; m < lv; m += CL * VW)
        s += VLOAD(VW)(0, row + m) * VLOAD(VW)(0, u + m);
    if (lane == 0)
        for (int m = lv; m < len; m++)
            x += row[m] * u[m];
    return x + dot(s, (REALV(VW))(ONE));
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void crout_step(__global real *a, const int lda, const int n, const int k,
                __global int *perm, __global real *ut, __global int *piv, __global int *info,
                __global real *part, __global int *block_count,
                __global real *part_val, __global int *part_row, __global real *u_next,
                __global int *counter)
{
    __local real sums[WG * VW];
    __local real red[RR * WG];
    __local real slot[ROWS];
    __local int rows[WG];
    __local real stage[STAGE];
    __local int stage_rows[MB > ROWS ? MB : ROWS];
    __local int flag;
    const int lid = get_local_id(0), group = get_group_id(0);
    const int p = piv[k], rk = perm[p];
    const int row_blocks = k + 2 < n ? (n - (k + 2) / RW * RW + RW - 1) / RW : 0;
    const int row_chunks = max(1, (k + MB - 1) / MB);
    const int col_blocks = (n - k - 1 + ROWS - 2) / (ROWS - 1);
    const int col_chunks = max(1, (k + KC - 1) / KC);
    const int is_row = group < row_blocks * row_chunks;
    const int chunks = is_row ? row_chunks : col_chunks;
    const int g = is_row ? group : group - row_blocks * row_chunks;
    const int block = g / chunks, chunk = g % chunks;
    __global real *col_part = part + AT(row_chunks, 0, n);  /* after the row part's partials */
    const int lane = is_row ? lid % RJ : lid % CL, sub = lid / CL;
    const int j0 = (k + 2) / RW * RW + block * RW + lane * VW;
    const int mine = is_row && lid < RJ && j0 < n;     /* holds a sum of columns j0.. */

    /* 0. local copies of what the inner loops reuse: l[k, m] and the physical
     * rows of u[m, :] for the row part's chunk; u[m, k+1] and the slots'
     * physical rows for the column part */
    const int m0 = chunk * (is_row ? MB : KC);
    const int len = max(0, min(k, m0 + (is_row ? MB : KC)) - m0);
    if (is_row) {
        for (int m = lid; m < len; m += WG) {
            stage[m] = a[AT(rk, m0 + m, lda)];
            stage_rows[m] = perm[m0 + m];
        }
    } else {
        for (int m = lid; m < len; m += WG)
            stage[m] = ut[AT(k + 1, m0 + m, n)];
        for (int t = lid; t < ROWS; t += WG) {
            const int i = t == 0 ? k : k + t + block * (ROWS - 1);
            stage_rows[t] = i < n ? PHYS(i) : -1;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 1. this work-group's partial sums, reduced over the items that share them */
    if (is_row) {
        const REALV(VW) s = j0 < n ? row_partial(a, lda, j0, len, stage, stage_rows)
                                   : (REALV(VW))(ZERO);
        VSTORE(VW)(s, lid, sums);
    } else {
        for (int r = 0; r < RR; r++) {                 /* slot t = sub + r * WG/CL */
            const int row = stage_rows[sub + r * (WG / CL)];
            red[r * WG + lid] = row >= 0
                ? column_partial(a + AT(row, m0, lda), stage, len, lane) : ZERO;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = WG / 2; h > 0; h >>= 1) {
        if (is_row && h >= RJ && lid < h)
            for (int v = 0; v < VW; v++)
                sums[lid * VW + v] += sums[(lid + h) * VW + v];
        if (!is_row && h < CL && lane < h)
            for (int r = 0; r < RR; r++)
                red[r * WG + lid] += red[r * WG + lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* 2. partials out (a block of one chunk keeps them in local memory); the
     * block's last work-group adds them in chunk order */
    if (mine && chunks > 1)
        for (int v = 0; v < VW; v++)
            part[AT(chunk, j0 + v, n)] = sums[lid * VW + v];
    if (!is_row && lane == 0)
        for (int r = 0; r < RR; r++) {
            const int t = sub + r * (WG / CL);
            if (chunks > 1)
                col_part[(block * ROWS + t) * chunks + chunk] = red[r * WG + lid];
            else
                slot[t] = red[r * WG + lid];
        }
    const int finish = last_to_arrive(block_count + (is_row ? 0 : row_blocks) + block, chunks,
                                      1, lid, &flag);
    if (finish && mine)                                /* u[k, j] for the block's columns */
        for (int v = 0; v < VW; v++) {
            real t = chunks > 1 ? ZERO : sums[lid * VW + v];
            for (int c = 0; c < chunks && chunks > 1; c++)
                t += ((volatile __global real *)part)[AT(c, j0 + v, n)];
            const int j = j0 + v;
            if (j >= k + 2) {
                const real u = a[AT(rk, j, lda)] - t;
                a[AT(rk, j, lda)] = u;
                ut[AT(j, k, n)] = u;
            }
        }
    if (finish && !is_row && chunks > 1)
        for (int t = lid; t < ROWS; t += WG) {
            real total = ZERO;
            for (int c = 0; c < chunks; c++)
                total += ((volatile __global real *)col_part)[(block * ROWS + t) * chunks + c];
            slot[t] = total;
        }
    barrier(CLK_LOCAL_MEM_FENCE);

    /* 3. a finished column block: l[i, k], c'[i] and its candidate for pivot k+1 */
    real best = -ONE;
    int best_row = k + 1;
    const real ukk1 = is_row ? ZERO : a[AT(rk, k + 1, lda)] - slot[0];     /* u[k, k+1] */
    if (finish && !is_row) {
        const real d = a[AT(rk, k, lda)];
        for (int t = 1 + lid; t < ROWS; t += WG) {
            const int i = k + t + block * (ROWS - 1);
            if (i < n) {
                const int ri = stage_rows[t];
                const real c = a[AT(ri, k, lda)];
                const real l = d == ZERO ? c : multiplier(c, d, ONE / d);
                const real next = a[AT(ri, k + 1, lda)] - slot[t] - l * ukk1;
                a[AT(ri, k, lda)] = l;
                a[AT(ri, k + 1, lda)] = next;
#if NO_PIVOT
                const real v = i == k + 1 ? ONE : ZERO;
#else
                const real v = fabs(next);
#endif
                if (v > best) { best = v; best_row = i; }
            }
        }
    }
    real value;
    const int cand = wg_reduce_argmax(best, best_row, sums, rows, &value);
    if (finish && !is_row && lid == 0) {
        part_val[block] = value;
        part_row[block] = cand;
        if (block == 0)
            *u_next = ukk1;
    }

    /* 4. the last block to finish: pivot k+1, u[k, k+1], perm, info */
    const int last = last_to_arrive(counter, row_blocks + col_blocks, finish, lid, &flag);
    best = -ONE;
    best_row = k + 1;
    if (last)
        for (int b = lid; b < col_blocks; b += WG) {
            const real v = ((volatile __global real *)part_val)[b];
            const int r = ((volatile __global int *)part_row)[b];
            if (v > best || (v == best && r < best_row)) { best = v; best_row = r; }
        }
    const int next = wg_reduce_argmax(best, best_row, sums, rows, &value);
    if (last && lid == 0) {
        const real u = *(volatile __global real *)u_next;
        a[AT(rk, k + 1, lda)] = u;
        piv[k + 1] = next;
        if (*info == 0 && a[AT(rk, k, lda)] == ZERO)
            *info = k + 1;
        perm[p] = perm[k];
        perm[k] = rk;
    }
}
