/* gemm.cl -- C = alpha * op(A) * op(B) + beta * C, register-tiled through local memory.
 *
 *   op(A): M x K    (TRANS_A = 0: A is M x K row-major; 1: A is K x M)
 *   op(B): K x N    (TRANS_B = 0: B is K x N row-major; 1: B is N x K)
 *   C:     M x N    row-major; TRIANGLE = 1 writes only r >= c (lower),
 *                   2 only r <= c (upper), 0 everything (SYRK uses 1 or 2).
 *
 *  Each work-group computes a TILE_M x TILE_N block of C; each work-item a
 *  WPT_M x WPT_N sub-block whose rows/columns are strided by the work-group
 *  shape (so stores coalesce and local reads avoid bank conflicts).
 *
 *          TILE_N
 *       +---------+      work-group: (TILE_N / WPT_N) x (TILE_M / WPT_M) items
 *  TILE | C block |      K is walked in slabs of TILE_K, staged in As, Bs
 *   _M  |         |
 *       +---------+
 *  Ragged edges load zeros and mask the stores, so any M, N, K work.
 */
#include "common.h"

#ifndef TILE_M
#define TILE_M 64          /* rows of C per work-group */
#endif
#ifndef TILE_N
#define TILE_N 64          /* columns of C per work-group */
#endif
#ifndef TILE_K
#define TILE_K 16          /* depth of one local-memory slab */
#endif
#ifndef WPT_M
#define WPT_M 4            /* rows of C per work-item */
#endif
#ifndef WPT_N
#define WPT_N 4            /* columns of C per work-item */
#endif
#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef TRIANGLE
#define TRIANGLE 0
#endif

#define WG_X (TILE_N / WPT_N)
#define WG_Y (TILE_M / WPT_M)
#define WG_SIZE (WG_X * WG_Y)
#define PAD 1

__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void gemm(const int M, const int N, const int K, const real alpha,
          __global const real *A, const int a_off, const int lda,
          __global const real *B, const int b_off, const int ldb,
          const real beta,
          __global real *C, const int c_off, const int ldc)
{
    __local real As[TILE_K][TILE_M + PAD];
    __local real Bs[TILE_K][TILE_N + PAD];

    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * WG_X + tx;
    const int row0 = get_group_id(1) * TILE_M;
    const int col0 = get_group_id(0) * TILE_N;

#if TRIANGLE == 1
    if (col0 > row0 + TILE_M - 1) return;      /* block strictly above the diagonal */
#elif TRIANGLE == 2
    if (row0 > col0 + TILE_N - 1) return;      /* block strictly below the diagonal */
#endif

    real acc[WPT_M][WPT_N];
    for (int i = 0; i < WPT_M; i++)
        for (int j = 0; j < WPT_N; j++)
            acc[i][j] = ZERO;

    A += a_off;
    B += b_off;
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        for (int idx = tid; idx < TILE_M * TILE_K; idx += WG_SIZE) {
#if TRANS_A == 0
            const int mm = idx / TILE_K, kk = idx % TILE_K;
            const int r = row0 + mm, k = k0 + kk;
            As[kk][mm] = (r < M && k < K) ? A[AT(r, k, lda)] : ZERO;
#else
            const int kk = idx / TILE_M, mm = idx % TILE_M;
            const int r = row0 + mm, k = k0 + kk;
            As[kk][mm] = (r < M && k < K) ? A[AT(k, r, lda)] : ZERO;
#endif
        }
        for (int idx = tid; idx < TILE_N * TILE_K; idx += WG_SIZE) {
#if TRANS_B == 0
            const int kk = idx / TILE_N, nn = idx % TILE_N;
            const int c = col0 + nn, k = k0 + kk;
            Bs[kk][nn] = (c < N && k < K) ? B[AT(k, c, ldb)] : ZERO;
#else
            const int nn = idx / TILE_K, kk = idx % TILE_K;
            const int c = col0 + nn, k = k0 + kk;
            Bs[kk][nn] = (c < N && k < K) ? B[AT(c, k, ldb)] : ZERO;
#endif
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TILE_K; kk++) {
            real a_reg[WPT_M], b_reg[WPT_N];
            for (int i = 0; i < WPT_M; i++)
                a_reg[i] = As[kk][ty + i * WG_Y];
            for (int j = 0; j < WPT_N; j++)
                b_reg[j] = Bs[kk][tx + j * WG_X];
            for (int i = 0; i < WPT_M; i++)
                for (int j = 0; j < WPT_N; j++)
                    acc[i][j] += a_reg[i] * b_reg[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    C += c_off;
    for (int i = 0; i < WPT_M; i++) {
        const int r = row0 + ty + i * WG_Y;
        if (r >= M) continue;
        for (int j = 0; j < WPT_N; j++) {
            const int c = col0 + tx + j * WG_X;
            if (c >= N) continue;
#if TRIANGLE == 1
            if (c > r) continue;
#elif TRIANGLE == 2
            if (c < r) continue;
#endif
            const real prev = (beta == ZERO) ? ZERO : beta * C[AT(r, c, ldc)];
            C[AT(r, c, ldc)] = alpha * acc[i][j] + prev;
        }
    }
}
