/* gemm.cl -- C = alpha * op(A) * op(B) + beta * C in two shapes of kernel.
 *
 *   op(A): M x K    (TRANS_A = 0: A is M x K row-major; 1: A is K x M)
 *   op(B): K x N    (TRANS_B = 0: B is K x N row-major; 1: B is N x K)
 *   C:     M x N    row-major; TRIANGLE = 1 writes only r >= c (lower),
 *                   2 only r <= c (upper), 0 everything (SYRK uses 1 or 2).
 *   beta == 0 never reads C (it may hold anything, NaN included).
 *
 * gemm_tiled (GPUs): each work-group computes a TILE_M x TILE_N block of C,
 * staging TILE_K-deep slabs of op(A) and op(B) through local memory (two
 * buffers: the next slab is fetched into registers while the current one is
 * multiplied).  Each work-item owns a WPT_M x WPT_N register block of
 * contiguous rows and columns, read from local memory as vectors.
 *
 *              TILE_N                 work-group: (TILE_N/WPT_N) x (TILE_M/WPT_M)
 *         +--+--+--+--+               item (x, y) owns rows y*WPT_M .. +WPT_M
 *  TILE_M |  |  |  |  |                         and cols x*WPT_N .. +WPT_N
 *         +--+--+--+--+
 *
 * Global loads are VEC_A / VEC_B wide along the operand's contiguous
 * dimension when the host says the operand is aligned for it (offset and
 * leading dimension multiples of the width); slabs that cross the matrix
 * edge fall back to guarded scalar loads, so any M, N, K work.
 *
 * gemm_direct (CPUs): no local memory and no barriers: each work-item
 * computes an RM x (VW*NV) block of C in VW-wide vector registers, streaming
 * a row of op(B) and broadcasting RM entries of op(A) per k (the shape of a
 * BLAS micro-kernel).  It needs TRANS_B = 0 (the host transposes B into a
 * workspace with `transpose` first).  Work-items along dimension 0 walk down
 * the rows so that consecutive ones reuse the same panel of B from cache.
 * Blocks on the edge (or across the triangle's diagonal) take a guarded path.
 */
#include "common.h"

#ifndef TRANS_A
#define TRANS_A 0
#endif
#ifndef TRANS_B
#define TRANS_B 0
#endif
#ifndef TRIANGLE
#define TRIANGLE 0
#endif
#ifndef DIRECT
#define DIRECT 0           /* which kernel the program holds: 0 gemm_tiled, 1 gemm_direct */
#endif

/* ---- gemm_tiled tunables ---- */
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
#ifndef VEC_A
#define VEC_A 1            /* width of global loads of A (1, 2, 4) */
#endif
#ifndef VEC_B
#define VEC_B 1            /* width of global loads of B (1, 2, 4) */
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

/* Copy the components of a W-wide vector v into the array a at offset o. */
#define UNPACK1(v, a, o) (a)[o] = (v);
#define UNPACK2(v, a, o) (a)[o] = (v).s0; (a)[(o) + 1] = (v).s1;
#define UNPACK4(v, a, o) UNPACK2((v).lo, a, o) UNPACK2((v).hi, a, (o) + 2)
#define UNPACK(w) CAT(UNPACK, w)

/* Is element (r, c) of C written? */
#if TRIANGLE == 1
#define IN_TRIANGLE(r, c) ((c) <= (r))
#elif TRIANGLE == 2
#define IN_TRIANGLE(r, c) ((c) >= (r))
#else
#define IN_TRIANGLE(r, c) 1
#endif

/* Does the block of rows [r0, r0+h) x cols [c0, c0+w) hold no written element,
 * or only written ones? */
#if TRIANGLE == 1
#define BLOCK_EMPTY(r0, c0, h, w) ((c0) > (r0) + (h) - 1)
#define BLOCK_INSIDE(r0, c0, h, w) ((c0) + (w) - 1 <= (r0))
#elif TRIANGLE == 2
#define BLOCK_EMPTY(r0, c0, h, w) ((r0) > (c0) + (w) - 1)
#define BLOCK_INSIDE(r0, c0, h, w) ((r0) + (h) - 1 <= (c0))
#else
#define BLOCK_EMPTY(r0, c0, h, w) 0
#define BLOCK_INSIDE(r0, c0, h, w) 1
#endif

