/* rfp.h -- LAPACK's rectangular full packed (RFP) layout, TRANSR = 'N'.
 *
 * A symmetric n x n matrix keeps one triangle in n(n+1)/2 reals: a
 * column-major LDA x NC Fortran array ARF (offset of ARF(p, q) = p + q*LDA),
 * identical to LAPACK's ?trttf output.  With e = 1 for even n, 0 for odd:
 *
 *   LDA = n + e,  NC = (n + 1) / 2   (integer division)
 *
 * UPLO = 'L', n1 = n - n/2 (odd) or n/2 (even); entry (r, c), r >= c:
 *   c <  n1:  ARF(r + e, c)                 T1 (lower) and S, as in full storage
 *   c >= n1:  ARF(c - n1, r - n1 + 1 - e)   T2 = L22^T, rotated into the top right
 *
 *      n = 6 (e = 1)          n = 5 (e = 0)
 *      33 43 53               00 33 43
 *      00 44 54               10 11 44
 *      10 11 55               20 21 22
 *      20 21 22               30 31 32
 *      30 31 32               40 41 42
 *      40 41 42
 *      50 51 52
 *
 * UPLO = 'U', n1 = n/2, n2 = n - n1; entry (r, c), r <= c:
 *   c >= n1:  ARF(r, c - n1)                S and T2 (upper), as in full storage
 *   c <  n1:  ARF(n2 + e + c, r)            T1 = U11^T, rotated into the bottom left
 *
 * These are the paper's "two triangles": every packed kernel maps a logical
 * (r, c) through one of two affine index maps, chosen by which side of n1
 * the column lies on.  Offsets are size_t: n(n+1)/2 exceeds 2^31 from
 * n = 65536 on (ARF(p, q) is AT(q, p, LDA), common.h).
 */
#ifndef OCLLA_RFP_H
#define OCLLA_RFP_H

#include "common.h"

/* Offset of the stored entry (r, c), r >= c, of a lower RFP matrix of order n. */
inline size_t rfp_lower(const int r, const int c, const int n)
{
    const int e = 1 - (n & 1);
    const int lda = n + e;
    const int n1 = e ? n / 2 : n - n / 2;
    return (c < n1) ? AT(c, r + e, lda)
                    : AT(r - n1 + 1 - e, c - n1, lda);
}

/* Offset of the stored entry (r, c), r <= c, of an upper RFP matrix of order n. */
inline size_t rfp_upper(const int r, const int c, const int n)
{
    const int e = 1 - (n & 1);
    const int lda = n + e;
    const int n1 = n / 2, n2 = n - n1;
    return (c >= n1) ? AT(c - n1, r, lda)
                     : AT(r, n2 + e + c, lda);
}

/* The entry (r, c) stored at ARF(p, q) of a lower RFP array. */
inline int2 rfp_entry_lower_at(const int p, const int q, const int n)
{
    const int e = 1 - (n & 1);
    const int n1 = e ? n / 2 : n - n / 2;
    return (p >= q + e) ? (int2)(p - e, q) : (int2)(q + n1 - 1 + e, p + n1);
}

/* The entry (r, c) stored at ARF(p, q) of an upper RFP array. */
inline int2 rfp_entry_upper_at(const int p, const int q, const int n)
{
    const int n1 = n / 2;
    return (p <= q + n1) ? (int2)(p, q + n1) : (int2)(q, p - n1 - 1);
}

/* The entry (r, c) stored at offset o of a lower RFP array (inverse of rfp_lower). */
inline int2 rfp_entry_lower(const size_t o, const int n)
{
    const int lda = n + 1 - (n & 1);
    return rfp_entry_lower_at((int)(o % lda), (int)(o / lda), n);
}

/* The entry (r, c) stored at offset o of an upper RFP array (inverse of rfp_upper). */
inline int2 rfp_entry_upper(const size_t o, const int n)
{
    const int lda = n + 1 - (n & 1);
    return rfp_entry_upper_at((int)(o % lda), (int)(o / lda), n);
}

#endif
