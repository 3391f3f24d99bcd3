/* cholesky.cl -- Cholesky factorization A = L L^T: per-pivot kernels and the
 * one-work-group diagonal-block kernel.
 *
 * Every kernel is written for the lower factor L and reaches its entries
 * through EL(i, j), i >= j, so one source serves row-major lower and upper
 * (U = L^T) storage and both RFP layouts (triangle.h's four storages, chosen
 * here by the kernels' arguments `lower` and `packed`).  Only
 * the entries with i >= j are ever read or written: the other triangle of
 * the input is ignored, as LAPACK's ?potrf does.
 *
 * Per-pivot step k (the paper's Algorithm 4/5, host loop over k):
 *
 *          k               sqrt_pivot        one work-item: L(k,k) = sqrt(L(k,k))
 *     +----+--------+      normalize_column  below k:       L(i,k) /= L(k,k)
 *     |\   |        |      outer_product     exactly the t(t+1)/2 entries of the
 *   k |  \ *        |                        trailing triangle, t = n-k-1:
 *     |    #\       |                        L(i,j) -= L(i,k) L(j,k), k < j <= i
 *     |    # \      |      A 1-D id enumerates the triangle row by row
 *     |    #  \     |      (triangle_entry): id = r(r+1)/2 + c -> (r, c),
 *     +----+--------+      (i, j) = (k+1+r, k+1+c)
 *     * pivot, # normalized column, \ trailing triangle
 *
 * The diagonal-block kernels factor a block of order <= LEAF in the
 * registers of one work-group -- potf2_block with its entries spread over WG
 * items, potf2_rows with one item per row (chol_leaf.h; ROW_LEAF = 1 builds
 * it instead of potf2_block) -- and, given a buffer for it (ldw > 0), also
 * invert it, so that apply_inverse solves the panel beside it by one
 * multiplication (blocked potrf: larger diagonal blocks are split
 * recursively, the rest is TRSM and SYRK).  They serve full storage only
 * (blocked RFP works on the packed array's sub-blocks, which are ordinary
 * strided matrices).
 *
 * Two programs, by whether LEAF is defined, so that each build compiles only
 * what its caller launches (a leaf of order 64 is most of this file's
 * compile time):
 *   LEAF undefined: the per-pivot kernels, one program for all four
 *                   storages (the arguments lower and packed);
 *   LEAF defined:   the leaf (inverting or not, chosen by ldw at run time)
 *                   and apply_inverse -- one program for every order and
 *                   both triangles: they take the triangle as an argument
 *                   (lower: 1 row-major lower, 0 upper; LOWER is not used);
 *                   with LEAF_KERNEL = 0 apply_inverse alone, where
 *                   syrk_leaf.cl's kernel factors the leaves.
 *
 * info (one int, 0 on entry): the first kernel that meets a pivot that is
 * not > 0 (or NaN) stores base + k + 1, LAPACK's info, and every later
 * kernel returns at once, so the host reads the flag once at the end.
 */
#include "common.h"
#include "triangle.h"

#ifndef WG
#define WG 64              /* work-group size of potf2_block */
#endif

#ifndef LEAF
/* the stored entry (i, j), i >= j: lower (1: row-major lower or RFP 'L'; 0: the
 * transpose, row-major upper or RFP 'U') and packed (RFP of order n) as in triangle.h */
#define EL(i, j) a[packed ? (lower ? rfp_lower((i), (j), n) : rfp_upper((j), (i), n)) \
                          : (lower ? AT((i), (j), ld) : AT((j), (i), ld))]

__kernel void sqrt_pivot(__global real *a, const long off, const int ld, const int n,
                         const int k, __global int *info, const int lower, const int packed)
{
    a += off;
    if (*info)
        return;
    const real akk = EL(k, k);
    if (!(akk > ZERO)) {                 /* also true for NaN */
        *info = k + 1;
        return;
    }
    EL(k, k) = sqrt(akk);
}

