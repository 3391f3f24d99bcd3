/* syrk_leaf.cl -- the blocked Cholesky's trailing update fused with the next
 * diagonal leaf: one launch per block column instead of two.
 *
 * syrk_leaf updates the stored triangle of the trailing matrix C by the k-wide
 * panel P beside it,
 *     LOWER = 1:  C := C - P P^T,   P = L21, m x k   (op(A) = P, op(B) = P^T)
 *     LOWER = 0:  C := C - P^T P,   P = U12, k x n   (op(A) = P^T, op(B) = P)
 * (the triangle a build option: with it an argument, one program served both, but
 * the tiles' transposes known only at run time made the update slower: H200, potrf
 * n = 8192 float64 22.9 -> 33.3 ms, float32 14.7 -> 17.6 ms; benchmarks/results/
 * nvidia-h200-2026-11-29-potrf-small-3.txt)
 * C m x n: the triangle of order m = n, or a trapezoid of the stored triangle's
 * first n columns (LOWER = 1, m > n) or m rows (LOWER = 0, n > m) where the
 * panel is longer than the order still to factor (cholesky.py factor_blocked's
 * width),
 * one TILE_M x TILE_N tile per work-group as gemm_tiled (gemm_tile.h, with the
 * transposes that match the triangle).
 * Then the work-group of tile (0, 0), the first one started, factors the
 * next diagonal block C(0:nb, 0:nb) -- nb <= LEAF <= TILE_M,
 * TILE_N, so the block lies inside its own tile and needs no other
 * work-group's result -- with factor_rows (chol_leaf.h), and with ldw > 0
 * writes W^T = L^-T of it to w (leading dimension ldw) for the next panel
 * solve.  The other work-groups' updates overlap the leaf.
 *
 *        k    rest
 *     +-----+------------+
 *     |  P  |##    .     |   ## tile (0, 0): updated, then the nb x nb
 *     |     |##    .     |      block at its corner factored by the same
 *     |     |  \   C     |      work-group (its stores made visible to the
 *     |     |    \       |      group by a global barrier)
 *     +-----+------------+
 *
 * The leaf's local memory shares the tile's slab buffers (used one after
 * the other).  A failed pivot at order k of the leaf sets *info to base + k
 * if it is still 0 (LAPACK's info); with *info already set the leaf is
 * skipped (the update still runs: its result is discarded with the factor).
 *
 * A program of its own, not gemm.cl's gemm_tiled with the leaf compiled in
 * (which would spare the GEMM of the same shape its build, about 0.6 s on
 * NVIDIA): the leaf's registers then hold back every such product (H200,
 * n = 8192: float64 SYRK 12 % slower, the blocked potrf's trailing GEMMs 20 %
 * in float32 and 35 % in float64; benchmarks/results/
 * nvidia-h200-2026-11-29-gemm-loop.txt).
 */
#include "common.h"
#include "gemm_tile.h"

#ifndef LEAF
#define LEAF 64            /* largest order of the leaf */
#endif
#ifndef LOWER
#define LOWER 1            /* the stored triangle: 1 row-major lower, 0 upper */
#endif
/* The leaf stays a function of its own, called by one work-group: compiled apart from
 * the tile's code, the program builds faster (H200, NVIDIA: float32 1.13-1.19 -> 0.96-1.00
 * s, float64 1.20-1.22 -> 1.01-1.02 s) and the blocked potrf runs as fast (n = 256 to
 * 8192).  A clang attribute, which the compilers of the devices that fuse the leaf
 * (a tuned entry's FUSE_LEAF) accept. */
#define LEAF_FN __attribute__((noinline))
#include "chol_leaf.h"

#define MAX_(x, y) ((x) > (y) ? (x) : (y))
#define BS_AT ((GEMM_AS_SIZE + 3) / 4 * 4)     /* Bs after As, aligned for 4-wide reads */
#define POOL_SIZE MAX_(BS_AT + GEMM_BS_SIZE, ROW_LEAF_LOCAL)

__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void syrk_leaf(const int m, const int n, const int k, __global const real *p, const long p_off,
               const int ldp, __global real *c, const long c_off, const int ldc,
               const int nb, const int base, __global int *info, __global real *w,
               const int ldw)
{
    const int lower = LOWER;             /* chol_leaf.h's EL and factor_rows read it */
    __local real4 pool[(POOL_SIZE + 3) / 4];
    __local real *shared = (__local real *)pool;
    gemm_tile(m, n, k, -ONE, p + p_off, ldp, !LOWER, p + p_off, ldp, LOWER, ONE, c + c_off,
              ldc, get_group_id(1) * TILE_M, get_group_id(0) * TILE_N, LOWER ? 1 : 2, shared,
              shared + BS_AT);
    barrier(CLK_GLOBAL_MEM_FENCE);       /* the tile's stores, seen by the whole group;
                                            here, ahead of the branch: PoCL 3.0 miscomputes
                                            the tile when the first barrier after it sits
                                            behind the return below */
    if (get_group_id(0) != 0 || get_group_id(1) != 0)
        return;                                    /* uniform over the work-group */
    const int failed = *info;
    barrier(CLK_GLOBAL_MEM_FENCE);       /* all have read info before it may change */
    if (failed)
        return;
    const int lid = get_local_id(1) * WG_X + get_local_id(0);
    const int bad = factor_rows(c + c_off, ldc, nb, lid, NTHREADS, shared, w, ldw, lower);
    if (bad && lid == 0)
        *info = base + bad;
}