/* C[r, c] = alpha * acc + beta * C[r, c], C already offset. */
#define STORE_C(r, c, value)                                                  \
    C[AT(r, c, ldc)] = (beta == ZERO) ? alpha * (value)                      \
                                      : alpha * (value) + beta * C[AT(r, c, ldc)]

/* ================================ gemm_tiled ================================ */
#if DIRECT == 0

#define WG_X (TILE_N / WPT_N)
#define WG_Y (TILE_M / WPT_M)
#define NTHREADS (WG_X * WG_Y)
#define A_PER (TILE_M * TILE_K / NTHREADS)    /* elements of A one item stages */
#define B_PER (TILE_N * TILE_K / NTHREADS)

/* width of the local-memory reads of a register block */
#if WPT_M % 4 == 0
#define LVM 4
#elif WPT_M % 2 == 0
#define LVM 2
#else
#define LVM 1
#endif
#if WPT_N % 4 == 0
#define LVN 4
#elif WPT_N % 2 == 0
#define LVN 2
#else
#define LVN 1
#endif
#define LDAS (TILE_M + LVM)     /* padded rows of the slabs (keep vector alignment) */
#define LDBS (TILE_N + LVN)

/* Fetch this item's share of a TILE_K-deep slab of an operand into regs.
 * The operand X is TILE_X wide (rows of C for A, columns for B) and has
 * element (x, k) at X[x*ldx + k] when CONTK (contiguous along k), else at
 * X[k*ldx + x].  Vector v of the slab covers VECW consecutive elements along
 * the contiguous dimension; consecutive items take consecutive vectors. */
#define SLAB_INDEX(v, TILE_X, VECW, CONTK, xx, kk)                            \
    const int xx = (CONTK) ? (v) / (TILE_K / (VECW))                          \
                           : ((v) % ((TILE_X) / (VECW))) * (VECW);            \
    const int kk = (CONTK) ? ((v) % (TILE_K / (VECW))) * (VECW)              \
                           : (v) / ((TILE_X) / (VECW));

#define FETCH_SLAB(regs, X, ldx, x0, XEXT, k0, TILE_X, VECW, PER, CONTK, full)  \
    _Pragma("unroll") for (int s = 0; s < (PER) / (VECW); s++) {              \
        SLAB_INDEX(tid + s * NTHREADS, TILE_X, VECW, CONTK, xx, kk)           \
        if (full) {                                                           \
            const int at = (CONTK) ? AT((x0) + xx, (k0) + kk, ldx)            \
                                   : AT((k0) + kk, (x0) + xx, ldx);           \
            const REALV(VECW) v = *(__global const REALV(VECW) *)(X + at);    \
            UNPACK(VECW)(v, regs, s * (VECW))                                 \
        } else {                                                              \
            _Pragma("unroll") for (int q = 0; q < (VECW); q++) {              \
                const int x = (x0) + xx + ((CONTK) ? 0 : q);                  \
                const int k = (k0) + kk + ((CONTK) ? q : 0);                  \
                regs[s * (VECW) + q] = (x < (XEXT) && k < K)                  \
                    ? X[(CONTK) ? AT(x, k, ldx) : AT(k, x, ldx)] : ZERO;      \
            }                                                                 \
        }                                                                     \
    }

#define STORE_SLAB(regs, Xs, LDXS, TILE_X, VECW, PER, CONTK)                  \
    _Pragma("unroll") for (int s = 0; s < (PER) / (VECW); s++) {              \
        SLAB_INDEX(tid + s * NTHREADS, TILE_X, VECW, CONTK, xx, kk)           \
        _Pragma("unroll") for (int q = 0; q < (VECW); q++)                    \
            Xs[((CONTK) ? kk + q : kk) * (LDXS) + ((CONTK) ? xx : xx + q)]    \
                = regs[s * (VECW) + q];                                       \
    }