__kernel void normalize_column(__global real *a, const long off, const int ld,
                               const int n, const int k, __global const int *info,
                               const int lower, const int packed)
{
    a += off;
    const int i = k + 1 + get_global_id(0);
    if (i >= n || *info)
        return;
    EL(i, k) = EL(i, k) / EL(k, k);
}

__kernel void outer_product(__global real *a, const long off, const int ld, const int n,
                            const int k, __global const int *info, const int lower,
                            const int packed)
{
    a += off;
    const long t = n - k - 1;
    const long id = get_global_id(0);
    if (id >= t * (t + 1) / 2 || *info)
        return;
    const int2 rc = triangle_entry(id);
    const int i = k + 1 + rc.x, j = k + 1 + rc.y;
    EL(i, j) -= EL(i, k) * EL(j, k);
}

#else                      /* LEAF defined: the leaves' largest block order; EL: chol_leaf.h's
                              (the stored triangle by the kernels' argument `lower`) */
#include "unroll.h"
#ifndef ROW_LEAF
#define ROW_LEAF 0         /* the leaf kernel: 0 potf2_block, 1 potf2_rows */
#endif
#ifndef LEAF_KERNEL
#define LEAF_KERNEL 1      /* 0: no leaf kernel, apply_inverse alone (syrk_leaf.cl
                              factors the leaves: cholesky.py, FUSE_LEAF) */
#endif
#include "chol_leaf.h"

/* potf2_block keeps the LEAF x LEAF block in registers: entry e = i*LEAF + j
 * belongs to work-item e % WG, slot e / WG (SLOTS <= 64 slots, literal
 * indices through unroll.h).  A slot is live if its entry is in the lower
 * triangle of the nb x nb block. */
#define SLOTS ((LEAF * LEAF + WG - 1) / WG)
#define SLOT_ROW(s) ((lid + (s) * WG) / LEAF)
#define SLOT_COL(s) ((lid + (s) * WG) % LEAF)
#define LIVE(s) ((s) < SLOTS && SLOT_ROW(s) < nb && SLOT_COL(s) <= SLOT_ROW(s))

/* Factor the nb x nb diagonal block at a + off (nb <= LEAF) in one
 * work-group, right-looking, one barrier per column: the items holding
 * column k publish it into one of two local buffers (alternating, so the
 * next column never overwrites one still being read), then every item
 * updates its own entries:
 *     L(k,k) = sqrt(a_kk),  L(i,k) = a_ik / L(k,k),
 *     a_ij -= L(i,k) L(j,k)          for k < j <= i.
 * The block is staged through local memory both ways so that global reads
 * and writes walk the stored triangle's contiguous index fastest.
 *
 * With ldw > 0 (the blocked potrf's panel solve by multiplication) it then
 * forms W = L^-1 the same way, row by row (W(p,:) /= L(p,p), then
 * W(i,:) -= L(i,p) W(p,:) for i > p), and writes W^T, nb x nb with zeros
 * below its diagonal, to w (leading dimension ldw; ldw = 0: w is unused).
 * The choice is an argument, uniform over the work-group: the barriers of
 * the inverse's part are met either way (its loop is empty without it). */
#if LEAF_KERNEL && !ROW_LEAF
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void potf2_block(__global real *a, const long off, const int ld, const int nb,
                 const int base, __global int *info, __global real *w, const int ldw,
                 const int lower)
{
    __local real t[LEAF * LS];
    __local real col[2][LEAF];
    a += off;
    const int lid = get_local_id(0);
    const int failed = *info;
    barrier(CLK_GLOBAL_MEM_FENCE);       /* all have read info before it may change */
    if (failed)
        return;
    load_lower(a, ld, t, nb, lid, WG, lower);
    barrier(CLK_LOCAL_MEM_FENCE);
    real x[64];
#define LOAD(s) if (LIVE(s)) x[s] = t[SLOT_ROW(s) * LS + SLOT_COL(s)];
    ALL64(LOAD)
    int bad = 0;
    for (int k = 0; k < nb; k++) {
        __local real *c = col[k & 1];
#define PUBLISH(s) if (LIVE(s) && SLOT_COL(s) == k) c[SLOT_ROW(s)] = x[s];
        ALL64(PUBLISH)
        barrier(CLK_LOCAL_MEM_FENCE);
        const real akk = c[k];
        if (!(akk > ZERO)) {             /* the same value for all: a uniform exit */
            bad = k + 1;
            break;
        }
        const real d = sqrt(akk), rd = ONE / d;
#define FACTOR(s) if (LIVE(s)) { \
            const int i = SLOT_ROW(s), j = SLOT_COL(s); \
            if (j == k) \
                x[s] = i == k ? d : x[s] * rd; \
            else if (j > k) \
                x[s] -= (c[i] * rd) * (c[j] * rd); }
        ALL64(FACTOR)
    }
