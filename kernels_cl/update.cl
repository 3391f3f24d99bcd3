/* update.cl -- rank-k modification of a Cholesky factor: from R with
 * A = R^T R, the factor of A + sign V V^T (V n x k) in O(k n^2), by ordinary
 * (sign = +1, update) or hyperbolic (sign = -1, downdate) rotations.  sign is
 * an argument (one program serves both; it costs a multiplication).
 * Walder, "Rank k Cholesky up/down-dating on the GPU" (2010), Algorithm 1:
 *
 *   Compute(i, p):  w = sqrt(R(i,i)^2 + sign V(i,p)^2),
 *                   c = w / R(i,i),  s = V(i,p) / R(i,i),  R(i,i) = w
 *   Apply(i, p, j): R(i,j) = (R(i,j) + sign s V(j,p)) / c      (j > i)
 *                   V(j,p) = c V(j,p) - s R(i,j)               (the new R(i,j))
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
 * n x k, overwritten; rot (n x k pairs (c, s), row-major) holds the
 * rotations.
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
 *   i0+nb +---------+--------------+   apply_panel   one work-item per column j of T:
 *                                                    the panel's nb x k rotations,
 *     V(i0:i0+nb, :) is consumed by P; V(j, :)       V(j, :) in registers KB columns
 *     for j in T is rotated by apply_panel.          at a time, R(i0:i0+nb, j) in
 *                                                    registers across them
 *
 * info (one int, 0 on entry): Compute that finds R(i,i)^2 + sign V(i,p)^2
 * not > 0 (or NaN), or R(i,i) = 0, stores i + 1, the order of the leading
 * minor that is not positive definite; every later kernel returns at once.
 */
#include "common.h"
#include "triangle.h"

#ifndef WG
#define WG 64              /* work-group size of factor_panel and apply_panel */
#endif
#ifndef PANEL
#define PANEL 32           /* rows of R per panel (apply_panel's registers R(i0+r, j)) */
#endif
#ifndef KB
#define KB 16              /* columns of V that apply_panel holds in registers at once */
#endif

#define R(i, j) TRI(a, (j), (i))
#define VAT(i, p) v[AT((i), (p), k)]
#define ROT(i, p) rot[AT((i), (p), k)]

/* Compute for row i, p = 0 .. k-1: writes the rotations and the new R(i,i);
 * returns 0 (leaving R(i,i) as it is) where the modified matrix is not
 * positive definite.  The radicand of a downdate is formed as
 * (|r| - |v|)(|r| + |v|), which keeps its leading digits near cancellation. */
inline int compute_rotations(__global real *a, const int ld, const int n, const int i,
                             __global const real *v, const int k, __global real2 *rot,
                             const int sign)
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
        ROT(i, p) = (real2)(w / r, x / r);
        r = w;
    }
    R(i, i) = r;
    return 1;
}

/* Apply for row i to column j > i, p = 0 .. k-1, V(j, :) in global memory. */
inline void rotate_column(__global real *a, const int ld, const int n, const int i,
                          const int j, __global real *v, const int k,
                          __global const real2 *rot, const int sign)
{
    real r = R(i, j);
    for (int p = 0; p < k; p++) {
        const real2 cs = ROT(i, p);
        const real x = VAT(j, p);
        r = (r + sign * cs.y * x) / cs.x;
        VAT(j, p) = cs.x * x - cs.y * r;
    }
    R(i, j) = r;
}

__kernel void compute_row(__global real *a, const long off, const int ld, const int n,
                          const int i, __global const real *v, const int k,
                          __global real2 *rot, const int sign, __global int *info)
{
    a += off;
    if (*info)
        return;
    if (!compute_rotations(a, ld, n, i, v, k, rot, sign))
        *info = i + 1;
}

__kernel void apply_row(__global real *a, const long off, const int ld, const int n,
                        const int i, __global real *v, const int k,
                        __global const real2 *rot, const int sign,
                        __global const int *info)
{
    a += off;
    const int j = i + 1 + get_global_id(0);
    if (j >= n || *info)
        return;
    rotate_column(a, ld, n, i, j, v, k, rot, sign);
}

/* Rows i0 .. i0+nb-1 within the panel's triangle: item 0 computes a row's
 * rotations, a barrier publishes them (global memory, one work-group), the
 * items rotate the rest of the row inside the panel and V's rows there. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void factor_panel(__global real *a, const long off, const int ld, const int n,
                  const int i0, const int nb, __global real *v, const int k,
                  __global real2 *rot, const int sign, __global int *info)
{
    __local int failed;
    a += off;
    const int lid = get_local_id(0);
    if (lid == 0)
        failed = *info;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (failed)
        return;
    for (int i = i0; i < i0 + nb; i++) {
        if (lid == 0 && !compute_rotations(a, ld, n, i, v, k, rot, sign)) {
            failed = 1;
            *info = i + 1;
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (failed)
            return;
        for (int j = i + 1 + lid; j < i0 + nb; j += WG)
            rotate_column(a, ld, n, i, j, v, k, rot, sign);
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

/* Column j = i0 + nb + global id of the trailing part: R(i0 .. i0+nb-1, j) in
 * registers for the whole launch; per group of KB columns of V, the group's
 * rotations are staged in local memory (c, 1/c, s, sign s; rows past nb and
 * columns past k are identities) and V(j, q .. q+KB-1) in registers.  Order: columns
 * of V in groups, then rows, then the group's columns -- per row p increases,
 * per column of V i increases (the header). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void apply_panel(__global real *a, const long off, const int ld, const int n,
                 const int i0, const int nb, __global real *v, const int k,
                 __global const real2 *rot, const int sign, __global const int *info)
{
    __local real lc[PANEL * KB], lic[PANEL * KB], ls[PANEL * KB], lss[PANEL * KB];
    a += off;
    if (*info)                          /* uniform: nothing here writes info */
        return;
    const int lid = get_local_id(0);
    const int j = i0 + nb + get_global_id(0);
    const int live = j < n;
    real x[PANEL], y[KB];
    for (int r = 0; r < PANEL; r++)
        x[r] = (live && r < nb) ? R(i0 + r, j) : ZERO;
    for (int q = 0; q < k; q += KB) {
        for (int e = lid; e < PANEL * KB; e += WG) {
            const int r = e / KB, p = q + e % KB;
            const real2 cs = (r < nb && p < k) ? ROT(i0 + r, p) : (real2)(ONE, ZERO);
            lc[e] = cs.x;
            lic[e] = ONE / cs.x;
            ls[e] = cs.y;
            lss[e] = sign * cs.y;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int p = 0; p < KB; p++)
            y[p] = (live && q + p < k) ? VAT(j, q + p) : ZERO;
        for (int r = 0; r < PANEL; r++) {
            real t = x[r];
            for (int p = 0; p < KB; p++) {
                const int e = r * KB + p;
                t = (t + lss[e] * y[p]) * lic[e];
                y[p] = lc[e] * y[p] - ls[e] * t;
            }
            x[r] = t;
        }
        if (live)
            for (int p = 0; p < KB && q + p < k; p++)
                VAT(j, q + p) = y[p];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (live)
        for (int r = 0; r < nb; r++)
            R(i0 + r, j) = x[r];
}
