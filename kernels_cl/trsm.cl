/* trsm.cl -- solve with one triangular diagonal block (at most TRSM_NB x TRSM_NB).
 *
 *   SIDE_LEFT = 1:  op(T) X = B,   B is nb x nrhs, one work-item per column of B
 *   SIDE_LEFT = 0:  X op(T) = B,   B is nrhs x nb, one work-item per row of B
 *   op(T) = T (TRANS = 0) or T^T (TRANS = 1); T lower (LOWER = 1) or upper;
 *   UNIT = 1 takes the diagonal of T as ones without reading it.
 *
 * Both sides are the same recurrence on the system S y = b, with S = op(T)
 * (left) or S = op(T)^T (right):  S lower -> forward, S upper -> backward.
 * T is staged in local memory; X overwrites B.  Larger triangles are solved
 * block by block from the host with GEMM updates in between (oclla.blas.trsm).
 */
#include "common.h"

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
                         __global const real *T, const int t_off, const int ldt,
                         __global real *B, const int b_off, const int ldb)
{
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    T += t_off;
    B += b_off;
    for (int idx = get_local_id(0); idx < nb * nb; idx += get_local_size(0))
        Ts[idx / nb][idx % nb] = T[AT(idx / nb, idx % nb, ldt)];
    barrier(CLK_LOCAL_MEM_FENCE);

    const int v = get_global_id(0);    /* which column (left) or row (right) of B */
    if (v >= nrhs) return;
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
}
