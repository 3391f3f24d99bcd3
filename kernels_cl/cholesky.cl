/* cholesky.cl -- Cholesky factorization A = L L^T: per-pivot kernels and the
 * one-work-group diagonal-block kernel.
 *
 * Every kernel is written for the lower factor L and reaches its entries
 * through EL(i, j) = TRI(a, i, j), i >= j (triangle.h), so one source serves
 * row-major lower and upper (U = L^T) storage and both RFP layouts.  Only
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
 * The diagonal-block kernel potf2_block factors an nb x nb block in one
 * work-group of WG items (blocked potrf: the rest is TRSM and SYRK); it and
 * zero_other_triangle exist for PACKED = 0 only (blocked RFP works on the
 * packed array's sub-blocks, which are ordinary strided matrices).
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

#define EL(i, j) TRI(a, i, j)

__kernel void sqrt_pivot(__global real *a, const int off, const int ld, const int n,
                         const int k, __global int *info)
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

__kernel void normalize_column(__global real *a, const int off, const int ld,
                               const int n, const int k, __global const int *info)
{
    a += off;
    const int i = k + 1 + get_global_id(0);
    if (i >= n || *info)
        return;
    EL(i, k) = EL(i, k) / EL(k, k);
}

__kernel void outer_product(__global real *a, const int off, const int ld, const int n,
                            const int k, __global const int *info)
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

#if !PACKED
/* Factor the nb x nb diagonal block at a + off in one work-group.  The
 * trailing update walks the square t x t with the contiguous index fastest
 * (coalesced for either storage) and skips the other triangle. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void potf2_block(__global real *a, const int off, const int ld, const int nb,
                 const int base, __global int *info)
{
    a += off;
    const int lid = get_local_id(0);
    const int failed = *info;
    barrier(CLK_GLOBAL_MEM_FENCE);       /* all have read info before it may change */
    if (failed)
        return;
    for (int k = 0; k < nb; k++) {
        const real akk = EL(k, k);
        barrier(CLK_GLOBAL_MEM_FENCE);   /* all have read the pivot before it is written */
        if (!(akk > ZERO)) {
            if (lid == 0)
                *info = base + k + 1;
            return;
        }
        const real d = sqrt(akk);
        if (lid == 0)
            EL(k, k) = d;
        for (int i = k + 1 + lid; i < nb; i += WG)
            EL(i, k) = EL(i, k) / d;
        barrier(CLK_GLOBAL_MEM_FENCE);
        const int t = nb - k - 1;
        for (int idx = lid; idx < t * t; idx += WG) {
#if LOWER
            const int i = k + 1 + idx / t, j = k + 1 + idx % t;
#else
            const int j = k + 1 + idx / t, i = k + 1 + idx % t;
#endif
            if (j <= i)
                EL(i, j) -= EL(i, k) * EL(j, k);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

/* Zero the strictly upper (LOWER = 1) or strictly lower (LOWER = 0) part of
 * the n x n row-major matrix: the triangle a factor does not use. */
__kernel void zero_other_triangle(__global real *a, const int off, const int ld,
                                  const int n)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r >= n || c >= n)
        return;
#if LOWER
    if (c > r)
#else
    if (c < r)
#endif
        a[off + AT(r, c, ld)] = ZERO;
}
#endif
