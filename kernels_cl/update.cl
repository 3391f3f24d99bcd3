/* update.cl -- rank-k modification of a Cholesky factor: from R with
 * A = R^T R, the factor of A + sign V V^T (V n x k) in O(k n^2), by ordinary
 * (sign = +1, update) or hyperbolic (sign = -1, downdate) rotations.  sign is
 * an argument (one program serves both; it costs a multiplication).
 * Walder, "Rank k Cholesky up/down-dating on the GPU" (2010), Algorithm 1:
 *
 *   Compute(i, p):  w = sqrt(R(i,i)^2 + sign V(i,p)^2),
 *                   c = w / R(i,i),  s = V(i,p) / R(i,i),  R(i,i) = w
 *   Apply(i, p, j): R(i,j) = (R(i,j) + sign s V(j,p)) / c      (j > i; the kernels
 *                   V(j,p) = c V(j,p) - s R(i,j)               multiply by 1/c;
 *                                                              the new R(i,j))
 *
 * Rotation (i, p) touches row i of R and column p of V only, so rotations of
 * different rows and columns commute: any order that keeps, per row, p
 * increasing and, per column of V, i increasing gives the same result as k
 * rank-1 modifications one after the other.  Every kernel here keeps it.
 *
 * R is reached through the logical lower factor L = R^T of triangle.h:
 * R(i, j) = TRI(a, j, i), i <= j, so the same source serves row-major upper
 * (scipy's default, R's row i contiguous), row-major lower and both RFP
 * layouts, and never touches the other triangle.  V is dense row-major
 * n x k, overwritten.  rot holds the rotations, (c, s, 1/c, sign s) per
 * (i, p), rows of kp >= k (a multiple of KB) and at least n + PANEL rows;
 * the host fills it with identities (1, 0, 1, 0) first, so apply_panel
 * reads whole PANEL x KB blocks with no bounds to test.
 *
 * Per-row kernels (teaching variant, two launches per row i):
 *   compute_row   one work-item: the k rotations of row i, in order of p
 *   apply_row     one work-item per column j > i: R(i,j) and V(j,:) by them
 *
 * Panels (fast variant, two launches per PANEL rows i0 .. i0+nb-1):
 *
 *          i0      i0+nb          n
 *     i0  +---------+--------------+   factor_panel  one work-group: compute_row
 *         | \  P    |      T       |                 and apply_row within the nb x nb
 *         |   \     |              |                 triangle P, row after row
 *   i0+nb +---------+--------------+   apply_panel   per work-item VW columns j of T:
 *                                                    the panel's nb x k rotations,
 *     V(i0:i0+nb, :) is consumed by P; V(j, :)       V(j, :) in registers KB columns
 *     for j in T is rotated by apply_panel.          at a time, R(i0:i0+PANEL, j) in
 *                                                    registers across them; no
 *                                                    barriers, no local memory
 *
 * Streamed (the factor on the host): the panel kernels run on the panel's
 * rows alone, R(i0:i0+nb, i0:n) uploaded as a matrix of its own (i0 = 0,
 * order n - i0 there), V and rot on the device; voff is then V's row i0.
 *
 * info (one int, 0 on entry): Compute that finds R(i,i)^2 + sign V(i,p)^2
 * not > 0 (or NaN), or R(i,i) = 0, stores i + 1, the order of the leading
 * minor that is not positive definite; every later kernel returns at once.
 */
#include "common.h"
#include "triangle.h"
#include "unroll.h"

#ifndef WG
#define WG 64              /* work-group size of factor_panel */
#endif
#ifndef PANEL
#define PANEL 32           /* rows of R per panel (apply_panel's registers R(i0+r, j)) */
#endif
#ifndef KB
#define KB 16              /* columns of V that apply_panel holds in registers at once */
#endif
#ifndef VW
#define VW 1               /* trailing columns per apply_panel item, one vector of them */
#endif
typedef REALV(VW) realv;

