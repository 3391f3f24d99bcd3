/* gemm_tile.h -- one work-group's TILE_M x TILE_N block of
 * C = alpha * op(A) * op(B) + beta * C (gemm.cl's gemm_tiled; also the
 * blocked Cholesky's fused trailing update, syrk_leaf.cl).
 *
 *   op(A): M x K    (trans_a = 0: A is M x K row-major; 1: A is K x M)
 *   op(B): K x N    (trans_b = 0: B is K x N row-major; 1: B is N x K)
 *   (trans_a and trans_b are arguments: one program serves every product, and a
 *   caller that passes literals gets the code of its own alone)
 *   C:     M x N    row-major; triangle = 1 writes only r >= c (lower),
 *                   2 only r <= c (upper), 0 everything (SYRK uses 1 or 2):
 *                   an argument (the macros below read `triangle`), so one
 *                   program serves every triangle.
 *   beta == 0 never reads C (it may hold anything, NaN included).
 *
 * gemm_tile computes the block whose top-left entry is C(row0, col0),
 * staging TILE_K-deep slabs of op(A) and op(B) through local memory (two
 * buffers: the next slab is fetched into registers while the current one is
 * multiplied; one loop, whose step t fetches slab t and multiplies slab t - 1,
 * so that the fetch's code appears once).  Each work-item owns a WPT_M x WPT_N
 * register block, read from local memory as vectors of LVM (LVN) reals: the
 * widest of VEC_LOCAL, 2 and 1 that divides WPT_M (WPT_N).  The multiply over
 * a slab is unrolled eight deep, not TILE_K: on an H200 (NVIDIA OpenCL) that
 * and the single fetch build the 64 x 128 float32 tiles in 0.7 s instead of
 * 0.9 s; float32 GEMM runs 2-5 % faster and the 128 x 64 float64 tiles' 10 %,
 * at the price of 1-5 % on the blocked potrf
 * (benchmarks/results/nvidia-h200-2026-11-29-gemm-loop.txt).
 *
 *              TILE_N                 work-group: WG_X x WG_Y items,
 *         +--+--+--+--+               WG_X = TILE_N/WPT_N, WG_Y = TILE_M/WPT_M
 *  TILE_M |  |  |  |  |
 *         +--+--+--+--+
 *
 * INTERLEAVE = 0: item (x, y) owns the contiguous rows y*WPT_M .. +WPT_M and
 * columns x*WPT_N .. +WPT_N.  INTERLEAVE = 1: its rows are WPT_M/LVM vectors
 * of LVM rows, vector g starting at row g*(WG_Y*LVM) + y*LVM (columns alike),
 * so that at each k the items of a row of the work-group read consecutive
 * vectors of the slab: no two of them in the same bank of a banked local
 * memory (the contiguous blocks' reads are WPT wide apart, which on 32 banks
 * of 4 bytes puts up to 8 items on one bank for WPT_N = 8 in float64: on an
 * H100, 128 x 128 tiles of 8 x 8 in float64 ran at 36 % of the FP64 peak
 * contiguous and 62 % interleaved with 2-wide reads,
 * benchmarks/results/nvidia-h100-2026-11-26-dgemm.txt).
 *
 * Global loads are VEC_A / VEC_B wide along the operand's contiguous
 * dimension where the operand is aligned for it: its address and leading
 * dimension multiples of the width, tested once per launch (a uniform
 * branch), so one program serves every offset and leading dimension.  An
 * unaligned operand, and slabs that cross the matrix edge, take guarded
 * scalar loads, so any M, N, K, offset and leading dimension work.  (On
 * PoCL, 64 x 64 tiles at n = 512 and 513, the test costs nothing measurable
 * against a program built for each alignment.)  The caller provides the
 * local buffers: As of GEMM_AS_SIZE reals aligned for LVM-wide vectors, Bs
 * of GEMM_BS_SIZE reals aligned for LVN-wide ones.
 */
#ifndef OCLLA_GEMM_TILE_H
#define OCLLA_GEMM_TILE_H

#include "common.h"


/* ---- tunables ---- */
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
#define VEC_A 1            /* width of global loads of an aligned A (1, 2, 4) */
#endif
#ifndef VEC_B
#define VEC_B 1            /* width of global loads of an aligned B (1, 2, 4) */
#endif
#ifndef VEC_LOCAL
#define VEC_LOCAL 4        /* widest local-memory read of a register block (1, 2, 4) */
#endif
#ifndef INTERLEAVE
#define INTERLEAVE 0       /* 0: contiguous register blocks, 1: interleaved vectors */
#endif

/* May X (leading dimension ldx) be read VECW elements at a time? */
#define VEC_ALIGNED(X, ldx, VECW) \
    ((ldx) % (VECW) == 0 && (size_t)(X) % ((VECW) * sizeof(real)) == 0)

