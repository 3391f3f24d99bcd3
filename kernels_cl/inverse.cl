/* inverse.cl -- the pieces of the Cholesky inverse (LAPACK ?potri = ?trtri +
 * ?lauum) and of the log-determinant that the BLAS-3 layer does not provide.
 *
 * check_diagonal: the first zero on the diagonal of an n x n triangle, as
 *   LAPACK's info: item i finding T(i, i) == 0 does atomic_max(flags, n - i),
 *   so after the launch flags[0] = n - i_min, i.e. info = n + 1 - flags[0]
 *   (flags[0] = 0: no zero).  The host starts flags[0] at 0.
 *
 * put_diagonal_blocks: the m x nb workspace W of trsm.cl's trtri_blocks (the
 *   inverse of the i-th nb x nb diagonal block in rows i*nb .., the last block
 *   possibly smaller, zeros outside each block's triangle) copied back onto the
 *   diagonal blocks of T, one work-item per entry of W:
 *
 *        W (m x nb)            T (m x m)
 *      [ W0 ]                [ W0          ]
 *      [ W1 ]      ->        [    W1       ]
 *      [ W2 ]                [       W2    ]
 *
 * lauum_block: R = X^T X (LOWER = 1, X lower) or X X^T (LOWER = 0, X upper)
 *   for one n x n triangle, n <= TRSM_NB, in place: one work-group stages X in
 *   local memory, then writes R's triangle; the other triangle is not touched.
 *     lower  R(i, j) = sum_{k >= i} X(k, i) X(k, j),  i >= j
 *     upper  R(i, j) = sum_{k >= j} X(i, k) X(j, k),  i <= j
 *
 * logdet_partial / logdet_final: the two stages of  sum_i log|C(i, i)|.
 *   The diagonal of full storage is read with stride ld + 1 (TRI(c, i, i),
 *   triangle.h, which also maps it into an RFP array for PACKED = 1).  Each
 *   item sums its entries in the accumulator type `acc` with Neumaier's
 *   compensation (a running sum s and the lost low-order parts e); work-groups
 *   combine (s, e) pairs by a tree of TwoSums (Knuth), so the result carries
 *   about twice the accumulator's precision.  ACC64 = 1 accumulates in double
 *   (needs cl_khr_fp64; the logarithms are then taken in double too), 0 in
 *   `real`.  Stage one writes one (s, e) pair per work-group into `partial`;
 *   stage two, one work-group, reduces the pairs to out[0] = s, out[1] = e.
 */
#include "common.h"
#include "triangle.h"

#ifndef TRSM_NB
#define TRSM_NB 32         /* lauum_block: largest triangle a work-group stages */
#endif
#ifndef WG
#define WG 64              /* logdet_*: work-group size (a power of two) */
#endif
#ifndef ACC64
#define ACC64 0            /* logdet_*: 1 = accumulate in double (cl_khr_fp64) */
#endif

__kernel void check_diagonal(const int n, __global const real *t, const long off,
                             const int ld, __global int *flags)
{
    const int i = get_global_id(0);
    if (i < n && t[off + AT(i, i, ld)] == ZERO)
        atomic_max(flags, n - i);
}

__kernel void put_diagonal_blocks(const int m, const int nb, __global const real *w,
                                  const int ldw, __global real *t, const long off,
                                  const int ld)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r >= m || c >= nb)
        return;
    const int k0 = r / nb * nb;
    if (c < min(nb, m - k0))
        t[off + AT(r, k0 + c, ld)] = w[AT(r, c, ldw)];
}

__kernel void lauum_block(const int n, __global real *x, const long off, const int ld)
{
    __local real xs[TRSM_NB][TRSM_NB + 1];
    x += off;
    for (int idx = get_local_id(0); idx < n * n; idx += get_local_size(0))
        xs[idx / n][idx % n] = x[AT(idx / n, idx % n, ld)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int idx = get_local_id(0); idx < n * n; idx += get_local_size(0)) {
        const int i = idx / n, j = idx % n;
        real s = ZERO;
#if LOWER
        if (j > i)
            continue;
        for (int k = i; k < n; k++)
            s += xs[k][i] * xs[k][j];
#else
        if (j < i)
            continue;
        for (int k = j; k < n; k++)
            s += xs[i][k] * xs[j][k];
#endif
        x[AT(i, j, ld)] = s;
    }
}

#if ACC64
#if PRECISION != 64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
typedef double acc;
typedef double2 acc2;
#else
typedef real acc;
typedef REALV(2) acc2;
#endif

/* (s, e) + x with Neumaier's compensation: e collects what s's rounding lost. */
inline acc2 neumaier_add(acc2 p, const acc x)
{
    const acc s = p.x + x;
    if (isfinite(s))           /* -inf (a zero diagonal entry) stays -inf */
        p.y += (fabs(p.x) >= fabs(x)) ? (p.x - s) + x : (x - s) + p.x;
    p.x = s;
    return p;
}

/* The sum of two (s, e) pairs: TwoSum of the s parts, errors added. */
inline acc2 pair_add(const acc2 a, const acc2 b)
{
    const acc s = a.x + b.x;
    if (!isfinite(s))
        return (acc2)(s, (acc)0);
    const acc bb = s - a.x;
    const acc err = (a.x - (s - bb)) + (b.x - bb);
    return (acc2)(s, a.y + b.y + err);
}

/* Tree reduction of the work-group's pairs in local memory; item 0 gets the total. */
inline acc2 group_sum(acc2 p, __local acc2 *scratch)
{
    const int l = get_local_id(0);
    scratch[l] = p;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = WG / 2; step > 0; step /= 2) {
        if (l < step)
            scratch[l] = pair_add(scratch[l], scratch[l + step]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

__kernel void logdet_partial(const int n, __global const real *c, const long off,
                             const int ld, __global acc2 *partial)
{
    __local acc2 scratch[WG];
    c += off;
    acc2 p = (acc2)((acc)0, (acc)0);
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        p = neumaier_add(p, log(fabs((acc)TRI(c, i, i))));
    p = group_sum(p, scratch);
    if (get_local_id(0) == 0)
        partial[get_group_id(0)] = p;
}

__kernel void logdet_final(const int groups, __global const acc2 *partial,
                           __global acc2 *out)
{
    __local acc2 scratch[WG];
    acc2 p = (acc2)((acc)0, (acc)0);
    for (int g = get_local_id(0); g < groups; g += WG)
        p = pair_add(p, partial[g]);
    p = group_sum(p, scratch);
    if (get_local_id(0) == 0)
        out[0] = p;
}
