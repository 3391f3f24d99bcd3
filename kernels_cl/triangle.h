/* triangle.h -- one triangle of a symmetric matrix, in full or packed storage.
 *
 * TRI(x, i, j), i >= j, is entry (i, j) of the logical lower triangle of the
 * symmetric matrix of order n held in x (n, and ld for full storage, must be
 * in scope):
 *
 *   PACKED = 0, LOWER = 1:  row-major lower,  x[i*ld + j]
 *   PACKED = 0, LOWER = 0:  row-major upper,  x[j*ld + i]   (the transpose)
 *   PACKED = 1, LOWER = 1:  RFP 'L' of order n (rfp.h)
 *   PACKED = 1, LOWER = 0:  RFP 'U', entry (j, i)
 *
 * A kernel written for the lower triangle thus serves all four storages and
 * never touches the other triangle.
 *
 * triangle_entry(id): the (row, column) of entry number id of a triangle
 * enumerated row by row, id = r(r+1)/2 + c, 0 <= c <= r -- the index
 * arithmetic that lets an NDRange cover exactly a triangle's entries.
 */
#ifndef OCLLA_TRIANGLE_H
#define OCLLA_TRIANGLE_H

#include "rfp.h"

#ifndef LOWER
#define LOWER 1            /* 1: the stored triangle is lower, 0: upper */
#endif
#ifndef PACKED
#define PACKED 0           /* 1: RFP storage of order n (rfp.h) */
#endif

#if PACKED && LOWER
#define TRI(x, i, j) (x)[rfp_lower((i), (j), n)]
#elif PACKED
#define TRI(x, i, j) (x)[rfp_upper((j), (i), n)]
#elif LOWER
#define TRI(x, i, j) (x)[AT((i), (j), ld)]
#else
#define TRI(x, i, j) (x)[AT((j), (i), ld)]
#endif

/* The float square root is only a first guess; the integer loops make the
 * result exact for any id. */
inline int2 triangle_entry(const long id)
{
    long r = (long)((sqrt(8.0f * (float)id + 1.0f) - 1.0f) * 0.5f);
    while (r > 0 && r * (r + 1) / 2 > id)
        r--;
    while ((r + 1) * (r + 2) / 2 <= id)
        r++;
    return (int2)((int)r, (int)(id - r * (r + 1) / 2));
}

#endif
