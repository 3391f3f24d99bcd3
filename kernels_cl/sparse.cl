/* sparse.cl -- supernodal sparse Cholesky (oclla/sparse/numeric.py, factor.py).
 *
 * L storage: one flat array `l` of reals.  Supernode s owns the permuted
 * columns sp[s] .. sp[s+1]-1 (nc of them) and the rows ri[rp[s] .. rp[s+1]-1]
 * (nr of them, sorted, its own columns first); its values are a column-major
 * nr x nc block at l + lp[s], leading dimension nr:
 *
 *     X(i, k) = l[lp[s] + k*nr + i]         row ri[rp[s] + i], column sp[s] + k
 *
 * The strict upper part of the diagonal block (i < k < nc) is never written.
 * The m = nr - nc rows below the diagonal block are the "off-diagonal rows".
 *
 * Batched kernels take a `list` of supernodes, one work-group each (WG
 * items): supernodes of one level of the elimination tree, independent of
 * each other.  The update kernels (assemble, fsolve_update) take one
 * work-group per *target* supernode t and a list of (source s, target t)
 * pairs sorted by target: pair q says that the off-diagonal rows j0 .. j1-1
 * of s lie in t's columns, and rel[relp[q] + (i - j0)] is the position in
 * t's row list of s's off-diagonal row i >= j0 (the structure of s below j0
 * is a subset of t's).  A work-group applies its target's pairs one after
 * the other, so no two work-items ever write the same entry at once and the
 * sums are formed in a fixed order: the result does not depend on the
 * schedule of the work-groups.
 *
 * Failure: factor_batch records the smallest failing (permuted, 1-based)
 * column of its launch in *info (atomic minimum over the nonzero values);
 * every factor kernel returns at once when *info is already set, so the host
 * reads the flag once, after the whole factorization.
 */
#include "common.h"

#ifndef WG
#define WG 64              /* work-group size of the batched kernels */
#endif
#ifndef ROWS_CHUNKED
#define ROWS_CHUNKED 0     /* 1 (CPUs): factor_batch gives each item a contiguous run of
                              rows, assemble whole target columns; 0 (GPUs): rows
                              strided by WG, neighbouring items on neighbouring rows */
#endif
#ifndef RLB
#define RLB 0              /* assemble: 0 reads the update matrices from w (RL),
                              1 forms each entry from the source's block (RLB) */
#endif

#ifndef BATCH_GEMM
#define BATCH_GEMM 0       /* the program holds rlb_gemm: 1 on gemm_tile.h (its defines),
                              2 on gemm_direct.h (RM, VW, NV) */
#endif

#define X(base, nr, i, k) (base)[(long)(k) * (nr) + (i)]

/* x[i] = 0 for i < size: a contiguous run per work-item where ROWS_CHUNKED (CPUs: the
 * run's loop becomes a fill of whole cache lines), else strided by the global size */
__kernel void zero(__global real *x, const long size)
{
#if ROWS_CHUNKED
    const long items = get_global_size(0);
    const long run = (size + items - 1) / items;
    const long first = get_global_id(0) * run;
    const long last = min(first + run, size);
    for (long i = first; i < last; i++)
        x[i] = ZERO;
#else
    for (long i = get_global_id(0); i < size; i += get_global_size(0))
        x[i] = ZERO;
#endif
}

/* l[map[i]] = a[i] for i < count: A's lower-triangle values into L storage */
__kernel void scatter_values(const long count, __global const real *a,
                             __global const long *map, __global real *l)
{
    for (long i = get_global_id(0); i < count; i += get_global_size(0))
        l[map[i]] = a[i];
}

/* *info = min(*info, v) over nonzero values (0: unset) */
void record_failure(__global int *info, const int v)
{
    int old = *info;
    while (old == 0 || old > v) {
        const int seen = atomic_cmpxchg(info, old, v);
        if (seen == old)
            break;
        old = seen;
    }
}