#define TO_LOCAL(v, s) if (LIVE(s)) t[SLOT_ROW(s) * LS + SLOT_COL(s)] = v[s];
#define X_TO_LOCAL(s) TO_LOCAL(x, s)
    barrier(CLK_LOCAL_MEM_FENCE);
    ALL64(X_TO_LOCAL)
    barrier(CLK_LOCAL_MEM_FENCE);
    const int inverse = ldw > 0;
    real y[64];
#define INIT_W(s) if (LIVE(s)) y[s] = SLOT_ROW(s) == SLOT_COL(s) ? ONE : ZERO;
    if (inverse) {
        ALL64(INIT_W)
    }
    const int rows = bad || !inverse ? 0 : nb;  /* no barrier in a branch: an empty loop */
    for (int p = 0; p < rows; p++) {
        __local real *r = col[p & 1];
        const real lpp = t[p * LS + p];
#define PUBLISH_W(s) if (LIVE(s) && SLOT_ROW(s) == p) { \
            y[s] /= lpp; \
            r[SLOT_COL(s)] = y[s]; }
        ALL64(PUBLISH_W)
        barrier(CLK_LOCAL_MEM_FENCE);
#define ELIM_W(s) if (LIVE(s) && SLOT_ROW(s) > p && SLOT_COL(s) <= p) \
            y[s] -= t[SLOT_ROW(s) * LS + p] * r[SLOT_COL(s)];
        ALL64(ELIM_W)
    }
    store_lower(a, ld, t, nb, lid, WG, lower);  /* here, not before the loop: PoCL 3.1 dropped
                                            global stores placed ahead of it */
#define Y_TO_LOCAL(s) TO_LOCAL(y, s)
    barrier(CLK_LOCAL_MEM_FENCE);
    if (inverse) {
        ALL64(Y_TO_LOCAL)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = inverse ? lid : nb * nb; idx < nb * nb; idx += WG) {
        const int r = idx / nb, c = idx % nb;          /* W^T(r, c) = W(c, r) */
        w[AT(r, c, ldw)] = c >= r ? t[c * LS + r] : ZERO;
    }
    if (bad && lid == 0)
        *info = base + bad;
}
#endif

/* potf2_rows: the same result as potf2_block (the inverse included) from a
 * work-group of LEAF items, one per row of the block (chol_leaf.h). */
#if LEAF_KERNEL && ROW_LEAF
__kernel __attribute__((reqd_work_group_size(LEAF, 1, 1)))
void potf2_rows(__global real *a, const long off, const int ld, const int nb,
                const int base, __global int *info, __global real *w, const int ldw,
                const int lower)
{
    __local real work[ROW_LEAF_LOCAL];
    const int failed = *info;
    barrier(CLK_GLOBAL_MEM_FENCE);       /* all have read info before it may change */
    if (failed)
        return;
    const int bad = factor_rows(a + off, ld, nb, get_local_id(0), LEAF, work, w, ldw, lower);
    if (bad && get_local_id(0) == 0)
        *info = base + bad;
}
#endif

