/* chol_leaf.h -- the diagonal leaf of the blocked Cholesky, one work-item per row.
 *
 * Needs LEAF (largest block order) and unroll.h.  EL(i, j), i >= j, is the stored
 * triangle's entry at `a` (leading dimension `ld`), the triangle chosen at run time by
 * `lower` (1: row-major lower, 0: upper), for the includers' kernels too.
 * load_lower / store_lower move a block between the stored triangle and a local copy
 * with row stride LS; `lower` orders their walk.
 *
 * factor_rows factors the nb x nb diagonal block at a (nb <= LEAF; LEAF a
 * multiple of 8 up to 64) in place, A = L L^T, with a work-group of `items`
 * >= LEAF items (items past LEAF only load, store and meet the barriers):
 * item i keeps row i of the block in registers (its entries j > i are carried
 * along and never stored).  The block is padded to order LEAF with the
 * identity.  Column step k (k < nb, one barrier each; the same k in every
 * item, so the barrier is met by all): a_kk and the column a_jk (j > k) come
 * from the local buffer their owners wrote in step k-1, then
 *     s = a_ik / a_kk,   a_ij -= s a_jk  (k < j),   L(i,k) = a_ik / sqrt(a_kk),
 * and each item writes its new a_i,k+1 into the other buffer.  The row
 * turns by one entry per step, so that column k is always register 0 of step
 * k: at step k register m holds column (k + m) mod LEAF, and the step is
 *     x[m] := x[m + 1] - s c[k + 1 + m]   (m < LEAF - 1),   x[LEAF - 1] := L(i,k),
 * literal register indices and local reads at literal offsets from c + k + 1,
 * with no test: the column buffers are zero past LEAF, so the columns that
 * have turned past the end (the finished ones, < k) stay as they are.  One
 * step of code, LEAF statements.  On an H100 that builds in about half the
 * time of the leaf before it, a switch over the step's block of eight with a
 * test per entry of that block (float32: the leaf's program 0.78 s against
 * 1.47 s, syrk_leaf 0.94-1.30 s against 1.53-1.58 s; a fully unrolled
 * LEAF = 64 leaf took 19 s), and the blocked potrf runs 15-45 % faster at
 * n = 1024 to 8192 (benchmarks/results/nvidia-h100-2026-11-26-cold-start-6.txt).  For a
 * block of order 64 that is 64 short steps of two warps' worth of items,
 * where a larger work-group would spend each step on a barrier of all its
 * items.
 *
 * With ldw > 0, item i then forms row i of W = L^-1 by back substitution
 * with L^T (W L = I: for p = nb-1 down to 0, z_p /= L(p,p), then
 * z_r -= L(p,r) z_p for r < p), turning the other way (register m holds row
 * p - m mod LEAF), so that the reads of L walk row p of the local copy t at
 * literal offsets; the entries turned past the start read the strictly upper
 * part of t and the zero row before it, both zero.  It writes W^T, nb x nb
 * with zeros below its diagonal, to w (leading dimension ldw); ldw = 0 leaves
 * w alone.  The choice is made at run time (uniform: every item meets the
 * same barriers either way), so one program serves the inverting and the
 * plain leaf.
 *
 * Local memory: ROW_LEAF_LOCAL reals at `work` (the block t with a zero row
 * before it, the two column buffers with their zero halves, the reciprocals
 * of the diagonal).  Returns k + 1 for the first pivot a_kk that is not > 0
 * (or NaN), else 0; the same in every item.  After a failed pivot the step
 * goes on with a_kk = 1 (the block is then garbage and the caller reports
 * the failure).
 */
#ifndef OCLLA_CHOL_LEAF_H
#define OCLLA_CHOL_LEAF_H

#define EL(i, j) (a)[lower ? AT((i), (j), ld) : AT((j), (i), ld)]

#ifndef LEAF_FN
#define LEAF_FN inline     /* how factor_rows is declared (an includer may keep it a call) */
#endif

#include "unroll.h"

#define LS (LEAF + 1)      /* row stride of local copies (odd: no bank conflicts) */
#define COL_HALF (2 * LEAF) /* a column buffer: LEAF entries, then LEAF zeros */
/* factor_rows' local memory: a zero row, the LEAF x LS block, two column
 * buffers, LEAF reciprocals */