#define R(i, j) TRI(a, (j), (i))
#define VAT(i, p) v[AT((i), (p), k)]

/* V(j0 + u, p) for the m live columns u < m of an apply item, as a vector (zero
 * past k and past m), and back (columns p < k only). */
inline realv v_entry(__global const real *v, const int k, const int j0, const int m,
                     const int p)
{
    LANES(VW) e;
    for (int u = 0; u < VW; u++)
        e.s[u] = (p < k && u < m) ? VAT(j0 + u, p) : ZERO;
    return e.v;
}

inline void v_store(__global real *v, const int k, const int j0, const int m, const int p,
                    const realv y)
{
    LANES(VW) e;
    e.v = y;
    if (p < k)
        for (int u = 0; u < m; u++)
            VAT(j0 + u, p) = e.s[u];
}

#define ROT(i, p) rot[AT((i), (p), kp)]

#ifndef HOUSEHOLDER
#define HOUSEHOLDER 0
#endif
#if !HOUSEHOLDER
/* The rotations' kernels: the program without HOUSEHOLDER.  The reflectors'
 * program (HOUSEHOLDER=1, below) holds only its two kernels, whose route uses
 * no other: each program is compiled for the kernels it serves (on NVIDIA a
 * build's time grows with the unrolled code in it). */

/* Compute for row i, p = 0 .. k-1: writes the rotations and the new R(i,i);
 * returns 0 (leaving R(i,i) as it is) where the modified matrix is not
 * positive definite.  The radicand of a downdate is formed as
 * (|r| - |v|)(|r| + |v|), which keeps its leading digits near cancellation. */
inline int compute_rotations(__global real *a, const int ld, const int n, const int i,
                             __global const real *v, const int k, __global real4 *rot,
                             const int kp, const int sign)
{
    real r = R(i, i);
    if (r == ZERO)
        return 0;
    for (int p = 0; p < k; p++) {
        const real x = VAT(i, p);
        real w;
        if (sign > 0) {
            w = hypot(r, x);
        } else {
            const real w2 = (fabs(r) - fabs(x)) * (fabs(r) + fabs(x));
            if (!(w2 > ZERO))            /* also true for NaN */
                return 0;
            w = sqrt(w2);
        }
        const real c = w / r, s = x / r;
        ROT(i, p) = (real4)(c, s, ONE / c, sign * s);
        r = w;
    }
    R(i, i) = r;
    return 1;
}

/* Apply for row i to column j > i, p = 0 .. k-1, V(j, :) in global memory. */
inline void rotate_column(__global real *a, const int ld, const int n, const int i,
                          const int j, __global real *v, const int k,
                          __global const real4 *rot, const int kp)
{
    real r = R(i, j);
    for (int p = 0; p < k; p++) {
        const real4 cs = ROT(i, p);
        const real x = VAT(j, p);
        r = (r + cs.w * x) * cs.z;
        VAT(j, p) = cs.x * x - cs.y * r;
    }
    R(i, j) = r;
}

__kernel void compute_row(__global real *a, const long off, const int ld, const int n,
                          const int i, __global const real *v, const int k,
                          __global real4 *rot, const int kp, const int sign,
                          __global int *info)
{
    a += off;
    if (*info)
        return;
    if (!compute_rotations(a, ld, n, i, v, k, rot, kp, sign))
        *info = i + 1;
}

__kernel void apply_row(__global real *a, const long off, const int ld, const int n,
                        const int i, __global real *v, const int k,
                        __global const real4 *rot, const int kp, __global const int *info)
{
    a += off;
    const int j = i + 1 + get_global_id(0);
    if (j >= n || *info)
        return;
    rotate_column(a, ld, n, i, j, v, k, rot, kp);
}

