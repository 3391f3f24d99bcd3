/* gemm_direct.h -- one work-item's RM x (VW*NV) block of C = alpha * op(A) * B + beta * C
 * in VW-wide vector registers, no local memory and no barriers (gemm.cl's gemm_direct,
 * the CPUs' gemm; also the batched RLB GEMMs of sparse.cl on CPUs).
 *
 * Shapes, storage, TRANS_A, TRIANGLE and beta as in gemm_tile.h (whose triangle macros
 * it uses); B is K x N row-major (TRANS_B = 0): per k the block streams a row of B and
 * broadcasts RM entries of op(A) (the shape of a BLAS micro-kernel).  The includer
 * defines the tunables RM, VW and NV (gemm.cl holds their defaults).
 */
#ifndef OCLLA_GEMM_DIRECT_H
#define OCLLA_GEMM_DIRECT_H

#include "gemm_tile.h"

#define RN (VW * NV)
#if TRANS_A == 0
#define A_ELEM(r, k) A[AT(r, k, lda)]
#else
#define A_ELEM(r, k) A[AT(k, r, lda)]
#endif

/* One RM x RN block; `full` (a literal at each call) selects the unguarded
 * path: all rows and columns inside C and inside the triangle. */
inline __attribute__((always_inline))
void direct_block(const int full, const int M, const int N, const int K, const real alpha,
                  __global const real *A, const int lda,
                  __global const real *B, const int ldb,
                  const real beta, __global real *C, const int ldc,
                  const int row0, const int col0)
{
    REALV(VW) acc[RM][NV];
    #pragma unroll
    for (int i = 0; i < RM; i++)
        #pragma unroll
        for (int v = 0; v < NV; v++)
            acc[i][v] = (REALV(VW))(ZERO);
    /* rows past M repeat the last one (computed, never stored) */
    const int last = full ? row0 + RM - 1 : min(row0 + RM - 1, M - 1);
    for (int k = 0; k < K; k++) {
        REALV(VW) b[NV];
        __global const real *brow = B + AT(k, col0, ldb);
        #pragma unroll
        for (int v = 0; v < NV; v++) {
            if (full) {
                b[v] = VLOAD(VW)(0, brow + v * VW);
            } else {
                real t[VW];
                #pragma unroll
                for (int q = 0; q < VW; q++)
                    t[q] = (col0 + v * VW + q < N) ? brow[v * VW + q] : ZERO;
                b[v] = VLOAD(VW)(0, t);
            }
        }
        #pragma unroll
        for (int i = 0; i < RM; i++) {
            const REALV(VW) a = (REALV(VW))(A_ELEM(min(row0 + i, last), k));
            #pragma unroll
            for (int v = 0; v < NV; v++)
                acc[i][v] = MUL_ADD(a, b[v], acc[i][v]);
        }
    }

    #pragma unroll
    for (int i = 0; i < RM; i++) {
        #pragma unroll
        for (int v = 0; v < NV; v++) {
            const int r = row0 + i, c = col0 + v * VW;
            if (full) {
                __global real *p = C + AT(r, c, ldc);
                const REALV(VW) x = alpha * acc[i][v];
                VSTORE(VW)((beta == ZERO) ? x : x + beta * VLOAD(VW)(0, p), 0, p);
            } else {
                real t[VW];
                VSTORE(VW)(acc[i][v], 0, t);
                #pragma unroll
                for (int q = 0; q < VW; q++)
                    if (r < M && c + q < N && IN_TRIANGLE(r, c + q))
                        STORE_C(r, c + q, t[q]);
            }
        }
    }
}

#endif