/* Factor each listed supernode's nr x nc block in place: the Cholesky factor
 * of its diagonal block and L21 = A21 L11^-T below it (potrf and trsm),
 * left-looking, one column per step:
 *     X(i,j) -= sum_{k<j} X(i,k) X(j,k)        (i >= j)
 *     X(j,j) = sqrt(X(j,j)),  X(i,j) /= X(j,j)  (i > j)
 * ROWS_CHUNKED = 0: work-item lid owns rows j+lid, j+lid+WG, ... (neighbouring
 * items read neighbouring entries: GPUs); 1: a contiguous run of rows each, the
 * products column by column along it (a CPU runs each item's loops as written,
 * so they should walk memory contiguously).  Either way an item scales the
 * rows it updated, and row j belongs to item 0. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void factor_batch(__global const int *list, __global const int *sp, __global const long *rp,
                  __global const long *lp, __global real *l, __global int *info)
{
    const int s = list[get_group_id(0)];
    const int lid = get_local_id(0);
    const int nc = sp[s + 1] - sp[s];
    const int nr = (int)(rp[s + 1] - rp[s]);
    __global real *x = l + lp[s];
    __local int failed;                       /* one read of the flag for the group */
    if (lid == 0)
        failed = *info;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (failed)
        return;
    for (int j = 0; j < nc; j++) {
#if ROWS_CHUNKED
        const int per = (nr - j + WG - 1) / WG;
        const int i0 = j + lid * per, i1 = min(nr, i0 + per), step = 1;
        __global real *xj = x + (long)j * nr;
        int k = 0;
        for (; k + 4 <= j; k += 4) {          /* four columns per pass over the rows */
            const real a0 = X(x, nr, j, k), a1 = X(x, nr, j, k + 1);
            const real a2 = X(x, nr, j, k + 2), a3 = X(x, nr, j, k + 3);
            __global const real *x0 = x + (long)k * nr;
            for (int i = i0; i < i1; i++) {
                const real t = MUL_ADD(x0[i], a0, MUL_ADD(x0[i + nr], a1,
                               MUL_ADD(x0[i + 2 * nr], a2, x0[i + 3 * nr] * a3)));
                xj[i] -= t;
            }
        }
        for (; k < j; k++) {
            const real xjk = X(x, nr, j, k);
            __global const real *xk = x + (long)k * nr;
            for (int i = i0; i < i1; i++)
                xj[i] = MUL_ADD(-xk[i], xjk, xj[i]);
        }
#else
        const int i0 = j + lid, i1 = nr, step = WG;
        for (int i = i0; i < i1; i += step) {
            real acc = X(x, nr, i, j);
            for (int k = 0; k < j; k++)
                acc = MUL_ADD(-X(x, nr, i, k), X(x, nr, j, k), acc);
            X(x, nr, i, j) = acc;
        }
#endif
        barrier(CLK_GLOBAL_MEM_FENCE);
        /* a pivot that is not positive is recorded and replaced by one, so that the
         * group's control flow stays the same for every item (no return between
         * barriers); the rest of this block is then meaningless, and the later
         * launches see the flag and return at once */
        const real d = X(x, nr, j, j);
        if (!(d > ZERO) && lid == 0)
            record_failure(info, sp[s] + j + 1);
        const real r = d > ZERO ? sqrt(d) : ONE;
        for (int i = i0; i < i1; i += step)
            if (i != j)
                X(x, nr, i, j) /= r;
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (lid == 0)               /* after every item has read d; no later step reads it */
            X(x, nr, j, j) = r;
    }
}