/* Copy the components of a W-wide vector v into the array a at offset o. */
#define UNPACK1(v, a, o) (a)[o] = (v);
#define UNPACK2(v, a, o) (a)[o] = (v).s0; (a)[(o) + 1] = (v).s1;
#define UNPACK4(v, a, o) UNPACK2((v).lo, a, o) UNPACK2((v).hi, a, (o) + 2)
#define UNPACK(w) CAT(UNPACK, w)

/* Is element (r, c) of C written?  (`triangle` in scope: 0, 1 lower, 2 upper) */
#define IN_TRIANGLE(r, c) (triangle == 0 || (triangle == 1 ? (c) <= (r) : (c) >= (r)))

/* Does the block of rows [r0, r0+h) x cols [c0, c0+w) hold no written element,
 * or only written ones? */
#define BLOCK_EMPTY(r0, c0, h, w)                                              \
    (triangle == 1 ? (c0) > (r0) + (h) - 1 : triangle == 2 && (r0) > (c0) + (w) - 1)
#define BLOCK_INSIDE(r0, c0, h, w)                                             \
    (triangle == 0 || (triangle == 1 ? (c0) + (w) - 1 <= (r0) : (r0) + (h) - 1 <= (c0)))

/* C[r, c] = alpha * acc + beta * C[r, c], C already offset. */
#define STORE_C(r, c, value)                                                  \
    C[AT(r, c, ldc)] = (beta == ZERO) ? alpha * (value)                      \
                                      : alpha * (value) + beta * C[AT(r, c, ldc)]

#define WG_X (TILE_N / WPT_N)
#define WG_Y (TILE_M / WPT_M)
#define NTHREADS (WG_X * WG_Y)
#define A_PER (TILE_M * TILE_K / NTHREADS)    /* elements of A one item stages */
#define B_PER (TILE_N * TILE_K / NTHREADS)

/* width of the local-memory reads of a register block */
#if WPT_M % 4 == 0 && VEC_LOCAL >= 4
#define LVM 4
#elif WPT_M % 2 == 0 && VEC_LOCAL >= 2
#define LVM 2
#else
#define LVM 1
#endif
#if WPT_N % 4 == 0 && VEC_LOCAL >= 4
#define LVN 4
#elif WPT_N % 2 == 0 && VEC_LOCAL >= 2
#define LVN 2
#else
#define LVN 1
#endif

/* Where an item's register block lies in the tile: its first row (column)
 * and the distance between its consecutive local-memory vectors; register
 * row i is tile row ROW_OF(i), register column j tile column COL_OF(j). */
#if INTERLEAVE
#define FIRST_M (ty * LVM)
#define FIRST_N (tx * LVN)
#define STEP_M (WG_Y * LVM)
#define STEP_N (WG_X * LVN)
#else
#define FIRST_M (ty * WPT_M)
#define FIRST_N (tx * WPT_N)
#define STEP_M LVM
#define STEP_N LVN
#endif
#define ROW_OF(i) (FIRST_M + ((i) / LVM) * STEP_M + (i) % LVM)
#define COL_OF(j) (FIRST_N + ((j) / LVN) * STEP_N + (j) % LVN)
#define LDAS (TILE_M + LVM)     /* padded rows of the slabs (keep vector alignment) */
#define LDBS (TILE_N + LVN)
#define GEMM_AS_SIZE (2 * TILE_K * LDAS)    /* reals of the caller's local buffers */
#define GEMM_BS_SIZE (2 * TILE_K * LDBS)

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

