/* update_product.cl -- a rank-k update of a Cholesky factor in product form:
 * L~ with L~ L~^T = L L^T + V V^T, no chain of rotations over the rows.
 *
 * With W = L^-1 V (n x k) the update is L~ = L (D + tril(W B^T, -1)),
 * where row j needs the Cholesky factor R_j (k x k upper) of
 *     M_j = I + sum_{l < j} w_l w_l^T:
 *     z = R_j^-T w_j,   d_j = sqrt(1 + z^T z),   b_j = R_j^-1 z / d_j,
 *     L~(i, j) = d_j L(i, j) + (sum_{j < l <= i} L(i, l) w_l)^T b_j.
 * (Gill, Golub, Murray and Saunders' product form, k columns at once.)  The
 * R_j come from orthogonal updates (QR of R stacked on rows of W: Householder
 * reflections for a chunk's rows and for two chunks' R's, Givens rotations
 * for one row at a time): forming
 * M_j and solving with it loses the identity to rounding where the early
 * M_j are I plus a large matrix of low rank (benchmarks/update_product_form.py).
 *
 * Kernels, in order:
 *   solve_step       W = L^-1 V, one launch per block of TB rows (below), or
 *   solve_chain      all blocks in one launch, each work-group waiting for the
 *                    blocks before its own (for an upper factor, each group of
 *                    QC columns of W a chain of its own); both store, on the
 *                    way, each row's sums over its later column chunks (below)
 *   chunk_merge      work-group c: the R of the rows of W in chunk c (CH rows;
 *                    chunk 0 also holds I), R_c, into r (KB x KB each; merge_columns),
 *                    then per level (distance d) of an inclusive prefix over the
 *                    chunks, Q_c = R of [R_0; ...; R_c] (Hillis-Steele: the R of two
 *                    stacked R's is associative)
 *   row_coefficients item j: R_j from Q_{c-1} and the rows of its chunk before
 *                    j, then d_j and b_j; a zero diagonal entry L(j, j) sets
 *                    *info to the smallest such j + 1 (LAPACK's order), an
 *                    entry of w_j larger than guard in magnitude *large to 1
 *   apply_product    item (i, c): g = t(i, c), then L~(i, j) for j in chunk c
 *                    from right to left, g gaining L(i, j) w_j after each; nothing
 *                    where *large is set (the caller then takes another route)
 * and, for a rank-1 update of an upper factor, all of it in one launch:
 *   update_rank1     the chained solve, each tile swept as its w, d and b arrive
 *                    (below: the guard block by block)
 * t(i, c), the sum of L(i, l) w_l over l <= i in the column chunks after c (CW
 * columns each), is what the solve's row i holds once it has subtracted the
 * blocks of chunks 0 .. c from v_i: v_i = sum_{l <= i} L(i, l) w_l.  The solve
 * stores it then (t(i, c) for c below i's own chunk, whose t is zero: the rows
 * of chunk c's sums are those below it, packed after chunk c - 1's, LATER_ROW),
 * so the sweep reads L once.
 * L(i, j) is a[off + i*ld + j] (lower = 1) or, for an upper factor
 * (A = R^T R, L = R^T), a[off + j*ld + i]; only that triangle is touched.
 * The kernels work on KB columns (W and B are n x KB, row-major): the solve reads
 * a pass of k < KB columns of V as KB, the others zeros (V_ARGS), which leave the
 * padded part of every prefix Q_c and R_j the identity and of B zero.
 */
#include "common.h"

#ifndef KB
#define KB 16              /* columns of W and B: k's next power of two, <= 16 */
#endif
#ifndef CH
#define CH 8               /* rows of W per chunk of the k x k prefix */
#endif
#ifndef CW
#define CW 128             /* columns of L per chunk of the row sweep */
#endif
#ifndef SB
#define SB 8               /* entries of a row of L the sweep loads before it stores them */
#endif
#ifndef TB
#define TB 64              /* rows per block of the solve for W (a row loads its TB at once) */
#endif
#if CW % TB
#error "a column chunk of the sweep is whole blocks of the solve"
#endif
#define INV_N TB           /* the solve's diagonal blocks are inverted in local memory */
#include "tri_inverse.h"
#ifndef INV_DOUBLING
#error "the chained solve inverts its blocks by doubling: TB 8 times a power of two"
#endif

/* The row of later that holds t(i, c), i >= (c + 1)*CW: chunk c's rows (those below
 * it, n - (c + 1)*CW of them) follow chunk c - 1's. */
#define LATER_ROW(c, i)                                                         \
    ((size_t)(c) * n - (size_t)CW * (c) * ((c) + 1) / 2 + (i) - ((c) + 1) * CW)

/* After subtracting the blocks before block b from row i (i >= b*TB), where b
 * starts a column chunk, store the item's QC running sums x as t(i, b*TB/CW - 1)
 * in later. */
#define STORE_LATER_SUMS(later, x, b, i, h)                                     \
    if ((b) % (CW / TB) == 0 && (i) < n)                                        \
        for (int q_ = 0; q_ < QC; q_++)                                         \
            (later)[LATER_ROW((b) / (CW / TB) - 1, i) * KB + (h) * QC + q_] = (x)[q_];

/* L(i, j) through the strides of the factor's layout, which L_STRIDES declares in
 * each kernel that reads it: (ld, 1) for a lower factor, (1, ld) for an upper one (a
 * multiply-add an address, strength-reduced in loops; choosing between the two index
 * forms at every load made the solve and the sweep 3-10 % slower on an H200). */
