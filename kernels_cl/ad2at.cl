/* ad2at.cl -- C = A diag(d2) A^T, one triangle only, and helpers.
 *
 *   A:  m x n row-major (leading dimension lda), m <= n
 *   d2: n weights (the diagonal of D^2), all >= 0
 *   C:  symmetric m x m; one triangle in full or packed storage, reached
 *       through TRI(c, i, j), i >= j (triangle.h; here n is C's order m)
 *
 * Teaching variant (the paper's Algorithm 3), per column k of A:
 *   scale_column       b[i] = d2[k] * A(i, k)                  m work-items
 *   outer_product_add  C(i, j) += A(i, k) * b(j), for exactly   m(m+1)/2 work-items
 *                      the entries i >= j of the triangle      (triangle_entry)
 *
 * Fast variant: scale_columns writes W = A diag(d2) once (or scale_transpose
 * W^T = diag(d2) A^T, n x m), then the BLAS layer's gemm forms W A^T (or A W^T)
 * on the stored triangle only (or on the three blocks of the packed array), tile
 * by tile.
 *
 * symmetrize: copies the stored triangle of a full m x m matrix into the other.
 * count_invalid_weights: counts the d2 entries that are negative or NaN.
 */
#include "common.h"
#include "triangle.h"

__kernel void scale_column(__global const real *a, const long a_off, const int lda,
                           const int m, const int k, __global const real *d2,
                           __global real *b)
{
    const int i = get_global_id(0);
    if (i < m)
        b[i] = d2[k] * a[a_off + AT(i, k, lda)];
}

__kernel void outer_product_add(__global real *c, const long c_off, const int ld,
                                const int n, __global const real *a, const long a_off,
                                const int lda, const int k, __global const real *b)
{
    const long id = get_global_id(0);
    if (id >= (long)n * (n + 1) / 2)
        return;
    const int2 ij = triangle_entry(id);
    c += c_off;
    TRI(c, ij.x, ij.y) += a[a_off + AT(ij.x, k, lda)] * b[ij.y];
}

__kernel void scale_columns(__global const real *a, const long a_off, const int lda,
                            const int m, const int n, __global const real *d2,
                            __global real *w)
{
    const int k = get_global_id(0), i = get_global_id(1);
    if (i < m && k < n)
        w[AT(i, k, n)] = d2[k] * a[a_off + AT(i, k, lda)];
}

/* Work-groups of T x R items (T = the local size along dimension 0), each a T x T tile
 * of A (rows i0.., columns k0..) read along A's rows into local memory (tile: T x (T + 1)
 * reals), scaled, and written along wt's rows; global size (ceil(n / T) T, ceil(m / T) R). */
__kernel void scale_transpose(__global const real *a, const long a_off, const int lda,
                              const int m, const int n, __global const real *d2,
                              __global real *wt, const long wt_off, const int ldw,
                              __local real *tile)
{
    const int t = get_local_size(0), rows = get_local_size(1);
    const int x = get_local_id(0), y = get_local_id(1);
    const int i0 = get_group_id(1) * t, k0 = get_group_id(0) * t;
    for (int p = y; p < t; p += rows)
        if (i0 + p < m && k0 + x < n)
            tile[p * (t + 1) + x] = d2[k0 + x] * a[a_off + AT(i0 + p, k0 + x, lda)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int p = y; p < t; p += rows)
        if (k0 + p < n && i0 + x < m)
            wt[wt_off + AT(k0 + p, i0 + x, ldw)] = tile[x * (t + 1) + p];
}

#if !PACKED
__kernel void symmetrize(__global real *c, const long c_off, const int ld, const int n)
{
    const int col = get_global_id(0), row = get_global_id(1);
    if (row >= n || col >= n)
        return;
#if LOWER
    if (col > row)
#else
    if (col < row)
#endif
        c[c_off + AT(row, col, ld)] = c[c_off + AT(col, row, ld)];
}
#endif

__kernel void count_invalid_weights(__global const real *d2, const long n,
                                    __global int *count)
{
    int bad = 0;
    for (long i = get_global_id(0); i < n; i += get_global_size(0))
        if (!(d2[i] >= ZERO))
            bad++;
    if (bad)
        atomic_add(count, bad);
}
