/* chol_leaf.h -- the diagonal leaf of the blocked Cholesky, one work-item per row.
 *
 * Needs LEAF (largest block order), EL(i, j) (the stored triangle at `a`, leading
 * dimension `ld`: through triangle.h, or by the argument `lower` where the includer
 * decides the triangle at run time) and unroll.h.  load_lower / store_lower move a
 * block between the stored triangle and a local copy with row stride LS; `lower`
 * (1: row-major lower, 0: upper) orders their walk.
 *
 * factor_rows factors the nb x nb diagonal block at a (nb <= LEAF; LEAF a
 * multiple of 8 up to 64) in place, A = L L^T, with a work-group of `items`
 * >= LEAF items (items past LEAF only load, store and meet the barriers):
 * item i keeps row i of the block in registers, x[j] = a_ij (its
 * entries j > i are carried along and never stored).  The block is padded to
 * order LEAF with the identity.  Column step k (k < nb, one barrier each; the
 * same k in every item, so the barrier is met by all): a_kk and the column
 * a_jk (j > k) come from the local buffer their owners wrote in step k-1, then
 *     s = a_ik / a_kk,   a_ij -= s a_jk  (k < j),   L(i,k) = a_ik / sqrt(a_kk),
 * and each item writes its new a_i,k+1 into the other buffer as soon as it
 * has it.  For a block of order 64 that is 64 short steps of two warps' worth
 * of items, where a larger work-group would spend each step on a barrier of
 * all its items.  With ldw > 0, item c then solves L w = e_c for column c of
 * W = L^-1 by forward substitution, reading L from local memory (no barrier),
 * and writes W^T, nb x nb with zeros below its diagonal, to w (leading
 * dimension ldw); ldw = 0 leaves w alone.  The choice is made at run time
 * (uniform: every item meets the same barriers either way), so one program
 * serves the inverting and the plain leaf.
 *
 * The steps are a loop with one barrier; within a step a switch on its block
 * of eight (k / 8, the same in every item) picks code with literal indices
 * (x stays in registers): the entries of that block under a test of the step,
 * those of the later blocks without one.  That is about LEAF²/16 + LEAF
 * statements per pass, not LEAF² (a fully unrolled LEAF = 64 kernel took
 * NVIDIA's compiler about 19 s to build).  Testing every entry of the row at
 * every step instead (LEAF statements) made the leaf about four times slower
 * on an H100: the fused update of the blocked potrf at n = 2048 took 5.4 ms
 * of kernel time against 2.1 ms this way (float32; 5.8 against 2.5 in float64),
 * benchmarks/results/nvidia-h100-2026-11-26-float64-2.txt.
 *
 * Local memory: t[LEAF * LS], col[COL_SIZE], rinv[LEAF].  Returns k + 1 for
 * the first pivot a_kk that is not > 0 (or NaN), else 0; the same in every
 * item.  After a failed pivot the step goes on with a_kk = 1 (the block is
 * then garbage and the caller reports the failure).
 */
#ifndef OCLLA_CHOL_LEAF_H
#define OCLLA_CHOL_LEAF_H

#include "unroll.h"

#define LS (LEAF + 1)      /* row stride of local copies (odd: no bank conflicts) */
#define COL_SIZE (2 * LEAF) /* two column buffers */

/* (i, j) of entry idx of an nb x nb square, walked with the stored
 * triangle's contiguous index fastest (coalesced for either storage). */
inline int2 square_entry(const int idx, const int nb, const int lower)
{
    return lower ? (int2)(idx / nb, idx % nb) : (int2)(idx % nb, idx / nb);
}

/* The stored triangle's nb x nb diagonal block at a to the lower triangle of
 * t (row stride LS), walking its contiguous index fastest; `items` work-items. */
inline void load_lower(__global const real *a, const int ld, __local real *t, const int nb,
                       const int lid, const int items, const int lower)
{
    for (int idx = lid; idx < nb * nb; idx += items) {
        const int2 e = square_entry(idx, nb, lower);
        if (e.y <= e.x)
            t[e.x * LS + e.y] = EL(e.x, e.y);
    }
}

/* The lower triangle of the nb x nb block t (row stride LS) to the stored
 * triangle at a, walking its contiguous index fastest; `items` work-items. */
inline void store_lower(__global real *a, const int ld, __local const real *t, const int nb,
                        const int lid, const int items, const int lower)
{
    for (int idx = lid; idx < nb * nb; idx += items) {
        const int2 e = square_entry(idx, nb, lower);
        if (e.y <= e.x)
            EL(e.x, e.y) = t[e.x * LS + e.y];
    }
}