/* Entries (i, j0 .. j0+3) of C = Y Y^T, Y the rows below the nc columns of a block */
#define DOT4(x, nr, nc, i, j0, c)                                                    \
    do {                                                                           \
        c[0] = c[1] = c[2] = c[3] = ZERO;                                          \
        for (int k = 0; k < (nc); k++) {                                           \
            const real yi = X(x, nr, (nc) + (i), k);                               \
            c[0] = MUL_ADD(yi, X(x, nr, (nc) + (j0), k), c[0]);                    \
            c[1] = MUL_ADD(yi, X(x, nr, (nc) + (j0) + 1, k), c[1]);                \
            c[2] = MUL_ADD(yi, X(x, nr, (nc) + (j0) + 2, k), c[2]);                \
            c[3] = MUL_ADD(yi, X(x, nr, (nc) + (j0) + 3, k), c[3]);                \
        }                                                                          \
    } while (0)

/* RL's update matrices: for each listed supernode (nc columns, m = nr - nc
 * off-diagonal rows) the lower triangle of C = L21 L21^T, m x m, column-major
 * at w + wp[g] (g the list position):  C(i,j) = sum_k X(nc+i,k) X(nc+j,k).
 * Four columns at a time (each X(nc+i,k) read once for four products); the
 * last group of columns reads rows past m-1 only where m is not a multiple of 4
 * -- those lie inside the block (the rows are clamped) and are not stored. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void syrk_batch(__global const int *list, __global const int *sp, __global const long *rp,
                __global const long *lp, __global const real *l, __global const long *wp,
                __global real *w)
{
    const int g = get_group_id(0), s = list[g];
    const int nc = sp[s + 1] - sp[s];
    const int nr = (int)(rp[s + 1] - rp[s]);
    const int m = nr - nc;
    __global const real *x = l + lp[s];
    __global real *out = w + wp[g];
    for (int j0 = 0; j0 < m; j0 += 4) {
        const int jl = min(j0, m - 4 > 0 ? m - 4 : 0);   /* 4 valid columns when m >= 4 */
        for (int i = j0 + get_local_id(0); i < m; i += WG) {
            real c[4];
            if (m >= 4) {
                DOT4(x, nr, nc, i, jl, c);
            } else {
                for (int t = 0; t < 4; t++) {
                    c[t] = ZERO;
                    if (jl + t < m)
                        for (int k = 0; k < nc; k++)
                            c[t] = MUL_ADD(X(x, nr, nc + i, k), X(x, nr, nc + jl + t, k), c[t]);
                }
            }
            for (int t = 0; t < 4; t++) {
                const int j = jl + t;
                if (j >= j0 && j < m && i >= j)
                    out[(long)j * m + i] = c[t];
            }
        }
    }
}

