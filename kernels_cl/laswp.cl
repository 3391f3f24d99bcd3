/* laswp.cl -- apply row interchanges to a range of columns (LAPACK ?laswp).
 *
 * For i = k1, k1+1, ..., k2-1 (FORWARD = 1) or k2-1, ..., k1 (FORWARD = 0):
 *     swap rows i and piv[i] of columns [c0, c0 + ncols).
 * piv holds 0-based global row indices and lives on the device, so no host
 * round trip is needed between a pivot search and the swaps that follow it.
 * One work-item per column; consecutive items touch consecutive addresses.
 */
#include "common.h"

#ifndef FORWARD
#define FORWARD 1
#endif

__kernel void laswp(__global real *a, const int a_off, const int lda,
                    const int c0, const int ncols,
                    __global const int *piv, const int k1, const int k2)
{
    const int c = get_global_id(0);
    if (c >= ncols) return;
    a += a_off + c0 + c;
#if FORWARD
    for (int i = k1; i < k2; i++) {
#else
    for (int i = k2 - 1; i >= k1; i--) {
#endif
        const int p = piv[i];
        if (p != i) {
            const real t = a[i * lda];
            a[i * lda] = a[p * lda];
            a[p * lda] = t;
        }
    }
}
