/* gemm.cl -- C = alpha * op(A) * op(B) + beta * C in two shapes of kernel.
 *
 * Shapes, storage, the triangle (an argument: 0 all of C, 1 lower, 2 upper) and
 * beta as in gemm_tile.h.
 *
 * gemm_tiled (GPUs): one work-group per TILE_M x TILE_N block of C, each
 * computed by gemm_tile (gemm_tile.h: local-memory slabs, register blocks,
 * vector loads where aligned); the transposes are arguments, so one program
 * serves all four products, unless TRANS_A and TRANS_B are defined (the gemm
 * knob PER_SHAPE): then the program is compiled for that product alone, and
 * the arguments trans_a and trans_b are ignored.
 *
 * gemm_direct (CPUs; the define TRANS_A says whether op(A) = A^T): no local
 * memory and no barriers: each work-item
 * computes an RM x (VW*NV) block of C in VW-wide vector registers, streaming
 * a row of op(B) and broadcasting RM entries of op(A) per k (the shape of a
 * BLAS micro-kernel).  op(B) is read in place (not transposed) or, when
 * transposed or deep, first packed by pack_b (the same program) into contiguous
 * K x (VW*NV) strips, so that each work-item streams one contiguous panel (rows
 * ldb apart touch a new page per k).  A transposed op(A) of a deep product is
 * likewise first made a contiguous A (pack_a), and the product taken as one whose A
 * is not transposed.  Work-items along dimension 0 walk down the
 * rows so that consecutive ones reuse the same strip from cache.
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
                __global const real *A, const long a_off, const int lda, const int trans_a,
                __global const real *B, const long b_off, const int ldb, const int trans_b,
                const real beta,
                __global real *C, const long c_off, const int ldc, const int triangle)
{
    __local REALV(LVM) As_v[GEMM_AS_SIZE / LVM];
    __local REALV(LVN) Bs_v[GEMM_BS_SIZE / LVN];
#ifdef TRANS_A
    gemm_tile(M, N, K, alpha, A + a_off, lda, TRANS_A, B + b_off, ldb, TRANS_B, beta,
#else
    gemm_tile(M, N, K, alpha, A + a_off, lda, trans_a, B + b_off, ldb, trans_b, beta,
#endif
              C + c_off, ldc, get_group_id(1) * TILE_M, get_group_id(0) * TILE_N, triangle,
              (__local real *)As_v, (__local real *)Bs_v);
}
#endif

/* ================================ gemm_direct =============================== */

#if DIRECT == 1
#include "gemm_direct.h"

/* P = op(B) (K x N) in strips of RN columns, each K x RN row-major and contiguous, the
 * last padded with zeros: strip s holds columns s*RN .. s*RN+RN-1 at P + s*K*RN.  op(B)
 * = B (trans_b = 0) or B^T (B N x K): an argument, so that pack_b is in gemm_direct's
 * own program.  One work-item per element of P (global size RN x K x strips). */
__kernel void pack_b(const int N, const int K,
                     __global const real *B, const long b_off, const int ldb,
                     const int trans_b, __global real *P)
{
    const int q = get_global_id(0), k = get_global_id(1), s = get_global_id(2);
    const int c = s * RN + q;
    const real x = (c < N) ? B[b_off + (trans_b ? AT(c, k, ldb) : AT(k, c, ldb))] : ZERO;
    P[((size_t)s * K + k) * RN + q] = x;
}

/* Q = A^T (A K x M, Q M x K row-major): a transposed A for gemm_direct with TRANS_A = 0,
 * whose RM rows of A stream along k, where TRANS_A = 1 reads a row of A, lda apart
 * from the next k's, per k.  One work-item per element, RM of them along a row of A
 * (global size RM x K x ceil(M / RM)). */
__kernel void pack_a(const int M, const int K,
                     __global const real *A, const long a_off, const int lda,
                     __global real *Q)
{
    const int r = get_global_id(2) * RM + get_global_id(0), k = get_global_id(1);
    if (r < M)
        Q[(size_t)r * K + k] = A[a_off + AT(k, r, lda)];
}

/* strip = 0: B is op(B) itself, K rows ldb apart.  strip > 0: B is pack_b's P (ldb =
 * RN, strip = K * RN), the work-item's panel starting at P + (col0 / RN) * strip;
 * direct_block addresses either as rows starting at column col0. */
__kernel void gemm_direct(const int M, const int N, const int K, const real alpha,
                          __global const real *A, const long a_off, const int lda,
                          __global const real *B, const long b_off, const int ldb,
                          const long strip, const real beta,
                          __global real *C, const long c_off, const int ldc,
                          const int triangle)
{
    const int row0 = get_global_id(0) * RM;
    const int col0 = get_global_id(1) * RN;
    if (row0 >= M || col0 >= N || BLOCK_EMPTY(row0, col0, RM, RN))
        return;
    __global const real *panel = strip ? B + b_off + get_global_id(1) * strip - col0
                                       : B + b_off;
    const int full = row0 + RM <= M && col0 + RN <= N && BLOCK_INSIDE(row0, col0, RM, RN);
    if (full)
        direct_block(1, M, N, K, alpha, A + a_off, lda, panel, ldb, beta, C + c_off, ldc,
                     row0, col0, triangle);
    else
        direct_block(0, M, N, K, alpha, A + a_off, lda, panel, ldb, beta, C + c_off, ldc,
                     row0, col0, triangle);
}
#endif