#define L_STRIDES const int si = lower ? ld : 1, sj = lower ? 1 : ld;
#if INDEX64
#define L_AT(i, j) a[off + (size_t)(i) * si + (size_t)(j) * sj]
#else
#define L_AT(i, j) a[off + (i) * si + (j) * sj]
#endif

/* The Givens rotation (c, s) that zeroes b against a0, and the new a0, h >= 0 for
 * a0 >= 0: the identity where b = 0. */
#define GIVENS(a0, b, h, c, s)                                                  \
    const real h = ((b) == ZERO) ? (a0) : hypot(a0, b);                         \
    const real h##_inv = ONE / h;                  /* one division, not two */  \
    const real c = ((b) == ZERO) ? ONE : (a0) * h##_inv;                        \
    const real s = ((b) == ZERO) ? ZERO : (b) * h##_inv;

/* (rpq, xq) := (c rpq + s xq, c xq - s rpq) */
#define ROTATE(rpq, xq, c, s)                                                   \
    { const real t_ = rpq; rpq = (c) * t_ + (s) * (xq); xq = (c) * (xq) - (s) * t_; }

/* Work-items of a row_coefficients work-group; each keeps its row's R (KB x KB) in
 * local memory, entry (p, q) at r[(p * KB + q) * RC] from its own first (RC_AT):
 * neighbouring items on neighbouring banks.  (In private memory, indexed at run
 * time, R was a stack frame of KB^2 reals in global memory: H200, n = 8192, k = 16,
 * the kernel 0.090 -> 0.056 ms in float64, 0.061 -> 0.033 ms in float32.) */
#ifndef RC
#define RC 16
#endif
#define RC_AT(p, q) (((p) * KB + (q)) * RC)

/* r (k x k upper, RC_AT) := the R of [r; x^T], x (KB entries) consumed: a Givens
 * rotation per column, r's diagonal kept nonnegative. */
inline void add_row(__local real *r, real *x)
{
    #pragma unroll
    for (int p = 0; p < KB; p++) {
        if (x[p] != ZERO) {                        /* else the identity: skipped */
            GIVENS(r[RC_AT(p, p)], x[p], h, c, s)
            r[RC_AT(p, p)] = h;
            #pragma unroll
            for (int q = p + 1; q < KB; q++)
                ROTATE(r[RC_AT(p, q)], x[q], c, s)
        }
    }
}

#ifndef FAN
#define FAN 2              /* R's a prefix level merges: a chunk's and FAN - 1 before it */
#endif
/* Rows of x a merge takes: a chunk's CH rows of W, or the FAN - 1 R's (KB rows each)
 * stacked below the chunk's own. */
#define XR (CH > (FAN - 1) * KB ? CH : (FAN - 1) * KB)

/* The R (k x k upper, diagonal >= 0) of [r; x] by a work-group of KB items, item q
 * holding column q of r in rq (local memory, entry p at rq[p * KB]) and column q of
 * x (XR rows, zero past its rows: zeros change nothing below) in xq, in registers;
 * x is overwritten.  The loop over the columns is not unrolled, so the code grows
 * with XR alone, not with KB XR.  Per column p
 * one Householder reflection of [r_pp; x(:, p)] to [h; 0],
 * h = sqrt(r_pp^2 + |x(:, p)|^2): item p forms it, scaling the column by a power of
 * two near its largest entry (exact: no rounding, no square overflows) and dividing
 * twice, not once an entry (a float64 division is a long sequence on GPUs; dlarfg too
 * scales by one reciprocal), and publishes v = x(:, p) / v_0 and tau in v (two
 * buffers of XR + 1 reals, alternating by column, so one barrier a column keeps a
 * column's readers and the next column's writer apart); the items right of it apply
 * H = I - tau [1; v] [1; v]^T to (r_pq, x(:, q)).  Every item meets every barrier. */