/* Rows i0 .. i0+nb-1 within the panel's triangle: item 0 computes a row's
 * rotations, a barrier publishes them (global memory, one work-group), the
 * items rotate the rest of the row inside the panel and V's rows there. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void factor_panel(__global real *a, const long off, const int ld, const int n,
                  const int i0, const int nb, __global real *v, const long voff,
                  const int k, __global real4 *rot, const int kp, const int sign,
                  __global int *info)
{
    __local int failed;
    a += off;
    v += voff;
    const int lid = get_local_id(0);
    if (lid == 0)
        failed = *info;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (failed)
        return;
    for (int i = i0; i < i0 + nb; i++) {
        if (lid == 0 && !compute_rotations(a, ld, n, i, v, k, rot, kp, sign)) {
            failed = 1;
            *info = i + 1;
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (failed)
            return;
        for (int j = i + 1 + lid; j < i0 + nb; j += WG)
            rotate_column(a, ld, n, i, j, v, k, rot, kp);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

#endif /* !HOUSEHOLDER */

/* The panel's triangle tri(r, c) = R(i0+r, i0+c), r <= c < nb, between global
 * and local memory (row stride PANEL): work-item c moves column c, rows in
 * groups of TRI_GROUP whose loads are all issued before the first is used,
 * from addresses clamped into the triangle (no test before a load).  A loop
 * over the triangle's entries with a test per entry (the code before) took
 * 2.4 ms more of the 7.5 ms of the panels of an update of order 8192 on the
 * H100 (benchmarks/results/nvidia-h100-2026-11-26-update-3.txt).  No early
 * return in these helpers: PoCL 3.0 ran the items past it wrongly (stores to
 * the other triangle).  Needs FWG >= PANEL. */
#define TRI_GROUP 16
inline void load_triangle(__local real *tri, __global const real *a, const int ld,
                          const int n, const int i0, const int nb, const int c)
{
    const int cc = min(c, nb - 1);
    for (int r0 = 0; r0 < PANEL; r0 += TRI_GROUP) {
        real t[TRI_GROUP];
        #pragma unroll
        for (int u = 0; u < TRI_GROUP; u++)
            t[u] = R(i0 + min(r0 + u, cc), i0 + cc);
        #pragma unroll
        for (int u = 0; u < TRI_GROUP; u++)
            if (r0 + u <= c && c < nb)
                tri[(r0 + u) * PANEL + c] = t[u];
    }
}

inline void store_triangle(__local const real *tri, __global real *a, const int ld,
                           const int n, const int i0, const int nb, const int c)
{
    for (int r = 0; r < PANEL; r++)
        if (r <= c && c < nb)
            R(i0 + r, i0 + c) = tri[r * PANEL + c];
}

/* factor_panel's job with the panel's triangle in local memory and each row's
 * rotations formed in parallel (GPUs, where factor_panel's chain of k square
 * roots and divisions and its round trips through global memory between
 * barriers made it the bulk of the update).  Work-item c owns panel column c:
 * V(i0+c, q .. q+KF-1) in registers for a group of KF columns of V (zeros past
 * k: identity rotations), its entries of the triangle tri(r, c) =
 * R(i0+r, i0+c) in local memory.  Per row i, work-item p < KF forms rotation p
 * from the prefix
 *
 *   u_p = 1 + sign * sum_{q <= p} (V(i,q) / R(i,i))^2,   r_p = |R(i,i)| sqrt(u_p)
 *   c_p = r_p / r_{p-1},  s_p = V(i,p) / r_{p-1}      (r_{-1} = R(i,i))
 *
 * (r_p is the diagonal after p + 1 rotations; scaled by R(i,i), so no square
 * overflows; u_{p-1} and u_p summed by halving, TREE_SUM, the same sums as
 * items p - 1's and p + 1's), then each item c > i applies the row's KF rotations to R(i,c)
 * and its V row in the mixed form, and item i + 1 publishes its V row, the
 * next row's input.  Two local barriers per row and group; every loop over
 * the group is unrolled (KF is a define).  rot gets every rotation. */