#define ROW_LEAF_LOCAL ((LEAF + 1) * LS + 2 * COL_HALF + LEAF)

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
/* register m's neighbour m + 1 (a valid index where there is none: the use is folded away) */
#define NEXT_REG(m) ((m) + 1 < LEAF ? (m) + 1 : 0)
/* the column (row) that register m holds after `turns` steps: (turns + m) mod LEAF */
#define TURNED(turns, m) ((turns) + (m) < LEAF ? (turns) + (m) : (turns) + (m) - LEAF)

LEAF_FN int factor_rows(__global real *a, const int ld, const int nb, const int i,
                       const int items, __local real *work, __global real *w,
                       const int ldw, const int lower)
{
    __local real *t = work + LS;         /* the block; the row before it stays zero */
    __local real *col = work + (LEAF + 1) * LS;
    __local real *rinv = col + 2 * COL_HALF;
    for (int idx = i; idx < LS + 2 * LEAF; idx += items) {
        if (idx < LS)
            work[idx] = ZERO;
        else                             /* the column buffers' zero halves */
            col[(idx - LS) / LEAF * COL_HALF + LEAF + (idx - LS) % LEAF] = ZERO;
    }
    load_lower(a, ld, t, nb, i, items, lower);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int row = i < LEAF;            /* items past LEAF only meet the barriers */
    real x[LEAF];                        /* row i; register m holds column (step + m) mod LEAF */
#define ROW_LOAD(j) x[j] = i >= nb ? (i == (j) ? ONE : ZERO) \
                                   : ((j) <= i ? t[i * LS + (j)] : ZERO);
    UPTO_LEAF(ROW_LOAD)
    if (row)
        col[i] = x[0];
    int bad = 0;
    for (int step = 0; step < nb; step++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        __local const real *c = col + (step & 1) * COL_HALF;
        __local real *next = col + ((step + 1) & 1) * COL_HALF;
        const real akk = c[step];
        if (!(akk > ZERO) && !bad)       /* the same value for all: uniform */
            bad = step + 1;
        if (row) {
            const real d = sqrt(akk > ZERO ? akk : ONE), rd = ONE / d;
            /* x[0] = a_ik; rows above the step are finished: s = 0 keeps their
             * entries right of the diagonal (never stored) from growing */
            const real l = x[0] * rd, s = i >= step ? l * rd : ZERO;
            __local const real *later = c + step + 1;   /* a_jk, j = step + 1 + m; zero past LEAF */
#define ROW_TURN(m) if ((m) < LEAF - 1) x[m] = x[NEXT_REG(m)] - s * later[m];
            UPTO_LEAF(ROW_TURN)
            x[LEAF - 1] = i == step ? d : l;
            next[i] = x[0];
            if (i == step)
                rinv[step] = rd;
        }
    }
    /* row i of L to t, and zeros right of its diagonal (the back substitution reads them) */
#define ROW_TO_LOCAL(m) t[i * LS + TURNED(nb, m)] = TURNED(nb, m) <= i ? x[m] : ZERO;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (row) {
        UPTO_LEAF(ROW_TO_LOCAL)
        t[i * LS + LEAF] = ZERO;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int inverse = ldw > 0;
    real z[LEAF];                        /* row i of W; register m holds W(i, p - m mod LEAF) */
#define Z_ROW(m) (nb - 1 - (m) >= 0 ? nb - 1 - (m) : nb - 1 - (m) + LEAF)   /* at p = nb - 1 */
#define Z_INIT(m) z[m] = Z_ROW(m) == i ? ONE : ZERO;
#define Z_TURN(m) if ((m) < LEAF - 1) z[m] = z[NEXT_REG(m)] - lrow[-1 - (m)] * zp;
    if (row && inverse) {
        UPTO_LEAF(Z_INIT)
        for (int p = nb - 1; p >= 0; p--) {
            const real zp = z[0] * rinv[p];
            __local const real *lrow = t + p * LS + p;  /* lrow[-1 - m] = L(p, p - 1 - m) */
            UPTO_LEAF(Z_TURN)
            z[LEAF - 1] = zp;
        }
    }
    store_lower(a, ld, t, nb, i, items, lower);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* after nb steps register m holds W(i, LEAF - 1 - m): column i of W^T */
#define Z_TO_LOCAL(m) t[(LEAF - 1 - (m)) * LS + i] = z[m];
    if (row && inverse) {
        UPTO_LEAF(Z_TO_LOCAL)
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
