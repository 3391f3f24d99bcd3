/* trsm.cl -- the triangular-solve kernels: diagonal blocks solved in place
 * (trsm_block) or inverted (trtri_blocks) for a GEMM to apply; and the
 * copy the BLAS-3 routines need (copy_block).
 *
 * trsm_block: solve with one triangular diagonal block (at most TRSM_NB x TRSM_NB).
 *   left = 1:  op(T) X = B,   B is nb x nrhs, one work-item per column of B
 *   left = 0:  X op(T) = B,   B is nrhs x nb, one work-item per row of B
 *   op(T) = T (trans = 0) or T^T (trans = 1); T lower (lower = 1) or upper;
 *   unit = 1 takes the diagonal of T as ones without reading it.
 *
 * Both sides are the same recurrence on the system S y = b, with S = op(T)
 * (left) or S = op(T)^T (right).  The block is staged in local memory as a
 * lower triangle: S itself where S is lower, else S with its rows and
 * columns reversed (J S J, J the reversal; y and b reversed alike), and ones
 * on the diagonal for unit = 1.  So every case is one forward substitution,
 * and the side, triangle, transpose and diagonal are kernel arguments: one
 * program per TRSM_NB and TRSM_REG (each program is a build of its own).
 * TRSM_REG = 1 keeps each work-item's y in registers (column-oriented,
 * written with literal indices), 0 in a private array (row-oriented loops).
 * X overwrites B.  Larger triangles are solved block by block from the host
 * with GEMM updates in between (oclla.blas.trsm).
 *
 * trtri_blocks: W_i = inverse of the i-th nb x nb diagonal block of the m x m
 * triangle T (the last one may be smaller; lower or upper, unit diagonal or
 * not, as trsm_block), one work-group of nb items per block, item j
 * computing column j by substitution (an upper block through J T J, as
 * above).  W is m x nb, block i in rows i*nb ..; entries outside the
 * triangle of each block are set to zero.
 *
 * copy_block: D (rows x cols) = S, both row-major views.
 */
#include "common.h"
#include "unroll.h"

#ifndef TRSM_NB
#define TRSM_NB 32         /* largest diagonal block a work-group stages */
#endif
#ifndef TRSM_REG
#define TRSM_REG 0         /* trsm_block: 1 = right-hand side in registers (TRSM_NB <= 64) */
#endif

/* index i of the staged lower triangle of order n in the block's own order:
 * reversed (flip) where the block's S is upper */
#define ORDER(i, n) (flip ? (n) - 1 - (i) : (i))

/* Ts (lower, row stride TRSM_NB + 1) = the nb x nb block at T as a lower
 * triangle: entry (i, p) is S(ORDER(i, nb), ORDER(p, nb)), S(r, c) = T(r, c) where
 * `direct`, else T(c, r); ones on the diagonal where `unit`. */
#define STAGE_LOWER(Ts, T, ldt, nb, direct, flip, unit, first, step)          \
    for (int idx = (first); idx < (nb) * (nb); idx += (step)) {               \
        const int i = idx / (nb), p = idx % (nb);                            \
        const int r = ORDER(i, nb), c = ORDER(p, nb);                         \
        Ts[i][p] = ((unit) && i == p) ? ONE                                   \
                 : T[(direct) ? AT(r, c, ldt) : AT(c, r, ldt)];               \
    }

__kernel void trsm_block(const int nb, const int nrhs,
                         __global const real *T, const long t_off, const int ldt,
                         __global real *B, const long b_off, const int ldb,
                         const int left, const int lower, const int trans, const int unit)
{
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    T += t_off;
    B += b_off;
    const int flip = ((lower != trans) == left) == 0;      /* S upper: reversed */
    STAGE_LOWER(Ts, T, ldt, nb, left != trans, flip, unit, get_local_id(0),
                get_local_size(0))
    barrier(CLK_LOCAL_MEM_FENCE);

    const int v = get_global_id(0);    /* which column (left) or row (right) of B */
    if (v >= nrhs) return;
#define Y(j) B[left ? AT(ORDER(j, nb), v, ldb) : AT(v, ORDER(j, nb), ldb)]
#if TRSM_REG
    /* y[] is written with literal indices only (unroll.h), so it stays in
     * registers; column-oriented substitution: y[p] is final, then
     * subtracted from the entries still to solve */
    real y[64];
#define LOAD_Y(j) if ((j) < TRSM_NB && (j) < nb) y[j] = Y(j);
    ALL64(LOAD_Y)
#define ELIM(p, i) if ((i) > (p) && (i) < TRSM_NB && (i) < nb) y[i] -= Ts[i][p] * y[p];
#define SOLVE(p) if ((p) < TRSM_NB && (p) < nb) { y[p] /= Ts[p][p]; EACH64(ELIM, p) }
    ALL64(SOLVE)
#define STORE_Y(j) if ((j) < TRSM_NB && (j) < nb) Y(j) = y[j];
    ALL64(STORE_Y)
#else
    real y[TRSM_NB];
    for (int j = 0; j < nb; j++)
        y[j] = Y(j);
    for (int i = 0; i < nb; i++) {
        real s = y[i];
        for (int p = 0; p < i; p++)
            s -= Ts[i][p] * y[p];
        y[i] = s / Ts[i][i];
    }
    for (int j = 0; j < nb; j++)
        Y(j) = y[j];
#endif
#undef Y
}

__kernel void trtri_blocks(const int m, const int nb,
                           __global const real *T, const long t_off, const int ldt,
                           __global real *W, const int ldw, const int lower, const int unit)
{
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    const int k0 = get_group_id(0) * nb;
    const int kb = min(nb, m - k0);
    const int j = get_local_id(0);
    const int flip = !lower;
    T += t_off + AT(k0, k0, ldt);
    W += AT(k0, 0, ldw);
    STAGE_LOWER(Ts, T, ldt, kb, 1, flip, unit, j, get_local_size(0))
    barrier(CLK_LOCAL_MEM_FENCE);
    if (j >= kb)
        return;
    /* column j of the inverse of the staged lower block: x_j = 1/Ts_jj, then the
     * other entries by substitution, reading those already found from W (entry
     * (i, j) of the staged order is W(ORDER(i, kb), ORDER(j, kb))) */
#define X(i) W[AT(ORDER(i, kb), ORDER(j, kb), ldw)]
    for (int i = 0; i < j; i++)
        X(i) = ZERO;
    X(j) = ONE / Ts[j][j];
    for (int i = j + 1; i < kb; i++) {
        real s = ZERO;
        for (int p = j; p < i; p++)
            s += Ts[i][p] * X(p);
        X(i) = -s / Ts[i][i];
    }
#undef X
}

__kernel void copy_block(const int rows, const int cols,
                         __global const real *S, const long s_off, const int lds,
                         __global real *D, const long d_off, const int ldd)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < rows && c < cols)
        D[d_off + AT(r, c, ldd)] = S[s_off + AT(r, c, lds)];
}
