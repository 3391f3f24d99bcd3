/* gemm.cl -- C = alpha * op(A) * op(B) + beta * C in two shapes of kernel.
 *
 * Shapes, storage, TRIANGLE and beta as in gemm_tile.h.
 *
 * gemm_tiled (GPUs): one work-group per TILE_M x TILE_N block of C, each
 * computed by gemm_tile (gemm_tile.h: local-memory slabs, register blocks,
 * vector loads where aligned).
 *
 * gemm_direct (CPUs): no local memory and no barriers: each work-item
 * computes an RM x (VW*NV) block of C in VW-wide vector registers, streaming
 * a row of op(B) and broadcasting RM entries of op(A) per k (the shape of a
 * BLAS micro-kernel).  It needs TRANS_B = 0 (the host transposes B into a
 * workspace with `transpose` first).  Work-items along dimension 0 walk down
 * the rows so that consecutive ones reuse the same panel of B from cache.
 * Blocks on the edge (or across the triangle's diagonal) take a guarded path.
 */
#include "gemm_tile.h"

#ifndef DIRECT
#define DIRECT 0           /* which kernel the program holds: 0 gemm_tiled, 1 gemm_direct */
#endif

/* ---- gemm_direct tunables ---- */
#ifndef RM
#define RM 8               /* rows of C per work-item */
#endif
#ifndef VW
#define VW 16              /* vector width along the columns of C */
#endif
#ifndef NV
#define NV 2               /* vectors per row: VW * NV columns per work-item */
#endif

/* ================================ gemm_tiled ================================ */
#if DIRECT == 0
__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void gemm_tiled(const int M, const int N, const int K, const real alpha,
                __global const real *A, const long a_off, const int lda,
                __global const real *B, const long b_off, const int ldb,
                const real beta,
                __global real *C, const long c_off, const int ldc)
{
    __local REALV(LVM) As_v[GEMM_AS_SIZE / LVM];
    __local REALV(LVN) Bs_v[GEMM_BS_SIZE / LVN];
    gemm_tile(M, N, K, alpha, A + a_off, lda, B + b_off, ldb, beta, C + c_off, ldc,
              get_group_id(1) * TILE_M, get_group_id(0) * TILE_N,
              (__local real *)As_v, (__local real *)Bs_v);
}
#endif

/* ================================ gemm_direct =============================== */

#if DIRECT == 1 && TRANS_B == 0  /* gemm_direct streams rows of B: B must be K x N */
#include "gemm_direct.h"

__kernel void gemm_direct(const int M, const int N, const int K, const real alpha,
                          __global const real *A, const long a_off, const int lda,
                          __global const real *B, const long b_off, const int ldb,
                          const real beta,
                          __global real *C, const long c_off, const int ldc)
{
    const int row0 = get_global_id(0) * RM;
    const int col0 = get_global_id(1) * RN;
    if (row0 >= M || col0 >= N || BLOCK_EMPTY(row0, col0, RM, RN))
        return;
    const int full = row0 + RM <= M && col0 + RN <= N && BLOCK_INSIDE(row0, col0, RM, RN);
    if (full)
        direct_block(1, M, N, K, alpha, A + a_off, lda, B + b_off, ldb, beta, C + c_off, ldc,
                     row0, col0);
    else
        direct_block(0, M, N, K, alpha, A + a_off, lda, B + b_off, ldb, beta, C + c_off, ldc,
                     row0, col0);
}
#endif