#if LEAF % 8 == 0 && LEAF <= 64
/* G(F, b) for each block of eight entries, b = 0, 8, ..., LEAF - 8 */
#if LEAF == 8
#define BLOCKS8(G, F) G(F, 0)
#elif LEAF == 16
#define BLOCKS8(G, F) G(F, 0) G(F, 8)
#elif LEAF == 24
#define BLOCKS8(G, F) G(F, 0) G(F, 8) G(F, 16)
#elif LEAF == 32
#define BLOCKS8(G, F) G(F, 0) G(F, 8) G(F, 16) G(F, 24)
#elif LEAF == 40
#define BLOCKS8(G, F) G(F, 0) G(F, 8) G(F, 16) G(F, 24) G(F, 32)
#elif LEAF == 48
#define BLOCKS8(G, F) G(F, 0) G(F, 8) G(F, 16) G(F, 24) G(F, 32) G(F, 40)
#elif LEAF == 56
#define BLOCKS8(G, F) G(F, 0) G(F, 8) G(F, 16) G(F, 24) G(F, 32) G(F, 40) G(F, 48)
#else
#define BLOCKS8(G, F) G(F, 0) G(F, 8) G(F, 16) G(F, 24) G(F, 32) G(F, 40) G(F, 48) G(F, 56)
#endif
#define UPTO_LEAF(F) BLOCKS8(A8, F)
/* F(j) for the entries of the blocks of eight after block b (unroll.h) */
#define AFTER8(F, b) LATER8(F, b, LEAF)
/* the case of a `switch (step / 8)` for the steps of block b: F(b) */
#define CASE8(F, b) case (b) / 8: F(b) break;

inline int factor_rows(__global real *a, const int ld, const int nb, const int i,
                       const int items, __local real *t, __local real *col,
                       __local real *rinv, __global real *w, const int ldw, const int lower)
{
    load_lower(a, ld, t, nb, i, items, lower);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int row = i < LEAF;            /* items past LEAF only meet the barriers */
    real x[LEAF];
#define ROW_LOAD(j) x[j] = i >= nb ? (i == (j) ? ONE : ZERO) \
                                   : ((j) <= i ? t[i * LS + (j)] : ZERO);
    UPTO_LEAF(ROW_LOAD)
    if (row)
        col[i] = x[0];
    int bad = 0;
    for (int step = 0; step < nb; step++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        __local const real *c = col + (step & 1) * LEAF;
        __local real *next = col + ((step + 1) & 1) * LEAF;
        const real akk = c[step];
        if (!(akk > ZERO) && !bad)       /* the same value for all: uniform */
            bad = step + 1;
        if (row) {
            const real d = sqrt(akk > ZERO ? akk : ONE), rd = ONE / d;
            const real l = c[i] * rd, s = l * rd;       /* c[i] = x[step] = a_ik */
            /* the entries of the step's block of eight under a test of the step,
             * those of the later blocks without one: literal indices, about LEAF/2
             * updates a step as a fully unrolled leaf, in LEAF²/16 statements */
#define ROW_NEAR(j) if ((j) > step) { \
                x[j] -= s * c[j]; \
                if ((j) == step + 1) \
                    next[i] = x[j]; \
            } else if ((j) == step) \
                x[j] = i == step ? d : l;
#define ROW_FAR(j) x[j] -= s * c[j];
#define ROW_BLOCK(b) A8(ROW_NEAR, b) AFTER8(ROW_FAR, b) \
            if ((b) + 8 < LEAF && step == (b) + 7) \
                next[i] = x[BLOCK8((b) + 8, LEAF)];
            switch (step / 8) {
            BLOCKS8(CASE8, ROW_BLOCK)
            }
            if (i == step)
                rinv[step] = rd;
        }
    }
#define ROW_TO_LOCAL(j) if ((j) <= i) t[i * LS + (j)] = x[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (row) {
        UPTO_LEAF(ROW_TO_LOCAL)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int inverse = ldw > 0;
    real y[LEAF];                        /* column i of W: y[p] = W(p, i) */
#define COL_INIT(p) y[p] = i == (p) ? ONE : ZERO;
    /* step p: y[p] /= L(p,p), then y[q] -= L(q,p) y[p] for q > p (visited after p) */
#define COL_NEAR(q) if ((q) == step) { \
                y[q] *= rinv[q]; \
                yp = y[q]; \
            } else if ((q) > step) \
                y[q] -= t[(q) * LS + step] * yp;
#define COL_FAR(q) y[q] -= t[(q) * LS + step] * yp;
#define COL_BLOCK(b) A8(COL_NEAR, b) AFTER8(COL_FAR, b)
    if (row && inverse) {
        UPTO_LEAF(COL_INIT)
        for (int step = 0; step < nb; step++) {
            real yp = ZERO;
            switch (step / 8) {
            BLOCKS8(CASE8, COL_BLOCK)
            }
        }
    }
    store_lower(a, ld, t, nb, i, items, lower);
    barrier(CLK_LOCAL_MEM_FENCE);
#define COL_TO_LOCAL(p) t[i * LS + (p)] = y[p];     /* row i of W^T */
    if (row && inverse) {
        UPTO_LEAF(COL_TO_LOCAL)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = inverse ? i : nb * nb; idx < nb * nb; idx += items) {
        const int r = idx / nb, c = idx % nb;
        w[AT(r, c, ldw)] = c >= r ? t[r * LS + c] : ZERO;
    }
    return bad;
}
#endif

#endif