#define FETCH_SLAB(regs, X, ldx, x0, XEXT, k0, TILE_X, VECW, PER, full, CONTK)  \
    _Pragma("unroll") for (int s = 0; s < (PER) / (VECW); s++) {              \
        SLAB_INDEX(tid + s * NTHREADS, TILE_X, VECW, CONTK, xx, kk)           \
        if (full) {                                                           \
            const size_t at = (CONTK) ? AT((x0) + xx, (k0) + kk, ldx)         \
                                      : AT((k0) + kk, (x0) + xx, ldx);        \
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

/* FETCH_SLAB / STORE_SLAB with CONTK = contk, each branch written with a literal so that
 * the compiler specialises both (the transposes are run-time arguments; no variadic
 * macro: NVIDIA's OpenCL refuses them) */
#define FETCH_EITHER(contk, regs, X, ldx, x0, XEXT, k0, TILE_X, VECW, PER, full) \
    if (contk) FETCH_SLAB(regs, X, ldx, x0, XEXT, k0, TILE_X, VECW, PER, full, 1) \
    else FETCH_SLAB(regs, X, ldx, x0, XEXT, k0, TILE_X, VECW, PER, full, 0)
#define STORE_SLAB(regs, Xs, LDXS, TILE_X, VECW, PER, CONTK)                  \
    _Pragma("unroll") for (int s = 0; s < (PER) / (VECW); s++) {              \
        SLAB_INDEX(tid + s * NTHREADS, TILE_X, VECW, CONTK, xx, kk)           \
        _Pragma("unroll") for (int q = 0; q < (VECW); q++)                    \
            Xs[((CONTK) ? kk + q : kk) * (LDXS) + ((CONTK) ? xx : xx + q)]    \
                = regs[s * (VECW) + q];                                       \
    }
#define STORE_EITHER(contk, regs, Xs, LDXS, TILE_X, VECW, PER)                  \
    if (contk) STORE_SLAB(regs, Xs, LDXS, TILE_X, VECW, PER, 1)                 \
    else STORE_SLAB(regs, Xs, LDXS, TILE_X, VECW, PER, 0)

inline void gemm_tile(const int M, const int N, const int K, const real alpha,
                      __global const real *A, const int lda, const int trans_a,
                      __global const real *B, const int ldb, const int trans_b,
                      const real beta, __global real *C, const int ldc,
                      const int row0, const int col0, const int triangle,
                      __local real *As, __local real *Bs)
{
    const int tx = get_local_id(0), ty = get_local_id(1);
    const int tid = ty * WG_X + tx;

    real acc[WPT_M][WPT_N];
    #pragma unroll
    for (int i = 0; i < WPT_M; i++)
        #pragma unroll
        for (int j = 0; j < WPT_N; j++)
            acc[i][j] = ZERO;

    real ra[A_PER], rb[B_PER];
    /* a block outside the triangle takes no slab and stores nothing, but meets the
     * barriers: PoCL 3.0 miscompiles a return ahead of them whose condition it knows
     * only at run time (here the triangle, an argument) */
    const int slabs = BLOCK_EMPTY(row0, col0, TILE_M, TILE_N) ? 0 : (K + TILE_K - 1) / TILE_K;
    /* full tiles of an aligned operand take its vector loads */
    const int full_m = row0 + TILE_M <= M && VEC_ALIGNED(A, lda, VEC_A);
    const int full_n = col0 + TILE_N <= N && VEC_ALIGNED(B, ldb, VEC_B);
    /* step t: slab t global -> registers, slab t - 1 multiplied, slab t registers ->
     * buffer t & 1 (read in step t - 1 before the last barrier, in step t + 1 after
     * the next) */
    for (int t = 0; t <= slabs; t++) {
        if (t < slabs) {
            const int k0 = t * TILE_K;
            const int full_k = k0 + TILE_K <= K;
            FETCH_EITHER(!trans_a, ra, A, lda, row0, M, k0, TILE_M, VEC_A, A_PER,
                         full_m && full_k)
            FETCH_EITHER(trans_b, rb, B, ldb, col0, N, k0, TILE_N, VEC_B, B_PER,
                         full_n && full_k)
        }
        if (t > 0) {
            const int cur = (t - 1) & 1;
            __local const real *as = As + cur * TILE_K * LDAS + FIRST_M;
            __local const real *bs = Bs + cur * TILE_K * LDBS + FIRST_N;
            #pragma unroll 8
            for (int kk = 0; kk < TILE_K; kk++) {
                real a[WPT_M], b[WPT_N];
                #pragma unroll
                for (int i = 0; i < WPT_M / LVM; i++) {
                    const REALV(LVM) v =
                        *(__local const REALV(LVM) *)(as + kk * LDAS + i * STEP_M);
                    UNPACK(LVM)(v, a, i * LVM)
                }
                #pragma unroll
                for (int j = 0; j < WPT_N / LVN; j++) {
                    const REALV(LVN) v =
                        *(__local const REALV(LVN) *)(bs + kk * LDBS + j * STEP_N);
                    UNPACK(LVN)(v, b, j * LVN)
                }
                #pragma unroll
                for (int i = 0; i < WPT_M; i++)
                    #pragma unroll
                    for (int j = 0; j < WPT_N; j++)
                        acc[i][j] = MUL_ADD(a[i], b[j], acc[i][j]);
            }
        }
        if (t < slabs) {
            __local real *an = As + (t & 1) * TILE_K * LDAS;
            __local real *bn = Bs + (t & 1) * TILE_K * LDBS;
            STORE_EITHER(!trans_a, ra, an, LDAS, TILE_M, VEC_A, A_PER)
            STORE_EITHER(trans_b, rb, bn, LDBS, TILE_N, VEC_B, B_PER)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* C = alpha * acc + beta * C: every load of C before the first store, so that
     * an item's loads are in flight together (a store between two loads could
     * alias the second, which then waits for it). */
    #pragma unroll
    for (int i = 0; i < WPT_M; i++) {
        const int r = row0 + ROW_OF(i);
        #pragma unroll
        for (int j = 0; j < WPT_N; j++) {
            const int c = col0 + COL_OF(j);
            acc[i][j] = (beta != ZERO && r < M && c < N && IN_TRIANGLE(r, c))
                ? alpha * acc[i][j] + beta * C[AT(r, c, ldc)] : alpha * acc[i][j];
        }
    }
    #pragma unroll
    for (int i = 0; i < WPT_M; i++) {
        const int r = row0 + ROW_OF(i);
        #pragma unroll
        for (int j = 0; j < WPT_N; j++) {
            const int c = col0 + COL_OF(j);
            if (r < M && c < N && IN_TRIANGLE(r, c))
                C[AT(r, c, ldc)] = acc[i][j];
        }
    }
}

#endif
