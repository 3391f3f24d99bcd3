/* trsm.cl -- the triangular-solve kernels: diagonal blocks solved in place
 * (trsm_block) or inverted (trtri_blocks) for a GEMM to apply; and the
 * copy the BLAS-3 routines need (copy_block).
 *
 * trsm_block: solve with one triangular diagonal block (at most TRSM_NB x TRSM_NB).
 *   SIDE_LEFT = 1:  op(T) X = B,   B is nb x nrhs, one work-item per column of B
 *   SIDE_LEFT = 0:  X op(T) = B,   B is nrhs x nb, one work-item per row of B
 *   op(T) = T (TRANS = 0) or T^T (TRANS = 1); T lower (LOWER = 1) or upper;
 *   UNIT = 1 takes the diagonal of T as ones without reading it.
 *
 * Both sides are the same recurrence on the system S y = b, with S = op(T)
 * (left) or S = op(T)^T (right):  S lower -> forward, S upper -> backward.
 * TRSM_REG = 1 keeps each work-item's y in registers (column-oriented,
 * written with literal indices), 0 in a private array (row-oriented loops).
 * T is staged in local memory; X overwrites B.  Larger triangles are solved
 * block by block from the host with GEMM updates in between (oclla.blas.trsm).
 *
 * trtri_blocks: W_i = inverse of the i-th nb x nb diagonal block of the m x m
 * triangle T (the last one may be smaller), one work-group of nb items per
 * block, item j computing column j by substitution.  W is m x nb, block i in
 * rows i*nb ..; entries outside the triangle of each block are set to zero.
 *
 * copy_block: D (rows x cols) = S, both row-major views.
 */
#include "common.h"
#include "unroll.h"

#ifndef TRSM_NB
#define TRSM_NB 32         /* largest diagonal block a work-group stages */
#endif
#ifndef SIDE_LEFT
#define SIDE_LEFT 1
#endif
#ifndef LOWER
#define LOWER 1
#endif
#ifndef TRANS
#define TRANS 0
#endif
#ifndef UNIT
#define UNIT 0
#endif
#ifndef TRSM_REG
#define TRSM_REG 0         /* trsm_block: 1 = right-hand side in registers (TRSM_NB <= 64) */
#endif

/* op(T)[i][p] from the staged block */
#if TRANS == 0
#define OPT(i, p) Ts[i][p]
#else
#define OPT(i, p) Ts[p][i]
#endif

#if SIDE_LEFT
#define S(i, p) OPT(i, p)
#define S_LOWER (LOWER != TRANS)
#define Y(j) B[AT(j, v, ldb)]
#else
#define S(i, p) OPT(p, i)
#define S_LOWER (LOWER == TRANS)
#define Y(j) B[AT(v, j, ldb)]
#endif

__kernel void trsm_block(const int nb, const int nrhs,
                         __global const real *T, const long t_off, const int ldt,
                         __global real *B, const long b_off, const int ldb)
{
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    T += t_off;
    B += b_off;
    for (int idx = get_local_id(0); idx < nb * nb; idx += get_local_size(0))
        Ts[idx / nb][idx % nb] = T[AT(idx / nb, idx % nb, ldt)];
    barrier(CLK_LOCAL_MEM_FENCE);

    const int v = get_global_id(0);    /* which column (left) or row (right) of B */
    if (v >= nrhs) return;
#if TRSM_REG
    /* y[] is written with literal indices only (unroll.h), so it stays in
     * registers; column-oriented substitution: y[p] is final, then
     * subtracted from the entries still to solve */
    real y[64];
#define LOAD_Y(j) if ((j) < TRSM_NB && (j) < nb) y[j] = Y(j);
    ALL64(LOAD_Y)
#if UNIT
#define PIVOT_Y(p)
#else
#define PIVOT_Y(p) y[p] /= S(p, p);
#endif
#if S_LOWER
#define ELIM(p, i) if ((i) > (p) && (i) < TRSM_NB && (i) < nb) y[i] -= S(i, p) * y[p];
#define SOLVE(p) if ((p) < TRSM_NB && (p) < nb) { PIVOT_Y(p) EACH64(ELIM, p) }
    ALL64(SOLVE)
#else
#define ELIM(p, i) if ((i) < (p)) y[i] -= S(i, p) * y[p];
#define SOLVE(p) if ((p) < TRSM_NB && (p) < nb) { PIVOT_Y(p) EACH64(ELIM, p) }
    ALL64_DOWN(SOLVE)
#endif
#define STORE_Y(j) if ((j) < TRSM_NB && (j) < nb) Y(j) = y[j];
    ALL64(STORE_Y)
#else
    real y[TRSM_NB];
    for (int j = 0; j < nb; j++)
        y[j] = Y(j);
#if S_LOWER
    for (int i = 0; i < nb; i++) {
        real s = y[i];
        for (int p = 0; p < i; p++)
            s -= S(i, p) * y[p];
#else
    for (int i = nb - 1; i >= 0; i--) {
        real s = y[i];
        for (int p = i + 1; p < nb; p++)
            s -= S(i, p) * y[p];
#endif
#if UNIT
        y[i] = s;
#else
        y[i] = s / S(i, i);
#endif
    }
    for (int j = 0; j < nb; j++)
        Y(j) = y[j];
#endif
}

__kernel void trtri_blocks(const int m, const int nb,
                           __global const real *T, const long t_off, const int ldt,
                           __global real *W, const int ldw)
{
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    const int k0 = get_group_id(0) * nb;
    const int kb = min(nb, m - k0);
    const int j = get_local_id(0);
    T += t_off + AT(k0, k0, ldt);
    W += AT(k0, 0, ldw);
    for (int idx = j; idx < kb * kb; idx += get_local_size(0))
        Ts[idx / kb][idx % kb] = T[AT(idx / kb, idx % kb, ldt)];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (j >= kb)
        return;
#if UNIT
#define DIAG(i) ONE
#else
#define DIAG(i) Ts[i][i]
#endif
    /* column j of the inverse: x_j = 1/T_jj, then the other entries of the
     * triangle by substitution, reading the entries already found from W */
#if LOWER
    for (int i = 0; i < j; i++)
        W[AT(i, j, ldw)] = ZERO;
    W[AT(j, j, ldw)] = ONE / DIAG(j);
    for (int i = j + 1; i < kb; i++) {
        real s = ZERO;
        for (int p = j; p < i; p++)
            s += Ts[i][p] * W[AT(p, j, ldw)];
        W[AT(i, j, ldw)] = -s / DIAG(i);
    }
#else
    for (int i = j + 1; i < kb; i++)
        W[AT(i, j, ldw)] = ZERO;
    W[AT(j, j, ldw)] = ONE / DIAG(j);
    for (int i = j - 1; i >= 0; i--) {
        real s = ZERO;
        for (int p = i + 1; p <= j; p++)
            s += Ts[i][p] * W[AT(p, j, ldw)];
        W[AT(i, j, ldw)] = -s / DIAG(i);
    }
#endif
#undef DIAG
}

__kernel void copy_block(const int rows, const int cols,
                         __global const real *S, const long s_off, const int lds,
                         __global real *D, const long d_off, const int ldd)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < rows && c < cols)
        D[d_off + AT(r, c, ldd)] = S[s_off + AT(r, c, lds)];
}
