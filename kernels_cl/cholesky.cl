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
 * The diagonal-block kernel potf2_block factors a block of order <= LEAF in
 * one work-group of WG items, in local memory (blocked potrf: larger
 * diagonal blocks are split recursively, the rest is TRSM and SYRK); it and
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
#ifndef LEAF
#define LEAF 64            /* potf2_block: largest block order (held in local memory) */
#endif
#define LS (LEAF + 1)      /* row stride of the local copy (odd: no bank conflicts) */

/* (i, j) of entry idx of an nb x nb square, walked with the stored
 * triangle's contiguous index fastest (coalesced for either storage). */
inline int2 square_entry(const int idx, const int nb)
{
#if LOWER
    return (int2)(idx / nb, idx % nb);
#else
    return (int2)(idx % nb, idx / nb);
#endif
}

/* Factor the nb x nb diagonal block at a + off (nb <= LEAF) in one
 * work-group: its lower triangle is copied into local memory, factored there
 * right-looking (sqrt, column scaling, trailing update of the triangle) and
 * copied back.  Global reads and writes walk the contiguous index fastest
 * for either storage.  The blocked potrf calls it on its diagonal leaves. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void potf2_block(__global real *a, const int off, const int ld, const int nb,
                 const int base, __global int *info)
{
    __local real t[LEAF * LS];
    a += off;
    const int lid = get_local_id(0);
    const int failed = *info;
    barrier(CLK_GLOBAL_MEM_FENCE);       /* all have read info before it may change */
    if (failed)
        return;
    for (int idx = lid; idx < nb * nb; idx += WG) {
        const int2 e = square_entry(idx, nb);
        if (e.y <= e.x)
            t[e.x * LS + e.y] = EL(e.x, e.y);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int bad = 0;
    for (int k = 0; k < nb; k++) {
        const real akk = t[k * LS + k];
        if (!(akk > ZERO)) {             /* the same value for all: a uniform exit */
            bad = k + 1;
            break;
        }
        const real d = sqrt(akk);
        barrier(CLK_LOCAL_MEM_FENCE);    /* all have read the pivot before it is written */
        if (lid == 0)
            t[k * LS + k] = d;
        for (int i = k + 1 + lid; i < nb; i += WG)
            t[i * LS + k] /= d;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int idx = (k + 1) * LEAF + lid; idx < nb * LEAF; idx += WG) {
            const int i = idx / LEAF, j = idx % LEAF;    /* by a constant: cheap */
            if (j > k && j <= i)
                t[i * LS + j] -= t[i * LS + k] * t[j * LS + k];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int idx = lid; idx < nb * nb; idx += WG) {
        const int2 e = square_entry(idx, nb);
        if (e.y <= e.x)
            EL(e.x, e.y) = t[e.x * LS + e.y];
    }
    if (bad && lid == 0)
        *info = base + bad;
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