/* B := B V in place, B the rows x nb panel beside a factored diagonal block,
 * held as the stored triangle holds it (B(r, p) = EL(r, p) at b + off: rows
 * of L21, or columns of U12 = L21^T), V the nb x nb matrix at v (leading
 * dimension ldv): the blocked potrf's panel solve L21 = A21 L11^-T with
 * V = W^T from the leaf.  Work-group g stages V and rows [g*APPLY_ROWS,
 * g*APPLY_ROWS + APPLY_ROWS) of B in local memory, then overwrites those rows,
 * each work-item APPLY_RB entries of a strip across B's contiguous index
 * (lower: APPLY_RB rows of one column, upper: APPLY_RB columns of one row), so
 * that one read of V (lower) or of the staged B (upper) serves APPLY_RB
 * products and neighbouring items load and store neighbouring entries.  Every
 * read of the products' loop is a local one: with V read from global memory
 * there, the loop waited on its loads (H200, LEAF = 64, 16 rows a work-group:
 * 17-20 us a launch, with V staged 7.4-7.9 us, both dtypes;
 * benchmarks/results/nvidia-h200-2026-11-29-potrf-small-3.txt). */
#ifndef APPLY_ROWS
#define APPLY_ROWS LEAF    /* rows of B per work-group (at most LEAF) */
#endif
#ifndef APPLY_RB
#define APPLY_RB 4         /* entries of B per work-item */
#endif
#define APPLY_LOCAL (LEAF * LEAF + APPLY_ROWS * LS)   /* V, then the staged rows of B */

/* Entries (row + k*drow, col + k*dcol), k < APPLY_RB, of the staged rows bs
 * (h x nb) times the staged V (vs, LEAF x LEAF), stored to B at row r0 (those
 * inside h x nb).  drow, dcol: literals of the call (0 or 1), so that the
 * compiler sees which loads the strip shares. */
inline void apply_strip(__global real *a, const int ld, const int lower,
                        __local const real *bs, __local const real *vs, const int nb,
                        const int h, const int r0, const int row, const int col,
                        const int drow, const int dcol)
{
    __local const real *bk[APPLY_RB];
    __local const real *vk[APPLY_RB];
    real s[APPLY_RB];
    #pragma unroll
    for (int k = 0; k < APPLY_RB; k++) {      /* entries past h x nb: clamped reads */
        bk[k] = bs + min(row + k * drow, APPLY_ROWS - 1) * LS;
        vk[k] = vs + min(col + k * dcol, nb - 1);
        s[k] = ZERO;
    }
    for (int p = 0; p < nb; p++) {
        #pragma unroll
        for (int k = 0; k < APPLY_RB; k++)
            s[k] += bk[k][p] * vk[k][p * LEAF];
    }
    #pragma unroll
    for (int k = 0; k < APPLY_RB; k++)
        if (row + k * drow < h && col + k * dcol < nb)
            EL(r0 + row + k * drow, col + k * dcol) = s[k];
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void apply_inverse(__global real *a, const long off, const int ld, const int rows,
                   const int nb, __global const real *v, const int ldv,
                   __global const int *info, const int lower)
{
    __local real vs[APPLY_LOCAL];
    __local real *bs = vs + LEAF * LEAF;
    a += off;
    const int lid = get_local_id(0);
    const int r0 = get_group_id(0) * APPLY_ROWS;
    const int h = *info ? 0 : min(APPLY_ROWS, rows - r0);  /* no return ahead of a barrier */
    for (int idx = lid; idx < (h ? nb * nb : 0); idx += WG)
        vs[idx / nb * LEAF + idx % nb] = v[AT(idx / nb, idx % nb, ldv)];
    for (int idx = lid; idx < h * nb; idx += WG) {
        const int2 e = square_entry(idx, lower ? nb : h, lower);
        bs[e.x * LS + e.y] = EL(r0 + e.x, e.y);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int strips = lower ? (h + APPLY_RB - 1) / APPLY_RB * nb
                             : (nb + APPLY_RB - 1) / APPLY_RB * h;
    for (int idx = lid; idx < strips; idx += WG) {
        if (lower)         /* row-major rows: items along the columns */
            apply_strip(a, ld, lower, bs, vs, nb, h, r0, idx / nb * APPLY_RB, idx % nb, 1, 0);
        else               /* columns of U12: items along the rows */
            apply_strip(a, ld, lower, bs, vs, nb, h, r0, idx % h, idx / h * APPLY_RB, 0, 1);
    }
}
#endif