/* Assemble the listed sources' updates into their targets' columns
 * (scatter-subtract through the relative indices), one work-group per target
 * and column slice (dimension 1 of the NDRange: slice z of Z takes the target
 * columns c with (c / 4) % Z == z, so a wide target is shared by Z work-groups):
 *     L_t(rel(i), row_j - sp[t]) -= C_s(i, j)      j0 <= j < j1, i >= j
 * C_s from w + pw[q] (RL) or formed from X_s (RLB: four columns j at a time,
 * each X(nc+i,k) read once for up to four products). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void assemble(__global const int *targets, __global const int *pair_ptr,
              __global const int *src, __global const int *j0s, __global const int *j1s,
              __global const long *relp, __global const int *rel, __global const long *pw,
              __global const int *sp, __global const long *rp, __global const long *lp,
              __global const int *ri, __global real *l, __global const real *w)
{
    const int tg = get_group_id(0), t = targets[tg];
    const int z = get_group_id(1), slices = get_num_groups(1);
    const int nrt = (int)(rp[t + 1] - rp[t]), ct = sp[t];
    __global real *lt = l + lp[t];
#if ROWS_CHUNKED
    /* CPUs: work-item (z, lid) owns the target columns c with c % (Z*WG) == z*WG + lid
     * and walks each of its columns down, pair after pair: no two items share an
     * entry, so no barriers (a barrier per pair costs a CPU a loop over all WG items) */
    const int owner = z * WG + get_local_id(0);
    for (int q = pair_ptr[tg]; q < pair_ptr[tg + 1]; q++) {
        const int s = src[q], j0 = j0s[q], j1 = j1s[q];
        const int nc = sp[s + 1] - sp[s];
        const int nr = (int)(rp[s + 1] - rp[s]);
        const int m = nr - nc;
        __global const int *rq = rel + relp[q] - j0;
        __global const int *rows = ri + rp[s] + nc;
        for (int j = j0; j < j1; j++) {
            const int col = rows[j] - ct;
            if (col % (slices * WG) != owner)
                continue;
            __global real *lc = lt + (long)col * nrt;
#if RLB
            /* four source columns k per pass down the target column (each scattered
             * entry read and written once for four products) */
            __global const real *x = l + lp[s] + nc;
            int k = 0;
            for (; k + 4 <= nc; k += 4) {
                __global const real *x0 = x + (long)k * nr;
                const real a0 = x0[j], a1 = x0[nr + j], a2 = x0[2 * nr + j];
                const real a3 = x0[3 * nr + j];
                for (int i = j; i < m; i++)
                    lc[rq[i]] -= MUL_ADD(x0[i], a0, MUL_ADD(x0[i + nr], a1,
                                 MUL_ADD(x0[i + 2 * nr], a2, x0[i + 3 * nr] * a3)));
            }
            for (; k < nc; k++) {
                __global const real *xk = x + (long)k * nr;
                const real a = xk[j];
                for (int i = j; i < m; i++)
                    lc[rq[i]] = MUL_ADD(-xk[i], a, lc[rq[i]]);
            }
#else
            __global const real *c = w + pw[q] + (long)j * m;
            for (int i = j; i < m; i++)
                lc[rq[i]] -= c[i];
#endif
        }
    }
    return;
