/* lu_faithful.cl -- the per-pivot LU of the SYCL blog post, ported as it is.
 *
 * Host loop over pivots col = 0 .. n-2, no pivoting.  L (starts as I) and U
 * (starts as A) are separate n x n row-major buffers; after each step the
 * whole U is copied back into A.  The NDRange always covers all n x n
 * entries, so the work-items outside the shrinking active submatrix idle:
 * the two costs the post names, kept on purpose to be measured.
 */
#include "common.h"

__kernel void eliminate(__global const real *A, __global real *L, __global real *U,
                        const int n, const int col)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r >= n || c >= n)
        return;
    if (r > col && c >= col) {
        const real factor = A[AT(r, col, n)] / A[AT(col, col, n)];
        if (c == col)
            L[AT(r, col, n)] = factor;                    /* record the row operation */
        U[AT(r, c, n)] = A[AT(r, c, n)] - A[AT(col, c, n)] * factor;
    }
}

/* LU = strictly-lower(L) + upper(U): LAPACK's packed layout for the result. */
__kernel void combine(__global const real *L, __global const real *U, __global real *LU,
                      const int n)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < n && c < n)
        LU[AT(r, c, n)] = (r > c) ? L[AT(r, c, n)] : U[AT(r, c, n)];
}