#define CHAINS 4           /* a merge's sums over x's rows in four chains (latency) */
#define SUM_CHAINS(c) (((c)[0] + (c)[1]) + ((c)[2] + (c)[3]))   /* the four added */
inline void merge_columns(__local real *rq, real *xq, __local real *v, const int q)
{
    #pragma unroll 1
    for (int p = 0; p < KB; p++) {
        __local real *vp = v + (p & 1) * (XR + 1);
        if (q == p) {
            real big[CHAINS] = {rq[p * KB]};
            #pragma unroll
            for (int i = 0; i < XR; i++)
                big[i % CHAINS] = fmax(big[i % CHAINS], fabs(xq[i]));
            #pragma unroll
            for (int u = 1; u < CHAINS; u++)
                big[0] = fmax(big[0], big[u]);
            const int e = (big[0] > ZERO && isfinite(big[0]))  /* 2^e <= big, normal */
                ? clamp(ilogb(big[0]), REAL_MIN_EXP - 1, 1 - REAL_MIN_EXP) : 0;
            const real down = ldexp(ONE, -e);          /* |x(:, p)| * down < 4 */
            real sq[CHAINS] = {ZERO};                  /* |x(:, p)|^2 * down^2 */
            #pragma unroll
            for (int i = 0; i < XR; i++) {
                const real t = xq[i] * down;
                sq[i % CHAINS] += t * t;
            }
            const real sigma = SUM_CHAINS(sq);
            const real a = rq[p * KB] * down, h = sqrt(a * a + sigma);
            const real v0 = -sigma / (a + h);          /* (r_pp - h) down, no cancellation */
            const int identity = !(sigma > ZERO);      /* also where big = 0 */
            const real scale = identity ? ZERO : down / v0;
            rq[p * KB] = identity ? rq[p * KB] : ldexp(h, e);
            #pragma unroll
            for (int i = 0; i < XR; i++)
                vp[i] = xq[i] * scale;
            vp[XR] = identity ? ZERO : 2 * v0 * v0 / (sigma + v0 * v0);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (q > p) {
            real dot[CHAINS] = {rq[p * KB]};
            #pragma unroll
            for (int i = 0; i < XR; i++)
                dot[i % CHAINS] += vp[i] * xq[i];
            const real s = SUM_CHAINS(dot) * vp[XR];
            rq[p * KB] -= s;
            #pragma unroll
            for (int i = 0; i < XR; i++)
                xq[i] -= s * vp[i];
        }
    }
}

/* Work-group c (KB items).  d = 0: the R of chunk c's CH rows of W (r_in = W; with I
 * first for c = 0) into r_out[c].  d > 0: one level of the inclusive prefix over the
 * chunks' R's (distance d; the next level's is FAN d), r_out[c] = the R of
 * [r_in[c]; r_in[c - d]; ...; r_in[c - (FAN - 1) d]] (those of index >= 0: r_in[c]
 * alone for c < d).  One kernel for both, so that merge_columns is compiled once. */
__kernel __attribute__((reqd_work_group_size(KB, 1, 1)))
void chunk_merge(const int n, const int d, __global const real *r_in,
                 __global real *r_out)
{
    __local real v[2 * (XR + 1)];
    const int c = get_group_id(0), q = get_local_id(0);
    const int rows = min(CH, n - c * CH);          /* d = 0: chunk c's rows of W */
    __local real r[KB * KB];
    __local real *rq = r + q;                      /* column q of r, (p, q) at rq[p * KB] */
    real xq[XR];
    for (int p = 0; p < KB; p++)
        rq[p * KB] = d ? r_in[(size_t)c * KB * KB + p * KB + q] : (c == 0 && p == q) ? ONE : ZERO;
    #pragma unroll
    for (int i = 0; i < XR; i++) {                 /* c < d: x = 0, r stays as it is */
        const int g = i / KB + 1, u = i % KB;      /* row u of r_in[c - g d] */
        xq[i] = d ? ((c >= g * d && g < FAN && q >= u)
                     ? r_in[(size_t)(c - g * d) * KB * KB + u * KB + q] : ZERO)
                  : (i < rows ? r_in[((size_t)c * CH + i) * KB + q] : ZERO);
    }
    merge_columns(rq, xq, v, q);
    for (int p = 0; p < KB; p++)
        r_out[(size_t)c * KB * KB + p * KB + q] = rq[p * KB];
}

__kernel __attribute__((reqd_work_group_size(RC, 1, 1)))
void row_coefficients(const int n, __global const real *w, __global const real *q_prefix,
                      __global const real *a, const long off, const int ld,
                      const int lower, __global real *b_out, __global real *d_out,
                      __global int *info, const real guard, __global int *large)
{
    __local real rs[RC * KB * KB];
    L_STRIDES
    const int j = get_global_id(0);
    if (j >= n)
        return;                                    /* no barrier follows */
    for (int q = 0; q < KB; q++)                   /* beyond guard: the caller's choice */
        if (fabs(w[(size_t)j * KB + q]) > guard)
            atomic_max(large, 1);
    if (L_AT(j, j) == ZERO) {                      /* the smallest failing order wins */
        int old = *info;
        while (old == 0 || old > j + 1) {
            const int seen = atomic_cmpxchg(info, old, j + 1);
            if (seen == old)
                break;
            old = seen;
        }
    }
    const int c = j / CH;
    __local real *r = rs + get_local_id(0);
    real x[KB], z[KB];
    for (int p = 0; p < KB * KB; p++)              /* Q_{c-1}, or I for chunk 0 */
        r[p * RC] = (c == 0) ? ((p % (KB + 1) == 0) ? ONE : ZERO)
                             : q_prefix[(size_t)(c - 1) * KB * KB + p];
    for (int l = c * CH; l < j; l++) {
        #pragma unroll
        for (int q = 0; q < KB; q++)
            x[q] = w[(size_t)l * KB + q];
        add_row(r, x);
    }
    /* z = R^-T w_j (forward), then x = R^-1 z (backward) */
    real zz = ZERO;
    #pragma unroll
    for (int p = 0; p < KB; p++) {
        real s = w[(size_t)j * KB + p];
        #pragma unroll
        for (int q = 0; q < p; q++)
            s -= r[RC_AT(q, p)] * z[q];
        z[p] = s / r[RC_AT(p, p)];
        zz += z[p] * z[p];
    }
    const real dj = sqrt(ONE + zz);
    #pragma unroll
    for (int p = KB - 1; p >= 0; p--) {
        real s = z[p];
        #pragma unroll
        for (int q = p + 1; q < KB; q++)
            s -= r[RC_AT(p, q)] * x[q];
        x[p] = s / r[RC_AT(p, p)];
    }
    #pragma unroll
    for (int p = 0; p < KB; p++)
        b_out[(size_t)j * KB + p] = x[p] / dj;
    d_out[j] = dj;
}

/* The pass's k columns of V, read where the caller holds them: v + voff, rows of
 * ldv reals; the columns k .. KB - 1 of the pass read as zeros (the host pads
 * nothing). */
#define V_ARGS __global const real *v, const long voff, const int ldv, const int k
#define V_AT(i, q) ((q) < k ? v[voff + (size_t)(i) * ldv + (q)] : ZERO)

/* One block step of W = L^-1 V (n x k in w, V read by the first launch), TB
 * rows per block, with the inverses of L's diagonal blocks in inv (trsm.cl's
 * trtri_blocks: block b in rows b*TB .. of a TB-wide array; of L itself where
 * lower, else of R = L^T, read transposed).  Launch b (work-groups of TB rows,
 * RPI items per row, QC columns of W each, from row b*TB): every row i >= b*TB
 * subtracts L(i, block b-1) W(block b-1) (b > 0), then the first work-group,
 * whose rows are block b, finishes it: W_b = inv_b V_b.  So the launches number
 * n/TB and each reads its slice of L once. */
#if KB < 4                 /* columns of W per item of solve_step: a literal */
#define QC KB
#else
#define QC 4
#endif
#define RPI (KB / QC)              /* its items per row */
#define NI (TB * RPI)              /* its work-group */
/* QC reals of a row of W (or B) in local memory, read as one vector (a row of KB
 * reals starts QC-aligned): a local read per QC multiply-adds, not one per
 * multiply-add, and their lanes through LANES. */
typedef REALV(QC) realqc;

/* The products of subtract_block and diagonal_solve (on the chained solve's path) in
 * two chains of TB / 2 multiply-adds where an item takes fewer than 4 columns of W;
 * with 4, one chain a column.  H200, float64, n = 8192, the solve's kernel with two
 * chains: k = 1 0.26 -> 0.24 ms, k = 2 0.31 -> 0.29 ms, but k = 4 and 8 0.31 -> 0.35
 * and 0.37 -> 0.39 ms (elsewhere with 4 columns mixed: float64 n = 16384, k = 16 1.97
 * -> 1.91 ms, float32 k = 4 0.27 -> 0.25 ms; benchmarks/results/
 * nvidia-h200-2026-11-30-solve-chains.txt). */
#define TWO_CHAINS (QC < 4)

/* x := inv_b times the block's rows for the item's QC columns of W (row t of the
 * block): rows: those QC columns of the block's TB rows of V, row stride rs (in
 * realqc); invs: inv_b with row stride is (of L where lower, else of R = L^T, read
 * transposed), zero in the rows and columns past the block's own (a last block of
 * fewer than TB rows), so that the loop has a fixed count and its loads of local
 * memory go out ahead of the multiply-adds. */
inline void diagonal_solve(real *x, __local const realqc *rows, const int rs,
                           __local const real *invs, const int is, const int t,
                           const int lower)
{
    real odd[QC];                                  /* TWO_CHAINS: the odd p's */
    #pragma unroll
    for (int q = 0; q < QC; q++)
        x[q] = odd[q] = ZERO;
    #pragma unroll
    for (int p = 0; p < TB; p++) {
        const real m = invs[lower ? t * is + p : p * is + t];
        LANES(QC) r;
        r.v = rows[p * rs];
        #pragma unroll
        for (int q = 0; q < QC; q++) {
            if (TWO_CHAINS && p % 2)
                odd[q] += m * r.s[q];
            else
                x[q] += m * r.s[q];
        }
    }
    #pragma unroll
    for (int q = 0; q < QC; q++)
        x[q] += odd[q];
}

/* x -= L(row, block) times the block's rows of W for the item's QC columns: lv the
 * row's TB entries of L, rows those QC columns of the block's TB rows of W (row
 * stride rs, in realqc); the block's product then subtracted. */
inline void subtract_block(real *x, const real *lv, __local const realqc *rows, const int rs)
{
    real even[QC], odd[QC];
    #pragma unroll
    for (int q = 0; q < QC; q++)
        even[q] = odd[q] = ZERO;
    #pragma unroll
    for (int u = 0; u < TB; u++) {
        LANES(QC) r;
        r.v = rows[u * rs];
        #pragma unroll
        for (int q = 0; q < QC; q++) {
            if (TWO_CHAINS && u % 2)
                odd[q] += lv[u] * r.s[q];
            else
                even[q] += lv[u] * r.s[q];
        }
    }
    #pragma unroll
    for (int q = 0; q < QC; q++)
        x[q] -= even[q] + odd[q];
}

__kernel __attribute__((reqd_work_group_size(NI, 1, 1)))
void solve_step(const int n, const int b, __global const real *a, const long off,
                const int ld, const int lower, __global const real *inv,
                V_ARGS, __global real *w, __global real *later)
{
    L_STRIDES
    __local realqc prev_rows[TB * RPI];            /* then block b's rows */
    __local real invs[TB * TB];
    __local real *prev = (__local real *)prev_rows;
    const int lid = get_local_id(0), t = lid / RPI, h = lid % RPI;
    const int r0 = b * TB, i = r0 + get_group_id(0) * TB + t;
    const int p0 = r0 - TB;                       /* the block solved last launch */
    const int first = get_group_id(0) == 0;       /* its rows are block b */
    const int kb = min(TB, n - r0);
    __global real *row = w + (size_t)i * KB + h * QC;
    real x[QC];
    /* every load this launch needs from global memory, issued together: the last
     * block of W, this item's part of its row of W and (first work-group) inv_b */
    if (b > 0) {
        #pragma unroll
        for (int s = 0; s < TB * KB / NI; s++)
            prev[s * NI + lid] = w[(size_t)p0 * KB + s * NI + lid];
    }
    if (first) {
        #pragma unroll
        for (int s = 0; s < TB * TB / NI; s++) {
            const int e = s * NI + lid;
            invs[e] = (e / TB < kb && e % TB < kb) ? inv[(size_t)r0 * TB + e] : ZERO;
        }
    }
    #pragma unroll
    for (int q = 0; q < QC; q++)                   /* launch 0: V; then W as it stands */
        x[q] = (i >= n) ? ZERO : (b == 0) ? V_AT(i, h * QC + q) : row[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n && b > 0) {              /* the row's TB loads of L in flight together */
        real lv[TB];
        #pragma unroll
        for (int u = 0; u < TB; u++)
            lv[u] = L_AT(i, p0 + u);
        subtract_block(x, lv, prev_rows + h, RPI);
        STORE_LATER_SUMS(later, x, b, i, h)
    }
    /* the first work-group finishes block b: W_b = inv_b V_b through local memory
     * (every group meets the barriers: no return ahead of them, which PoCL 3.0
     * miscompiles when its condition is known only at run time) */
    barrier(CLK_LOCAL_MEM_FENCE);                  /* prev read by all */
    if (first)
        for (int q = 0; q < QC; q++)
            prev[t * KB + h * QC + q] = x[q];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (first && i < n)
        diagonal_solve(x, prev_rows + h, RPI, invs, TB, t, lower);
    if (i < n)
        for (int q = 0; q < QC; q++)
            row[q] = x[q];
}

/* invs (row stride TB + 1) := X, the inverse of L's diagonal block at rows and
 * columns r0 .. r0 + kb - 1 (kb <= TB), X(t, p) at invs[t * (TB + 1) + p] (as
 * diagonal_solve reads a lower factor's inverse), zero above the diagonal, the
 * identity past kb: L's block staged (STAGE loads an item in flight at once; one at a
 * time, the staging alone took 21 us of a 64-item work-group on an H200), then
 * inverted by doubling (tri_inverse.h). */
#define STAGE 16
inline void invert_diagonal_block(__local real *invs, __global const real *a,
                                  const long off, const int si, const int sj,
                                  const int lower, const int r0, const int kb,
                                  const int lid, const int items)
{
    const int is = TB + 1;
    /* entry e of the block: consecutive items along L's rows in memory */
#define BLOCK_ENTRY const int r = lower ? e / TB : e % TB, c = lower ? e % TB : e / TB;
    for (int e0 = lid; e0 < TB * TB; e0 += STAGE * items) {
        real staged[STAGE];
        #pragma unroll
        for (int u = 0; u < STAGE; u++) {
            const int e = e0 + u * items;
            BLOCK_ENTRY
            staged[u] = (e < TB * TB && r < kb && c <= r) ? L_AT(r0 + r, r0 + c) : ZERO;
        }
        #pragma unroll
        for (int u = 0; u < STAGE; u++) {
            const int e = e0 + u * items;
            BLOCK_ENTRY
            if (e < TB * TB)
                invs[r * is + c] = (r >= kb && r == c) ? ONE : staged[u];
        }
    }
#undef BLOCK_ENTRY
    barrier(CLK_LOCAL_MEM_FENCE);
    invert_lower(invs, lid, items);
}

/* A signalling NaN no arithmetic returns; each 32-bit word of its bits is
 * UNSTORED_WORD, a positive int, whatever the device's byte order. */
#if PRECISION == 64
#define UNSTORED 0x7ff4a5a57ff4a5a5UL
#define UNSTORED_WORD 0x7ff4a5a5
#define UNSTORED_T ulong
#define BITS(v) as_ulong(v)
#else
#define UNSTORED 0x7fa5a5a5U
#define UNSTORED_WORD 0x7fa5a5a5
#define UNSTORED_T uint
#define BITS(v) as_uint(v)
#endif

/* W = L^-1 V in one launch (the update knob SOLVE = "chain"): work-group g takes
 * the next ticket from state[0] and solves its part of block t (rows t*TB ..): for
 * each block j < t it subtracts L(block t, block j) W_j (the loads of L issued
 * first), then W_t = inv_t V_t, inv_t the inverse of block t's diagonal block,
 * which the work-group forms before it waits (invert_diagonal_block).  Unless
 * split, the ticket is the block and the work-group takes all KB columns (TB x RPI
 * items, as solve_step's); split, it is
 * t*RPI + h and the work-group (TB items, one per row) takes column group h
 * (QC columns) alone: the column groups are then RPI chains of their own, each
 * step's products RPI times smaller.  The entries of W are their own flags: w
 * holds UNSTORED on entry, and a work-group reads an entry of an earlier block
 * again until it is stored (an aligned real is stored whole; an item reads its
 * QC entries at once), so nothing but the stores themselves passes between a
 * block and its readers (no flag raised after a barrier and an exchange per
 * entry, as before: H200, n = 8192, k = 16, the solve 0.92 -> 0.85 ms in
 * float64, 0.58 -> 0.56 ms in float32; k = 1 0.39 -> 0.31 and 0.33 -> 0.29 ms).
 * A work-group waits only for blocks of earlier tickets, whose work-groups were
 * running when they took them; so it relies, as kernels_cl/grid.h does, on a
 * running work-group making progress and on volatile global accesses reaching
 * the memory all compute units share, which OpenCL does not promise: only a tuned
 * entry measured on the device chooses it.  V as V_ARGS says, not written; state:
 * 1 int, 0 before the launch; the later sums as in solve_step. */
__kernel void solve_chain(const int n, __global const real *a, const long off,
                          const int ld, const int lower, V_ARGS, volatile __global real *w,
                          __global real *later, volatile __global int *state,
                          const int split)
{
    L_STRIDES
    __local realqc wj_rows[TB * RPI];              /* block j's rows, as they are read */
    __local real invs[TB * (TB + 1)];
    __local int ticket;
    const int lid = get_local_id(0), items = get_local_size(0);
    if (lid == 0)
        ticket = atomic_inc(state);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int t = split ? lid : lid / RPI, h = split ? ticket % RPI : lid % RPI;
    const int blk = split ? ticket / RPI : ticket, r0 = blk * TB, i = r0 + t;
    const int kb = min(TB, n - r0);
    const int rs = split ? 1 : RPI, own = t * rs + (split ? 0 : h);  /* in wj_rows */
    __local const realqc *rows = wj_rows + (split ? 0 : h);
    volatile __global realqc *wq = (volatile __global realqc *)w;
    real x[QC];
    #pragma unroll
    for (int q = 0; q < QC; q++)
        x[q] = (i < n) ? V_AT(i, h * QC + q) : ZERO;
    invert_diagonal_block(invs, a, off, si, sj, lower, r0, kb, lid, items);
    for (int j = 0; j < blk; j++) {
        real lv[TB];
        #pragma unroll
        for (int u = 0; u < TB; u++)
            lv[u] = (i < n) ? L_AT(i, j * TB + u) : ZERO;
        LANES(QC) e;                               /* block j is whole: j < blk */
        int unstored;
        do {
            e.v = wq[((size_t)j * TB + t) * RPI + h];
            unstored = 0;
            #pragma unroll
            for (int q = 0; q < QC; q++)
                unstored |= BITS(e.s[q]) == UNSTORED;
        } while (unstored);
        wj_rows[own] = e.v;
        barrier(CLK_LOCAL_MEM_FENCE);
        subtract_block(x, lv, rows, rs);
        STORE_LATER_SUMS(later, x, j + 1, i, h)
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    LANES(QC) y;
    #pragma unroll
    for (int q = 0; q < QC; q++)
        y.s[q] = x[q];
    wj_rows[own] = y.v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        diagonal_solve(x, rows, rs, invs, TB + 1, t, 1);     /* X row by row */
        #pragma unroll
        for (int q = 0; q < QC; q++)
            w[(size_t)i * KB + h * QC + q] = x[q];
    }
}

/* The column chunk's rows of W (and of B) in local memory, all items of the
 * work-group (rows i of one chunk column c) taking part. */
#define STAGE_CHUNK(dst, src, c, n)                                          \
    for (int e = get_local_id(0); e < CW * KB; e += get_local_size(0)) {      \
        const int l = (c) * CW + e / KB;                                      \
        dst[e] = (l < (n)) ? src[(size_t)(c) * CW * KB + e] : ZERO;           \
    }

__kernel void apply_product(const int n, __global real *a, const long off,
                            const int ld, const int lower, __global const real *w,
                            __global const real *b, __global const real *d,
                            __global const real *later, __global const int *large)
{
    L_STRIDES
    __local realqc w_rows[CW * RPI], b_rows[CW * RPI];
    __local real d_local[CW];
    __local real *ws = (__local real *)w_rows, *bs = (__local real *)b_rows;
    const int i = get_global_id(0), c = get_group_id(1), lo = c * CW;
    STAGE_CHUNK(ws, w, c, n)
    STAGE_CHUNK(bs, b, c, n)
    for (int e = get_local_id(0); e < CW; e += get_local_size(0))
        d_local[e] = (lo + e < n) ? d[lo + e] : ZERO;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i >= n || lo > i || *large)                /* *large: the factor stays as it is */
        return;
    real g[KB];
    for (int q = 0; q < KB; q++)                   /* i's own chunk: nothing after it */
        g[q] = (c == i / CW) ? ZERO : later[LATER_ROW(c, i) * KB + q];
    /* SB entries of the row loaded, then swept and stored, so that their round trips to
     * memory overlap (loaded one at a time, each came after the last one's store) */
    for (int top = min(i, lo + CW - 1); top >= lo; top -= SB) {
        real lv[SB];
        #pragma unroll
        for (int u = 0; u < SB; u++)
            lv[u] = (top - u >= lo) ? L_AT(i, top - u) : ZERO;
        #pragma unroll
        for (int u = 0; u < SB; u++) {
            const int j = top - u;
            if (j < lo)
                break;
            const int e = (j - lo) * RPI;
            /* g^T b_j as RPI partial sums, one per column group, each QC terms long
             * (one chain of KB multiply-adds before: H200, n = 8192, k = 16, float64,
             * the sweep of an upper factor 0.33 -> 0.31 ms, of a lower one, whose
             * items read rows across memory, 1.01 -> 0.57 ms) */
            real sp[RPI];
            #pragma unroll
            for (int h = 0; h < RPI; h++) {
                LANES(QC) wq, bq;
                wq.v = w_rows[e + h];
                bq.v = b_rows[e + h];
                sp[h] = ZERO;
                #pragma unroll
                for (int q = 0; q < QC; q++) {
                    sp[h] += g[h * QC + q] * bq.s[q];
                    g[h * QC + q] += lv[u] * wq.s[q];
                }
            }
            real s = d_local[j - lo] * lv[u];
            #pragma unroll
            for (int h = 0; h < RPI; h++)
                s += sp[h];
            L_AT(i, j) = s;
        }
    }
}