#endif
    for (int q = pair_ptr[tg]; q < pair_ptr[tg + 1]; q++) {
        const int s = src[q], j0 = j0s[q], j1 = j1s[q];
        const int nc = sp[s + 1] - sp[s];
        const int nr = (int)(rp[s + 1] - rp[s]);
        const int m = nr - nc;
        __global const int *rq = rel + relp[q];
        __global const int *rows = ri + rp[s] + nc;
#if RLB
        __global const real *x = l + lp[s];
#else
        __global const real *c = w + pw[q];
#endif
        for (int j = j0; j < j1; ) {
            /* a group of at most four columns j .. je-1 of one slice */
            const int group = (rows[j] - ct) / 4;
            int je = j + 1;
            while (je < j1 && je < j + 4 && (rows[je] - ct) / 4 == group)
                je++;
            if (group % slices == z) {
                const int g = je - j;
                for (int i = j + get_local_id(0); i < m; i += WG) {
                    real v[4];
#if RLB
                    v[0] = v[1] = v[2] = v[3] = ZERO;
                    __global const real *xj = x + nc + j;
                    for (int k = 0; k < nc; k++) {
                        const long ck = (long)k * nr;
                        const real yi = x[ck + nc + i];
                        v[0] = MUL_ADD(yi, xj[ck], v[0]);
                        v[1] = MUL_ADD(yi, xj[ck + min(1, g - 1)], v[1]);
                        v[2] = MUL_ADD(yi, xj[ck + min(2, g - 1)], v[2]);
                        v[3] = MUL_ADD(yi, xj[ck + min(3, g - 1)], v[3]);
                    }
#else
                    for (int u = 0; u < 4; u++)
                        v[u] = u < g && i >= j + u ? c[(long)(j + u) * m + i] : ZERO;
#endif
                    for (int u = 0; u < g; u++)
                        if (i >= j + u)
                            lt[(long)(rows[j + u] - ct) * nrt + rq[i - j0]] -= v[u];
                }
            }
            j = je;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

/* ---- RLB's block-pair GEMMs, batched (programs built with BATCH_GEMM = 1 or 2) ----------
 *
 * One launch covers a list of GEMMs of one supernode s (nr rows, nc columns; base: the
 * position in l of X(nc, 0), its first off-diagonal row): GEMM d (desc[5d .. 5d+4] =
 * rj, ri, j0, i0, ldt) subtracts the product of the row blocks Bj = rows j0 .. j0+rj-1
 * and Bi = rows i0 .. i0+ri-1 (positions among the off-diagonal rows, Bi at or below Bj)
 * from the ancestor's block at l + tgt[d]:
 *
 *     C(r, c) -= sum_k X(nc+j0+r, k) X(nc+i0+c, k),   C(r, c) = l[tgt[d] + r*ldt + c]
 *
 * (C read row-major is the ancestor's column-major block: r its column, c its row).
 * Row-major, X's columns from position nc are the nc x m matrix U12 (leading dimension nr),
 * so this is a GEMM with op(A) = U12[:, Bj]^T (TRANS_A = 1), B = U12[:, Bi] (TRANS_B = 0),
 * alpha = -1, beta = 1; a diagonal pair (Bi = Bj) writes the upper triangle (TRIANGLE = 2,
 * the ancestor's lower one), and the host launches those apart from the others.  The
 * launch's units are the GEMMs' blocks, GEMM d owning units tile_ptr[d] .. tile_ptr[d+1]-1,
 * so one large GEMM spreads over many of them and many small ones share the launch:
 *   BATCH_GEMM = 1 (GPUs): a unit is a work-group computing a TILE_M x TILE_N tile
 *     (gemm_tile.h), the tiles of a GEMM in row-major order;
 *   BATCH_GEMM = 2 (CPUs): a unit is a work-item computing an RM x RN block in registers
 *     (gemm_direct.h, no barriers), down the rows first (neighbouring items share B).
 * No two GEMMs of a list touch the same entry (distinct pairs of blocks map to distinct
 * entries). */
#if BATCH_GEMM                /* gemm_tile.h: the tiles (1), the triangle macros (both) */
#include "gemm_tile.h"
#endif
#ifndef TRIANGLE
#define TRIANGLE 0         /* the triangle of C the batched GEMMs write (gemm_tile.h's
                              `triangle`, which each kernel below sets from it) */
#endif
#if BATCH_GEMM == 2
#include "gemm_direct.h"
#endif

#if BATCH_GEMM
/* the GEMM d of a list whose units tile_ptr[d] .. tile_ptr[d+1]-1 hold unit g */
int gemm_of(const int count, __global const int *tile_ptr, const int g)
{
    int lo = 0, hi = count - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (tile_ptr[mid] <= g)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}
#endif

#if BATCH_GEMM == 1
__kernel __attribute__((reqd_work_group_size(WG_X, WG_Y, 1)))
void rlb_gemm(const int count, __global const int *tile_ptr, __global const int *desc,
              __global const long *tgt, __global real *l, const long base, const int nr,
              const int nc)
{
    __local REALV(LVM) As_v[GEMM_AS_SIZE / LVM];
    __local REALV(LVN) Bs_v[GEMM_BS_SIZE / LVN];
    const int g = get_group_id(0), d = gemm_of(count, tile_ptr, g), triangle = TRIANGLE;
    __global const int *e = desc + 5 * d;
    const int rj = e[0], ri = e[1], ldt = e[4];
    const int tiles_n = (ri + TILE_N - 1) / TILE_N, t = g - tile_ptr[d];
    gemm_tile(rj, ri, nc, -ONE, l + base + e[2], nr, 1, l + base + e[3], nr, 0, ONE,
              l + tgt[d], ldt, (t / tiles_n) * TILE_M, (t % tiles_n) * TILE_N, triangle,
              (__local real *)As_v, (__local real *)Bs_v);
}
#elif BATCH_GEMM == 2
__kernel void rlb_gemm(const int count, __global const int *tile_ptr,
                       __global const int *desc, __global const long *tgt, __global real *l,
                       const long base, const int nr, const int nc)
{
    const int g = get_global_id(0), triangle = TRIANGLE;
    if (g >= tile_ptr[count])
        return;
    const int d = gemm_of(count, tile_ptr, g);
    __global const int *e = desc + 5 * d;
    const int rj = e[0], ri = e[1], ldt = e[4];
    const int blocks_m = (rj + RM - 1) / RM, t = g - tile_ptr[d];
    const int row0 = (t % blocks_m) * RM, col0 = (t / blocks_m) * RN;
    if (BLOCK_EMPTY(row0, col0, RM, RN))
        return;
    __global const real *A = l + base + e[2];
    __global const real *B = l + base + e[3];
    __global real *C = l + tgt[d];
    if (row0 + RM <= rj && col0 + RN <= ri && BLOCK_INSIDE(row0, col0, RM, RN))
        direct_block(1, rj, ri, nc, -ONE, A, nr, B, nr, ONE, C, ldt, row0, col0, triangle);
    else
        direct_block(0, rj, ri, nc, -ONE, A, nr, B, nr, ONE, C, ldt, row0, col0, triangle);
}

/* RL's update matrices of the batched supernodes on CPUs (what syrk_batch computes, in
 * gemm_direct.h's register blocks): listed supernode d = list[d'] has the units
 * unit_ptr[d] .. unit_ptr[d+1]-1, an RM x RN block each of its m x m update matrix
 * C = U12^T U12 (U12 = X's rows nc.. read row-major: nc x m, leading dimension nr),
 * row-major at w + wp[d] (leading dimension m), upper triangle (TRIANGLE = 2: the
 * column-major lower triangle that assemble reads).  Built with TRANS_A = 1 and the
 * gemm_direct defines, in the program of the diagonal rlb_gemm launches. */
__kernel void syrk_direct_batch(const int count, __global const int *unit_ptr,
                                __global const int *list, __global const int *sp,
                                __global const long *rp, __global const long *lp,
                                __global const real *l, __global const long *wp,
                                __global real *w)
{
    const int g = get_global_id(0), triangle = TRIANGLE;
    if (g >= unit_ptr[count])
        return;
    const int d = gemm_of(count, unit_ptr, g), s = list[d];
    const int nc = sp[s + 1] - sp[s];
    const int nr = (int)(rp[s + 1] - rp[s]);
    const int m = nr - nc;
    const int blocks_m = (m + RM - 1) / RM, t = g - unit_ptr[d];
    const int row0 = (t % blocks_m) * RM, col0 = (t / blocks_m) * RN;
    if (BLOCK_EMPTY(row0, col0, RM, RN))
        return;
    __global const real *A = l + lp[s] + nc;
    __global real *C = w + wp[d];
    if (row0 + RM <= m && col0 + RN <= m && BLOCK_INSIDE(row0, col0, RM, RN))
        direct_block(1, m, m, nc, ONE, A, nr, A, nr, ZERO, C, m, row0, col0, triangle);
    else
        direct_block(0, m, m, nc, ONE, A, nr, A, nr, ZERO, C, m, row0, col0, triangle);
}

/* ---- the large supernodes on CPUs: packed products, the inner dimension in blocks --------
 * C = alpha * X[:, :M]^T X[:, :N] + beta * C on C's upper triangle (c >= r; C M x N
 * row-major at C + c_off, leading dimension ldc; X K x N row-major, M <= N): RL's update
 * matrix (X = U12, C in w) and the updates of a supernode's own later columns (X the rows
 * of a block of columns, C the rest of the supernode in L).  pack_strips first copies
 * X's columns into contiguous strips of `width` (strip j: K x width row-major at
 * P + p_off + j*K*width, zeros past N), RM wide for op(A) and RN wide for B; gemm_packed
 * then adds the products over k0 .. k0+kc-1 (the caller passes beta = 1 after the first
 * block) with one RM x RN register block per work-item.  A work-group covers LX blocks
 * down the rows and LY strips across: its panels of one block of K stay in the core's
 * cache while its items reuse them (op(A) read in place would touch a page per k). */
__kernel void pack_strips(const int K, const int N, const int width,
                          __global const real *X, const long off, const int ld,
                          __global real *P, const long p_off)
{
    const int q = get_global_id(0), k = get_global_id(1), j = get_global_id(2);
    const int c = j * width + q;
    P[p_off + ((long)j * K + k) * width + q] = (c < N) ? X[off + (long)k * ld + c] : ZERO;
}

__kernel void gemm_packed(const int M, const int N, const int K, const int k0,
                          const int kc, const real alpha, const real beta,
                          __global const real *PA, const long a_off,
                          __global const real *PB, const long b_off,
                          __global real *C, const long c_off, const int ldc)
{
    const int ra = get_global_id(0), cb = get_global_id(1), triangle = TRIANGLE;
    const int row0 = ra * RM, col0 = cb * RN;
    if (row0 >= M || col0 >= N || BLOCK_EMPTY(row0, col0, RM, RN))
        return;
    __global const real *A = PA + a_off + ((long)ra * K + k0) * RM - row0;
    __global const real *B = PB + b_off + ((long)cb * K + k0) * RN - col0;
    if (row0 + RM <= M && col0 + RN <= N && BLOCK_INSIDE(row0, col0, RM, RN))
        direct_block(1, M, N, kc, alpha, A, RM, B, RN, beta, C + c_off, ldc, row0, col0,
                     triangle);
    else
        direct_block(0, M, N, kc, alpha, A, RM, B, RN, beta, C + c_off, ldc, row0, col0,
                     triangle);
}
#endif

/* ---- solves: x is n x nrhs, column-major (x[r*n + i]) ---------------------------------- */

/* x = b[perm] (b row-major n x nrhs, x column-major) */
__kernel void permute_in(const int n, const int nrhs, __global const long *perm,
                         __global const real *b, __global real *x)
{
    const int i = get_global_id(0), r = get_global_id(1);
    if (i < n && r < nrhs)
        x[(long)r * n + i] = b[perm[i] * nrhs + r];
}

/* b[perm] = x */
__kernel void permute_out(const int n, const int nrhs, __global const long *perm,
                          __global const real *x, __global real *b)
{
    const int i = get_global_id(0), r = get_global_id(1);
    if (i < n && r < nrhs)
        b[perm[i] * nrhs + r] = x[(long)r * n + i];
}

/* Forward substitution with each listed supernode's diagonal block:
 * x_s := L11^-1 x_s (x_s: the rows of its columns, every right-hand side). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fsolve_diag(__global const int *list, __global const int *sp, __global const long *rp,
                 __global const long *lp, __global const real *l, const int n, const int nrhs,
                 __global real *xs)
{
    const int s = list[get_group_id(0)], lid = get_local_id(0);
    const int c0 = sp[s], nc = sp[s + 1] - c0;
    const int nr = (int)(rp[s + 1] - rp[s]);
    __global const real *x = l + lp[s];
    for (int k = 0; k < nc; k++) {
        const real d = X(x, nr, k, k);
        for (int r = lid; r < nrhs; r += WG)
            xs[(long)r * n + c0 + k] /= d;
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (int e = lid; e < (nc - k - 1) * nrhs; e += WG) {
            const int i = k + 1 + e % (nc - k - 1), r = e / (nc - k - 1);
            xs[(long)r * n + c0 + i] -= X(x, nr, i, k) * xs[(long)r * n + c0 + k];
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

/* The forward solve's updates, one work-group per target t and row slice (as
 * assemble's column slices: slice z of Z takes the rows r with (r - sp[t]) % Z == z):
 * x(row_j) -= sum_k X_s(nc+j, k) x(sp[s]+k) for the pairs' rows j0 <= j < j1. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fsolve_update(__global const int *targets, __global const int *pair_ptr,
                   __global const int *src, __global const int *j0s, __global const int *j1s,
                   __global const int *sp, __global const long *rp, __global const long *lp,
                   __global const int *ri, __global const real *l, const int n,
                   const int nrhs, __global real *xs)
{
    const int tg = get_group_id(0), t = targets[tg];
    const int z = get_group_id(1), slices = get_num_groups(1);
    for (int q = pair_ptr[tg]; q < pair_ptr[tg + 1]; q++) {
        const int s = src[q], j0 = j0s[q], len = j1s[q] - j0s[q];
        const int c0 = sp[s], nc = sp[s + 1] - c0;
        const int nr = (int)(rp[s + 1] - rp[s]);
        __global const real *x = l + lp[s];
        __global const int *rows = ri + rp[s] + nc;
        for (int e = get_local_id(0); e < len * nrhs; e += WG) {
            const int j = j0 + e % len, r = e / len;
            if ((rows[j] - sp[t]) % slices != z)
                continue;
            __global const real *xr = xs + (long)r * n;
            real acc = ZERO;
            for (int k = 0; k < nc; k++)
                acc = MUL_ADD(X(x, nr, nc + j, k), xr[c0 + k], acc);
            xs[(long)r * n + rows[j]] -= acc;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

/* Backward substitution for each listed supernode (its ancestors' x final):
 * x_s := L11^-T (x_s - L21^T x(off-diagonal rows)). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void bsolve(__global const int *list, __global const int *sp, __global const long *rp,
            __global const long *lp, __global const int *ri, __global const real *l,
            const int n, const int nrhs, __global real *xs)
{
    const int s = list[get_group_id(0)], lid = get_local_id(0);
    const int c0 = sp[s], nc = sp[s + 1] - c0;
    const int nr = (int)(rp[s + 1] - rp[s]);
    __global const real *x = l + lp[s];
    __global const int *rows = ri + rp[s];
    for (int e = lid; e < nc * nrhs; e += WG) {
        const int k = e % nc, r = e / nc;
        __global real *xr = xs + (long)r * n;
        real acc = ZERO;
        for (int i = nc; i < nr; i++)
            acc = MUL_ADD(X(x, nr, i, k), xr[rows[i]], acc);
        xr[c0 + k] -= acc;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int k = nc - 1; k >= 0; k--) {
        const real d = X(x, nr, k, k);
        for (int r = lid; r < nrhs; r += WG)
            xs[(long)r * n + c0 + k] /= d;
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (int e = lid; e < k * nrhs; e += WG) {
            const int i = e % k, r = e / k;
            xs[(long)r * n + c0 + i] -= X(x, nr, k, i) * xs[(long)r * n + c0 + k];
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

/* The BLAS route of the solves (one large supernode, y its m x nrhs product, row-major
 * nrhs x m at y): x(rows[i]) -= y(i) (forward), y(i) = x(rows[i]) (backward); rows =
 * ri + roff, the supernode's off-diagonal rows (distinct: no two items write one entry). */
__kernel void rows_subtract(const int m, const int nrhs, const int n, __global const int *ri,
                            const long roff, __global const real *y, __global real *xs)
{
    const int i = get_global_id(0), r = get_global_id(1);
    if (i < m && r < nrhs)
        xs[(long)r * n + ri[roff + i]] -= y[(long)r * m + i];
}

__kernel void rows_gather(const int m, const int nrhs, const int n, __global const int *ri,
                          const long roff, __global const real *xs, __global real *y)
{
    const int i = get_global_id(0), r = get_global_id(1);
    if (i < m && r < nrhs)
        y[(long)r * m + i] = xs[(long)r * n + ri[roff + i]];
}

/* d[j] = L(j, j) for the n permuted columns (dpos: their positions in l) */
__kernel void gather_diagonal(const int n, __global const long *dpos, __global const real *l,
                              __global real *d)
{
    const int j = get_global_id(0);
    if (j < n)
        d[j] = l[dpos[j]];
}