__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void gemm_tiled(const int M, const int N, const int K, const real alpha,
                __global const real *A, const int a_off, const int lda,
                __global const real *B, const int b_off, const int ldb,
                const real beta,
                __global real *C, const int c_off, const int ldc)
{
    __local REALV(LVM) As_v[2 * TILE_K * LDAS / LVM];
    __local REALV(LVN) Bs_v[2 * TILE_K * LDBS / LVN];
    __local real *As = (__local real *)As_v;
    __local real *Bs = (__local real *)Bs_v;

    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * WG_X + tx;
    const int row0 = get_group_id(1) * TILE_M;
    const int col0 = get_group_id(0) * TILE_N;
    if (BLOCK_EMPTY(row0, col0, TILE_M, TILE_N))
        return;                                    /* uniform over the work-group */

    A += a_off;
    B += b_off;
    real acc[WPT_M][WPT_N];
    #pragma unroll
    for (int i = 0; i < WPT_M; i++)
        #pragma unroll
        for (int j = 0; j < WPT_N; j++)
            acc[i][j] = ZERO;

    real ra[A_PER], rb[B_PER];
    const int slabs = (K + TILE_K - 1) / TILE_K;
    const int full_m = row0 + TILE_M <= M, full_n = col0 + TILE_N <= N;
    if (slabs > 0) {
        const int full_k = TILE_K <= K;
        FETCH_SLAB(ra, A, lda, row0, M, 0, TILE_M, VEC_A, A_PER, !TRANS_A, full_m && full_k)
        FETCH_SLAB(rb, B, ldb, col0, N, 0, TILE_N, VEC_B, B_PER, TRANS_B, full_n && full_k)
        STORE_SLAB(ra, As, LDAS, TILE_M, VEC_A, A_PER, !TRANS_A)
        STORE_SLAB(rb, Bs, LDBS, TILE_N, VEC_B, B_PER, TRANS_B)
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int t = 0; t < slabs; t++) {
        const int cur = t & 1;
        const int k1 = (t + 1) * TILE_K;
        if (t + 1 < slabs) {                       /* next slab: global -> registers */
            const int full_k = k1 + TILE_K <= K;
            FETCH_SLAB(ra, A, lda, row0, M, k1, TILE_M, VEC_A, A_PER, !TRANS_A,
                       full_m && full_k)
            FETCH_SLAB(rb, B, ldb, col0, N, k1, TILE_N, VEC_B, B_PER, TRANS_B,
                       full_n && full_k)
        }
        __local const real *as = As + cur * TILE_K * LDAS + ty * WPT_M;
        __local const real *bs = Bs + cur * TILE_K * LDBS + tx * WPT_N;
        #pragma unroll
        for (int kk = 0; kk < TILE_K; kk++) {
            real a[WPT_M], b[WPT_N];
            #pragma unroll
            for (int i = 0; i < WPT_M / LVM; i++) {
                const REALV(LVM) v = *(__local const REALV(LVM) *)(as + kk * LDAS + i * LVM);
                UNPACK(LVM)(v, a, i * LVM)
            }
            #pragma unroll
            for (int j = 0; j < WPT_N / LVN; j++) {
                const REALV(LVN) v = *(__local const REALV(LVN) *)(bs + kk * LDBS + j * LVN);
                UNPACK(LVN)(v, b, j * LVN)
            }
            #pragma unroll
            for (int i = 0; i < WPT_M; i++)
                #pragma unroll
                for (int j = 0; j < WPT_N; j++)
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        if (t + 1 < slabs) {                       /* registers -> the other buffer */
            __local real *an = As + (cur ^ 1) * TILE_K * LDAS;
            __local real *bn = Bs + (cur ^ 1) * TILE_K * LDBS;
            STORE_SLAB(ra, an, LDAS, TILE_M, VEC_A, A_PER, !TRANS_A)
            STORE_SLAB(rb, bn, LDBS, TILE_N, VEC_B, B_PER, TRANS_B)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    C += c_off;
    #pragma unroll
    for (int i = 0; i < WPT_M; i++) {
        const int r = row0 + ty * WPT_M + i;
        #pragma unroll
        for (int j = 0; j < WPT_N; j++) {
            const int c = col0 + tx * WPT_N + j;
            if (r < M && c < N && IN_TRIANGLE(r, c))
                STORE_C(r, c, acc[i][j]);
        }
    }
}

#endif

/* ================================ gemm_direct =============================== */

#if DIRECT == 1 && TRANS_B == 0  /* gemm_direct streams rows of B: B must be K x N */
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
                acc[i][v] = fma(a, b[v], acc[i][v]);
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

__kernel void gemm_direct(const int M, const int N, const int K, const real alpha,
                          __global const real *A, const int a_off, const int lda,
                          __global const real *B, const int b_off, const int ldb,
                          const real beta,
                          __global real *C, const int c_off, const int ldc)
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