#ifndef KF
#define KF KB              /* columns of V per pass of factor_panel_local */
#endif
#ifndef FWG
#define FWG 64             /* work-group size of factor_panel_local, >= PANEL and KF */
#endif

/* x[0] = x[0] + ... + x[KF-1] (KF a power of two) by halving: log2(KF) dependent
 * additions instead of KF (each row of a panel waits on such sums).  A macro:
 * NVIDIA's compiler kept an array passed to a function in memory (the panels
 * and the applies twice as slow on the H100). */
#define TREE_SUM(x)                                         \
    for (int w_ = KF / 2; w_ >= 1; w_ /= 2)                 \
        for (int p_ = 0; p_ < w_; p_++)                     \
            x[p_] += x[p_ + w_]

#if !HOUSEHOLDER
__kernel __attribute__((reqd_work_group_size(FWG, 1, 1)))
void factor_panel_local(__global real *a, const long off, const int ld, const int n,
                        const int i0, const int nb, __global real *v, const long voff,
                        const int k, __global real4 *rot, const int kp, const int sign,
                        __global int *info)
{
    __local real tri[PANEL * PANEL];
    __local real xrow[KF];                           /* V(i0+i, q ..), the row's input */
    __local real4 rl[KF];
    __local real diag;
    __local int failed;
    a += off;
    v += voff;
    const int lid = get_local_id(0);
    const int mine = lid < nb;                       /* owns panel column lid */
    if (lid == 0)
        failed = *info;
    load_triangle(tri, a, ld, n, i0, nb, lid);
    real y[KF];
    for (int q = 0; q < k; q += KF) {
        #pragma unroll
        for (int p = 0; p < KF; p++)
            y[p] = (mine && q + p < k) ? VAT(i0 + lid, q + p) : ZERO;
        if (lid == 0) {
            #pragma unroll
            for (int p = 0; p < KF; p++)
                xrow[p] = y[p];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (failed)
            return;
        for (int i = 0; i < nb; i++) {
            if (lid < KF) {
                const real r0 = tri[i * PANEL + i];
                const real inv = ONE / r0, mag = fabs(r0);
                real sq[KF];                         /* u_{p-1}, then u_p, p = lid: */
                #pragma unroll                       /* sums by halving, the same as */
                for (int q = 0; q < KF; q++) {       /* items p - 1's and p + 1's */
                    const real t = xrow[q] * inv;
                    sq[q] = q < lid ? sign * t * t : ZERO;
                }
                TREE_SUM(sq);
                const real u = ONE + sq[0];
                #pragma unroll
                for (int q = 0; q < KF; q++) {
                    const real t = xrow[q] * inv;
                    sq[q] = q <= lid ? sign * t * t : ZERO;
                }
                TREE_SUM(sq);
                const real un = ONE + sq[0];
                const real x = xrow[lid];
                if (r0 == ZERO || (sign < 0 && !(un > ZERO)))   /* also for NaN */
                    failed = 1;
                const real rm = lid ? mag * sqrt(u) : r0, w = mag * sqrt(un);
                const real s = x / rm;
                const real4 cs = (real4)(w / rm, s, rm / w, sign * s);
                rl[lid] = cs;
                if (q + lid < kp)
                    ROT(i0 + i, q + lid) = cs;
                if (lid == KF - 1)
                    diag = w;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            if (failed) {
                if (lid == 0)
                    *info = i0 + i + 1;
                return;
            }
            if (lid == 0)
                tri[i * PANEL + i] = diag;
            if (mine && lid > i) {
                real rr = tri[i * PANEL + lid];
                #pragma unroll
                for (int p = 0; p < KF; p++) {
                    const real4 cs = rl[p];
                    rr = (rr + cs.w * y[p]) * cs.z;
                    y[p] = cs.x * y[p] - cs.y * rr;
                }
                tri[i * PANEL + lid] = rr;
                if (lid == i + 1) {
                    #pragma unroll
                    for (int p = 0; p < KF; p++)
                        xrow[p] = y[p];
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (mine) {
            #pragma unroll
            for (int p = 0; p < KF; p++)
                if (q + p < k)
                    VAT(i0 + lid, q + p) = y[p];
        }
    }
    store_triangle(tri, a, ld, n, i0, nb, lid);
}

/* Columns j0 .. j0+VW-1 of the trailing part, j0 = j1 + VW * global id, up to column j2
 * (j1 = i0 + nb, j2 = n: all of it; a look-ahead takes the next panel's columns apart),
 * as VW-wide vectors (CPUs: explicit SIMD, VW independent chains; GPUs: VW = 1,
 * one column per item): R(i0 .. i0+PANEL-1, j) in registers for the whole
 * launch (rows past n and columns past n: zeros, never stored), and per
 * group of KB columns of V, V(j, q .. q+KB-1) (columns past k: zeros, never
 * stored).  Every rotation read is rot's, identities past n and k.  Order:
 * columns of V in groups, then rows, then the group's columns -- per row p
 * increases, per column of V i increases (the header). */
__kernel void apply_panel(__global real *a, const long off, const int ld, const int n,
                          const int i0, const int nb, __global real *v, const long voff,
                          const int k, __global const real4 *rot, const int kp,
                          __global const int *info, const int j1, const int j2)
{
    a += off;
    v += voff;
    const int j0 = j1 + VW * get_global_id(0);
    if (j0 >= j2 || *info)
        return;
    const int m = min(VW, j2 - j0);                  /* live columns */
    realv x[PANEL], y[KB];
    LANES(VW) e;
    for (int r = 0; r < PANEL; r++) {
        for (int u = 0; u < VW; u++)
            e.s[u] = (r < nb && u < m) ? R(i0 + r, j0 + u) : ZERO;
        x[r] = e.v;
    }
    for (int q = 0; q < k; q += KB) {
        for (int p = 0; p < KB; p++)
            y[p] = v_entry(v, k, j0, m, q + p);
        for (int r = 0; r < PANEL; r++) {
            __global const real4 *g = rot + AT(i0 + r, q, kp);
            realv t = x[r];
            for (int p = 0; p < KB; p++) {
                const real4 cs = g[p];
                t = (t + cs.w * y[p]) * cs.z;
                y[p] = cs.x * y[p] - cs.y * t;
            }
            x[r] = t;
        }
        for (int p = 0; p < KB; p++)
            v_store(v, k, j0, m, q + p, y[p]);
    }
    for (int r = 0; r < nb; r++) {
        e.v = x[r];
        for (int u = 0; u < m; u++)
            R(i0 + r, j0 + u) = e.s[u];
    }
}

#endif /* !HOUSEHOLDER */

#if HOUSEHOLDER
/* ---- updates by Householder reflectors (sign = +1, k <= KF) -------------------------
 * Built only with HOUSEHOLDER=1 (their unrolled loops double a CPU build's time,
 * and CPUs use the rotations).
 *
 * An update is the QR factorization of [R; V^T]: row i's k rotations can be
 * replaced by one reflector of length 1 + k (LAPACK's dlarfg of the column
 * (R(i,i); V(i,:)^T)):
 *
 *   alpha = R(i,i), nrm = |alpha| sqrt(1 + sum_p (V(i,p)/alpha)^2),
 *   u = V(i,:) / (alpha + copysign(nrm, alpha)),  tau = 1 + |alpha| / nrm,
 *   H = I - tau w w^T,  w = (e_i; u):  H (R(i,i); V(i,:)^T) = (-copysign(nrm, alpha); 0)
 *
 * and row i is then multiplied by flip = -sign(alpha), so that the new
 * diagonal nrm is positive (the factor with a positive diagonal is unique:
 * the same factor as the rotations', up to rounding).  Column j > i gets
 *
 *   d = R(i,j) + u . V(j,:),  R(i,j) = flip (R(i,j) - tau d),  V(j,:) -= tau d u.
 *
 * A row costs one reduction of k values and a rank-1 update instead of a
 * chain of k square roots and divisions.  H is orthogonal only for sign = +1
 * (the hyperbolic analogue loses the mixed rotations' stability), so
 * downdates keep the rotations.
 *
 * The panel's reflectors go to h, row i0 + r holding (u_0 .. u_{kp-1}, tau,
 * flip, M(r, 0 .. PANEL-1)) (row length kp + 2 + PANEL, zero-filled by the
 * host), M(r, l) = tau_l (u_r . u_l) for l < r: the coupling of the panel's
 * reflectors, which lets apply_panel_reflect find all of a column's d at once
 * (d_r = z_r - sum_{l<r} M(r,l) d_l, z_r = R(i0+r,j) + u_r . V(j,:)) -- the
 * compact WY representation's T, by forward substitution. */
#define HROW(i) (h + AT((i), 0, kp + 2 + PANEL))

/* dlarfg for the column owned by this item: alpha = diag (an lvalue), the
 * item's V row y (zero past k).  Publishes u, tau and flip in local memory (ul,
 * tl) and in h's row hi, sets diag to the new diagonal, y to u and tau; ok = 0
 * for a zero diagonal.  A macro on the caller's y and tau, as TREE_SUM. */
#define REFLECTOR(diag, ul, tl, hi, ok)                                         \
    do {                                                                        \
        const real alpha_ = (diag);                                             \
        ok = alpha_ != ZERO;                                                    \
        if (ok) {                                                               \
            const real inv_ = ONE / alpha_;                                     \
            real sq_[KF];                                                       \
            for (int q_ = 0; q_ < KF; q_++)                                     \
                sq_[q_] = (y[q_] * inv_) * (y[q_] * inv_);                      \
            TREE_SUM(sq_);                                                      \
            const real mag_ = fabs(alpha_), nrm_ = mag_ * sqrt(ONE + sq_[0]);   \
            const real scale_ = ONE / (alpha_ + copysign(nrm_, alpha_));        \
            tau = ONE + mag_ / nrm_;                                            \
            for (int q_ = 0; q_ < KF; q_++) {                                   \
                y[q_] *= scale_;                                                \
                (ul)[q_] = y[q_];                                               \
                if (q_ < kp)                                                    \
                    (hi)[q_] = y[q_];                                           \
            }                                                                   \
            (tl)[0] = tau;                                                      \
            (tl)[1] = alpha_ > ZERO ? -ONE : ONE;                               \
            (hi)[kp] = (tl)[0];                                                 \
            (hi)[kp + 1] = (tl)[1];                                             \
            (diag) = nrm_;                                                      \
        }                                                                       \
    } while (0)

/* factor_panel_local's job for updates, by reflectors: item c owns panel
 * column c (its entries of the triangle in local memory, its V row in
 * registers).  Per row i: every item forms g = u_i . y from the published
 * reflector; items c > i update R(i,c) and their V row, item i + 1 then forms
 * the next reflector (its column is final); items c < i, whose y holds u_c,
 * store M(i, c) = tau_c g.  One barrier per row (u double-buffered). */
__kernel __attribute__((reqd_work_group_size(FWG, 1, 1)))
void factor_panel_reflect(__global real *a, const long off, const int ld, const int n,
                          const int i0, const int nb, __global real *v, const long voff,
                          const int k, __global real *h, const int kp, const int sign,
                          __global int *info)
{
    __local real tri[PANEL * PANEL];
    __local real ul[2][KF];
    __local real tl[2][2];                           /* tau, flip */
    __local int failed;
    a += off;
    v += voff;
    const int lid = get_local_id(0);
    const int mine = lid < nb;
    if (lid == 0)
        failed = *info;
    load_triangle(tri, a, ld, n, i0, nb, lid);
    real y[KF], tau = ZERO;
    #pragma unroll
    for (int p = 0; p < KF; p++)
        y[p] = (mine && p < k) ? VAT(i0 + lid, p) : ZERO;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (failed)
        return;
    for (int i = -1; i < nb; i++) {                  /* i = -1: row 0's reflector alone */
        if (failed) {
            if (lid == 0)
                *info = i0 + i + 1;                  /* row i's reflector failed */
            return;
        }
        const int b = i & 1;                         /* row i's reflector in ul[b] */
        if (i >= 0) {
            real gp[KF];
            #pragma unroll
            for (int p = 0; p < KF; p++)
                gp[p] = ul[b][p] * y[p];
            TREE_SUM(gp);
            const real g = gp[0];
            if (mine && lid > i) {
                const real r = tri[i * PANEL + lid], t = tl[b][0] * (r + g);
                tri[i * PANEL + lid] = tl[b][1] * (r - t);
                #pragma unroll
                for (int p = 0; p < KF; p++)
                    y[p] = MUL_ADD(-t, ul[b][p], y[p]);
            } else if (lid < i) {
                HROW(i0 + i)[kp + 2 + lid] = tau * g;
            }
        }
        if (mine && lid == i + 1) {                  /* its column is final: row i + 1 */
            int ok;
            REFLECTOR(tri[lid * PANEL + lid], ul[b ^ 1], tl[b ^ 1], HROW(i0 + lid), ok);
            if (!ok)
                failed = 1;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    store_triangle(tri, a, ld, n, i0, nb, lid);
}

/* Columns of V per pass of apply_panel_reflect's loops over the panel's rows: PW,
 * PG (4) but at most KB (a divisor of KB, so of kp: h's entries of a pass are
 * always there).  Each loop is PANEL x PW statements.  On the H100 (n = 8192,
 * k = 64, float32) PG = 8 built in 2.9 s instead of 1.9 and ran no faster
 * (benchmarks/results/nvidia-h100-2026-11-26-update-build-4.txt). */
#ifndef PG
#define PG 4
#endif
#define PW (KB < PG ? KB : PG)

/* The forward substitution d_r = z_r - sum_{l<r} M(r,l) d_l in place on z, one
 * step l at a time (l < nb, the same in every item), with literal indices
 * (z stays in registers) and PANEL^2/16 + PANEL statements instead of PANEL^2/2
 * (the fully unrolled form, with 16-column passes over V, made the program a
 * 13-16 s build on the H100; this one builds in 1.7-1.9 s, and the update runs
 * 1-16 % longer: 19.6 against 16.8 ms at n = 8192, k = 64, float32;
 * benchmarks/results/nvidia-h100-2026-11-26-update-build-4.txt):
 * a switch on l's block of eight picks the code of that block, its rows under
 * a test of l (row l gives zl = d_l, the later ones are updated), the rows of
 * the later blocks without one.  Per row the same operations in the same
 * order as the unrolled loops. */
#if PANEL % 8 == 0 && PANEL <= 64
#define MRL_(r) ml[AT(i0 + (r), 0, kp + 2 + PANEL)]
#define SUBST_NEAR(r) if ((r) > l) z[r] = MUL_ADD(-MRL_(r), zl, z[r]); \
                      else if ((r) == l) zl = z[r];
#define SUBST_FAR(r) z[r] = MUL_ADD(-MRL_(r), zl, z[r]);
#define SUBST_CASE(b) case (b) / 8: if ((b) < PANEL) { A8(SUBST_NEAR, BLOCK8(b, PANEL)) \
    LATER8(SUBST_FAR, b, PANEL) } break;
#endif

/* The panel's reflectors applied to columns j0 .. j0+VW-1 of the trailing
 * part (VW, j1 and j2 as apply_panel): z_r = R(i0+r, j) + u_r . V(j,:) for the PANEL rows
 * (V in passes of PW columns), d by forward substitution with M, then
 * R(i0+r, j) = flip_r (R(i0+r, j) - tau_r d_r) and V(j,:) -= sum_r tau_r d_r u_r.
 * Rows past nb take no part (their tau d is zero; h's rows there may be
 * stale).  Every loop over the rows is unrolled (z in registers) over PW
 * columns of V only: PANEL x PW statements each, not PANEL x KB. */
__kernel void apply_panel_reflect(__global real *a, const long off, const int ld,
                                  const int n, const int i0, const int nb, __global real *v,
                                  const long voff, const int k, __global const real *h,
                                  const int kp, __global const int *info, const int j1,
                                  const int j2)
{
    a += off;
    v += voff;
    const int j0 = j1 + VW * get_global_id(0);
    if (j0 >= j2 || *info)
        return;
    const int m = min(VW, j2 - j0);
    realv z[PANEL], y[PW];
    LANES(VW) e;
    #pragma unroll
    for (int r = 0; r < PANEL; r++) {
        for (int u = 0; u < VW; u++)
            e.s[u] = (r < nb && u < m) ? R(i0 + r, j0 + u) : ZERO;
        z[r] = e.v;
    }
    for (int q = 0; q < k; q += PW) {
        #pragma unroll
        for (int p = 0; p < PW; p++)
            y[p] = v_entry(v, k, j0, m, q + p);
        #pragma unroll
        for (int r = 0; r < PANEL; r++) {
            __global const real *hr = HROW(i0 + r) + q;
            #pragma unroll
            for (int p = 0; p < PW; p++)
                z[r] = MUL_ADD(hr[p], y[p], z[r]);
        }
    }
#if PANEL % 8 == 0 && PANEL <= 64
    for (int l = 0; l < nb; l++) {
        __global const real *ml = h + kp + 2 + l;
        realv zl = ZERO;
        switch (l / 8) {
        SUBST_CASE(0) SUBST_CASE(8) SUBST_CASE(16) SUBST_CASE(24)
        SUBST_CASE(32) SUBST_CASE(40) SUBST_CASE(48) SUBST_CASE(56)
        }
    }
#else
    #pragma unroll
    for (int l = 0; l < PANEL - 1; l++) {
        __global const real *ml = h + kp + 2 + l;
        #pragma unroll
        for (int r = l + 1; r < PANEL; r++)
            z[r] = MUL_ADD(-ml[AT(i0 + r, 0, kp + 2 + PANEL)], z[l], z[r]);
    }
#endif
    #pragma unroll
    for (int r = 0; r < PANEL; r++)
        z[r] = r < nb ? HROW(i0 + r)[kp] * z[r] : (realv)ZERO;           /* tau_r d_r */
    #pragma unroll
    for (int r = 0; r < PANEL; r++) {                /* literal r: z stays in registers */
        if (r < nb) {
            const real f = HROW(i0 + r)[kp + 1];
            e.v = z[r];
            for (int u = 0; u < m; u++)
                R(i0 + r, j0 + u) = f * (R(i0 + r, j0 + u) - e.s[u]);
        }
    }
    for (int q = 0; q < k; q += PW) {
        #pragma unroll
        for (int p = 0; p < PW; p++)
            y[p] = v_entry(v, k, j0, m, q + p);
        #pragma unroll
        for (int r = 0; r < PANEL; r++) {
            __global const real *hr = HROW(i0 + r) + q;
            #pragma unroll
            for (int p = 0; p < PW; p++)
                y[p] = MUL_ADD(-z[r], hr[p], y[p]);
        }
        #pragma unroll
        for (int p = 0; p < PW; p++)
            v_store(v, k, j0, m, q + p, y[p]);
    }
}
#endif
