/* gemm_direct.h -- one work-item's RM x (VW*NV) block of C = alpha * op(A) * B + beta * C
 * in VW-wide vector registers, no local memory and no barriers (gemm.cl's gemm_direct,
 * the CPUs' gemm; also the batched RLB GEMMs of sparse.cl on CPUs).
 *
 * Shapes, storage, TRANS_A, the triangle and beta as in gemm_tile.h (whose triangle
 * macros it uses); B is K x N row-major (TRANS_B = 0): per k the block streams a row of B and
 * broadcasts RM entries of op(A) (the shape of a BLAS micro-kernel).  The includer
 * defines the tunables RM, VW and NV (gemm.cl holds their defaults).
 */
#ifndef OCLLA_GEMM_DIRECT_H
#define OCLLA_GEMM_DIRECT_H

#include "gemm_tile.h"

#ifndef TRANS_A
#define TRANS_A 0          /* 1: op(A) = A^T */
#endif
#define RN (VW * NV)

/* VW-wide loads and stores built from scalar accesses, which compilers merge into
 * (unaligned) vector moves: some CPU runtimes (PoCL) call vloadN/vstoreN as
 * out-of-line library functions, which spills every accumulator at each call. */
#define DL1(p) (p)[0]
#define DL2(p) (REALV(2))((p)[0], (p)[1])
#define DL4(p) (REALV(4))(DL2(p), DL2((p) + 2))
#define DL8(p) (REALV(8))(DL4(p), DL4((p) + 4))
#define DL16(p) (REALV(16))(DL8(p), DL8((p) + 8))
#define DS1(x, p) ((p)[0] = (x))
#define DS2(x, p) ((p)[0] = (x).s0, (p)[1] = (x).s1)
#define DS4(x, p) (DS2((x).s01, p), DS2((x).s23, (p) + 2))
#define DS8(x, p) (DS4((x).s0123, p), DS4((x).s4567, (p) + 4))
#define DS16(x, p) (DS8((x).s01234567, p), DS8((x).s89abcdef, (p) + 8))
#define DLOAD_(w) DL##w
#define DSTORE_(w) DS##w
#define DLOAD(w) DLOAD_(w)
#define DSTORE(w) DSTORE_(w)
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
                  const int row0, const int col0, const int triangle)
{
    REALV(VW) acc[RM][NV];
    #pragma unroll
    for (int i = 0; i < RM; i++)
        #pragma unroll
        for (int v = 0; v < NV; v++)
            acc[i][v] = (REALV(VW))(ZERO);
    /* rows past M repeat the last one (computed, never stored) */
    const int last = (full || row0 + RM <= M) ? row0 + RM - 1 : M - 1;
    for (int k = 0; k < K; k++) {
        REALV(VW) b[NV];
        __global const real *brow = B + AT(k, col0, ldb);
        #pragma unroll
        for (int v = 0; v < NV; v++) {
            if (full) {
                b[v] = DLOAD(VW)(brow + v * VW);
            } else {
                real t[VW];
                #pragma unroll
                for (int q = 0; q < VW; q++)
                    t[q] = (col0 + v * VW + q < N) ? brow[v * VW + q] : ZERO;
                b[v] = DLOAD(VW)(t);
            }
        }
        #pragma unroll
        for (int i = 0; i < RM; i++) {
            const REALV(VW) a = (REALV(VW))(A_ELEM(row0 + i < last ? row0 + i : last, k));
            #pragma unroll
            for (int v = 0; v < NV; v++)
                acc[i][v] = MUL_ADD(a, b[v], acc[i][v]);
        }
    }

    if (full) {
        #pragma unroll
        for (int i = 0; i < RM; i++) {
            #pragma unroll
            for (int v = 0; v < NV; v++) {
                __global real *p = C + AT(row0 + i, col0 + v * VW, ldc);
                const REALV(VW) x = alpha * acc[i][v];
                DSTORE(VW)((beta == ZERO) ? x : x + beta * DLOAD(VW)(p), p);
            }
        }
        return;
    }
    /* A block on an edge or across the diagonal: through a private copy, one entry at a
     * time in a loop left rolled.  Unrolled, its RM x RN guarded stores made the kernel
     * large: PoCL 3.0, 2-core Xeon with AVX-512, the first launch (where PoCL generates
     * the code) 5.4-8.0 -> 2.3-3.5 s in float32, 2.3-2.7 -> 1.1-1.2 s in float64, and every
     * product ran slower (sgemm 1024 17.1-17.2 -> 10.2-11.2 ms, dgemm 29.9-30.3 -> 20.2-20.7;
     * benchmarks/results/pocl-2core-xeon-2026-12-02-direct-stores.txt). */
    real t[RM * RN];
    #pragma unroll
    for (int i = 0; i < RM; i++)
        #pragma unroll
        for (int v = 0; v < NV; v++)
            DSTORE(VW)(acc[i][v], t + i * RN + v * VW);
    #pragma unroll 1
    for (int e = 0; e < RM * RN; e++) {
        const int r = row0 + e / RN, c = col0 + e % RN;
        if (r < M && c < N && IN_TRIANGLE(r, c))
            STORE_C(r, c, t[e]);
    }
}

#endif