#if KB == 1
#ifndef PARTS
#define PARTS 1            /* update_rank1's items per row, each a part of a tile's columns */
#endif
#define PW (TB / PARTS)    /* the columns of a part */
#define RANK1_ITEMS (TB * PARTS)

/* The sum over the rows of x (given by the items lid < TB; every item gets it; scan:
 * TB reals).  Every item of the work-group calls it. */
inline real group_sum(const real x, __local real *scan, const int lid)
{
    if (lid < TB)
        scan[lid] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = TB / 2; h > 0; h /= 2) {
        if (lid < h)
            scan[lid] += scan[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const real sum = scan[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return sum;
}

/* A block's coefficients: item t < TB holds e = w_l, l = r0 + t (zero past the
 * factor's order), tsum the sum of w^2 over the rows before the block.  With t_l = 1
 * + sum_{l' <= l} w_l'^2, d_l = sqrt(t_l / t_(l-1)) and b_l = w_l / (t_(l-1) d_l)
 * (R_l = sqrt(t_(l-1)) for one column) go to ds[t] and bs[t].  Returns (in every
 * item) whether an entry of the block passed guard in magnitude or is not finite.
 * Every item of the work-group calls it. */
inline int rank1_coefficients(const real e, const real tsum, __local real *ds,
                              __local real *bs, __local real *scan, __local int *stop,
                              const real guard, const int lid)
{
    const int row = lid < TB;
    if (lid == 0)
        *stop = 0;
    if (row)
        scan[lid] = e * e;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = 1; h < TB; h *= 2) {              /* inclusive scan over the block */
        const real add = (row && lid >= h) ? scan[lid - h] : ZERO;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (row)
            scan[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row) {
        const real before = ONE + tsum + (scan[lid] - e * e), through = before + e * e;
        const real d = sqrt(through / before);
        ds[lid] = d;
        bs[lid] = e / (before * d);
        if (!(fabs(e) <= guard))
            *stop = 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int stopped = *stop;
    barrier(CLK_LOCAL_MEM_FENCE);
    return stopped;
}

/* Poll the entry at p until it is stored. */
inline real stored(volatile __global real *p)
{
    real e;
    do {
        e = *p;
    } while (BITS(e) == UNSTORED);
    return e;
}

/* parts[h * TB + t] := the sum of L(i, l) w_l over part h's columns of the tile (lv,
 * ws: the block's w), then x before part h's columns and after the whole tile. */
#define PART_SUMS(ws)                                                           \
    {                                                                           \
        real sum = ZERO;                                                        \
        _Pragma("unroll")                                                       \
        for (int u = 0; u < PW; u++)                                            \
            sum += lv[u] * (ws)[c0 + u];                                        \
        parts[h * TB + t] = sum;                                                \
        barrier(CLK_LOCAL_MEM_FENCE);                                           \
        start = after = x;                                                      \
        for (int g = 0; g < PARTS; g++) {                                       \
            if (g < h)                                                          \
                start -= parts[g * TB + t];                                     \
            after -= parts[g * TB + t];                                         \
        }                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                           \
    }

/* Row i's entry in the first column of part h of tile j (an upper factor: L(i, l) at
 * l*ld + i), the part's u-th column at TILE_AT(j)[u * ld]: one base a tile and int
 * offsets, not L_AT's index per entry (H200, float64 n = 16384 / 8192: 1.01 / 0.43 ->
 * 0.97 / 0.41 ms; float32 level). */
#define TILE_AT(j) (a + off + i + (size_t)((j) * TB + c0) * ld)

/* Row i's entries of tile j in part h's columns (the diagonal tile's up to column i). */
#define LOAD_TILE(dst, j)                                                       \
    _Pragma("unroll")                                                           \
    for (int u = 0; u < PW; u++)                                                \
        dst[u] = (i < n && ((j) < blk || c0 + u <= t)) ? TILE_AT(j)[u * ld] : ZERO;

/* The rank-1 update of an upper factor (A = R^T R, L = R^T) in one launch, L read and
 * written once: solve_chain's chain (tickets in state[0], each work-group's diagonal
 * block inverted before it waits, the entries of w, d and b their own flags), and
 * the work-group of rows i of block t also sweeps its tile of each block j < t as
 * soon as block j's w, d and b are stored: with x = v_i - sum_{l < j*TB} L(i, l) w_l
 * on entry, for each column l of the block
 *     x -= L(i, l) w_l,   L~(i, l) = d_l L(i, l) + b_l x
 * (x is then the sum of L(i, l') w_l' over j < l' <= i, since v_i = sum_{l' <= i}
 * L(i, l') w_l').  PARTS items a row, each sweeping TB / PARTS of a tile's columns
 * from x less the parts before its own.  On the chain's path only: block t - 1's w
 * read, subtracted, block t solved and its w stored; then its d and b (its rows'
 * squares summed in a fixed tree, one value per block, from its work-group alone)
 * before the tile of block t - 1 and the diagonal tile are swept.  A tile's w, d and b
 * are read together; the next tile's entries of L are loaded once they are in (loaded
 * at a tile's start, they came before the wait), and on the chain's path the diagonal
 * tile's only once block t's w, d and b are stored (loaded with the others, they
 * delayed the chain: H200, float64 n = 16384 / 8192 / 4096 0.964 / 0.408 / 0.236 ->
 * 0.949 / 0.392 / 0.224 ms, float32 16384 0.687 -> 0.664).  A block one of whose
 * entries of w passes guard in magnitude (or is not finite: a zero diagonal) stores
 * d = -1 for all its rows and stops the update at its first row K in every work-group
 * that reads it: columns before K are final in every row, and each row i >= K leaves y_i
 * = x / sqrt(1 + sum_{l < K} w_l^2) in v, so that the factor of A + v v^T is what the
 * rank-1 update of the trailing factor (order n - K) by y gives; state[1] becomes the
 * smallest K.  v: n reals from voff, overwritten only on a stop.  scratch: two
 * regions of 3 cap reals (cap >= n, a multiple of TB) and the state, two ints; the
 * launch takes w, d and b (n reals each, UNSTORED on entry) from the region numbered
 * region and stores UNSTORED in the other's first clear reals (those the launch before
 * wrote), each work-group a share as it starts, so that the host fills nothing between
 * launches.  The state's ints hold UNSTORED_WORD between launches: the ticket counter
 * (tickets counted from there; the last ticket's work-group puts it back) and K (a
 * minimum: none stopped while it stays above n; the host puts it back after a stop).
 * Work-groups of RANK1_ITEMS. */
__kernel __attribute__((reqd_work_group_size(RANK1_ITEMS, 1, 1)))
void update_rank1(const int n, __global real *a, const long off, const int ld,
                  __global real *v, const long voff, volatile __global real *scratch,
                  const int region, const int cap, const int clear, const real guard)
{
    const int lower = 0;
    volatile __global real *w = scratch + (size_t)region * 3 * cap, *db = w + n;
    __global UNSTORED_T *next_region =
        (__global UNSTORED_T *)(scratch + (size_t)(1 - region) * 3 * cap);
    volatile __global int *state = (volatile __global int *)(scratch + (size_t)6 * cap);
    L_STRIDES
    __local real ws[TB], ds[TB], bs[TB], own_d[TB], own_b[TB], scan[TB], parts[PARTS * TB];
    __local real invs[TB * (TB + 1)];
    __local int ticket, stop;
    const int lid = get_local_id(0), t = lid % TB, h = lid / TB, c0 = h * PW;
    if (lid == 0) {
        ticket = atomic_inc(state) - UNSTORED_WORD;
        if (ticket == get_num_groups(0) - 1)       /* every ticket taken */
            atomic_xchg(state, UNSTORED_WORD);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int blk = ticket, r0 = blk * TB, i = r0 + t, kb = min(TB, n - r0);
    /* this work-group's share of the next launch's region, stored UNSTORED (a loop not
     * unrolled: unrolled, here or at the end, 128 -> 220 registers in float32, H200) */
    const int share = (clear + get_num_groups(0) - 1) / get_num_groups(0);
    #pragma unroll 1
    for (int p = blk * share + lid; p < min(clear, (blk + 1) * share); p += RANK1_ITEMS)
        next_region[p] = UNSTORED;
    real x = (i < n) ? v[voff + i] : ZERO, squares = ZERO, own = ZERO, start, after;
    real lv[PW], next[PW];                         /* this tile's entries, the next one's */
    LOAD_TILE(lv, 0)
    invert_diagonal_block(invs, a, off, si, sj, lower, r0, kb, lid, RANK1_ITEMS);
    int stopped = -1;                              /* the block that stopped it */
    for (int j = 0; j <= blk; j++) {
        const int chain = j == (blk > 0 ? blk - 1 : 0);
        real e = ZERO, d = ZERO, b = ZERO;
        if (j < blk && h == 0) {                   /* block j is whole and another's */
            volatile __global real *wj = w + j * TB + t;
            int unstored;
            do {
                e = wj[0];
                if (!chain) {
                    d = wj[n];
                    b = wj[2 * n];
                }
                unstored = BITS(e) == UNSTORED
                    || (!chain && (BITS(d) == UNSTORED || BITS(b) == UNSTORED));
            } while (unstored);
        }
        if (h == 0)
            ws[t] = e;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (j < blk && !chain) {                   /* the next tile's entries */
            LOAD_TILE(next, j + 1)
        }
        PART_SUMS(ws)                              /* zero for the diagonal tile */
        if (chain) {                               /* this block's w, d and b first */
            real y[1];
            if (h == 0)
                scan[t] = after;
            barrier(CLK_LOCAL_MEM_FENCE);
            diagonal_solve(y, (__local const realqc *)scan, 1, invs, TB + 1, t, 1);
            own = (i < n) ? y[0] : ZERO;
            if (i < n && h == 0)
                w[i] = own;
            barrier(CLK_LOCAL_MEM_FENCE);
            const int large = rank1_coefficients(own, group_sum(squares + e * e, scan, lid),
                                                 own_d, own_b, scan, &stop, guard, lid);
            if (i < n && h == 0) {
                db[n + i] = own_b[t];
                db[i] = large ? -ONE : own_d[t];
            }
            if (large && lid == 0)
                own_d[0] = -ONE;
            if (j < blk && h == 0) {
                d = stored(db + j * TB + t);
                b = stored(db + n + j * TB + t);
            }
        }
        if (j < blk && chain) {                    /* the diagonal tile's, after the chain's */
            LOAD_TILE(next, j + 1)                 /* work: the next block waits for it */
        }
        if (j < blk && h == 0) {
            ds[t] = d;
            bs[t] = b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        __local const real *dj = j < blk ? ds : own_d, *bj = j < blk ? bs : own_b;
        __local const real *wv = j < blk ? ws : scan;
        if (j == blk) {                            /* the diagonal tile, by its own w */
            if (h == 0)
                scan[t] = own;
            barrier(CLK_LOCAL_MEM_FENCE);
            PART_SUMS(scan)
        }
        if (dj[0] < ZERO) {                        /* the same in every item */
            stopped = j;
            break;
        }
        squares += e * e;
        if (i < n) {
            real xs = start;
            #pragma unroll
            for (int u = 0; u < PW; u++) {
                const int col = c0 + u;
                if (j == blk && col > t)
                    break;
                xs -= lv[u] * wv[col];
                TILE_AT(j)[u * ld] = dj[col] * lv[u]
                    + bj[col] * (j == blk && col == t ? ZERO : xs);
            }
        }
        x = after;
        #pragma unroll
        for (int u = 0; u < PW; u++)
            lv[u] = next[u];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const real tsum = group_sum(squares, scan, lid);   /* out of the branch: PoCL */
    if (stopped >= 0) {                            /* x: before the stopping block */
        if (i < n && h == 0)
            v[voff + i] = x / sqrt(ONE + tsum);
        if (lid == 0)
            atomic_min(state + 1, stopped * TB);
    }
}
#endif
