/* interchange.h -- a chunk of LAPACK's row interchanges applied in registers
 * (laswp.cl).
 *
 * Interchange c (c < count) swaps rows lo + c and p[c] of the caller's
 * columns.  The caller loads the chunk's rows into u[c] (row lo + c) and the
 * rows outside [lo, lo + count) into far[c] (row p[c], IX_OUTSIDE) all at
 * once, calls interchange_chunk, and stores u, then far, in the order of
 * application (a row that several interchanges name ends with the value of
 * the last): one memory round trip for the chunk instead of a dependent one
 * per interchange.  Any p[c] is applied exactly as the sequence of swaps.
 *
 * IX_T: the entry type (real, or a vector of reals for several columns);
 * IX_N: the longest chunk (a constant: the loops unroll, the arrays stay in
 * registers); FORWARD: 1 for c = 0, 1, ..., count - 1, 0 for the reverse.
 */
#ifndef OCLLA_INTERCHANGE_H
#define OCLLA_INTERCHANGE_H

#ifndef FORWARD
#define FORWARD 1
#endif

/* the interchanges c in the order of application, and those after c */
#if FORWARD
#define IN_ORDER(c) for (int c = 0; c < IX_N; c++)
#define LATER(k, c) for (int k = (c) + 1; k < IX_N; k++)
#else
#define IN_ORDER(c) for (int c = IX_N - 1; c >= 0; c--)
#define LATER(k, c) for (int k = (c) - 1; k >= 0; k--)
#endif

/* row r is outside the chunk's rows [lo, lo + count): its entry is in far */
#define IX_OUTSIDE(r, lo, count) ((r) < (lo) || (r) >= (lo) + (count))

/* A row outside the chunk passes its new value on to the next interchange
 * that names it. */
void interchange_chunk(IX_T *u, IX_T *far, const int *p, const int count, const int lo)
{
    #pragma unroll
    IN_ORDER(c)
        if (c < count) {
            const int r = p[c];
            if (IX_OUTSIDE(r, lo, count)) {
                const IX_T x = far[c];
                far[c] = u[c];
                u[c] = x;
                #pragma unroll
                LATER(k, c)
                    if (k < count && p[k] == r)
                        far[k] = far[c];
            } else {
                #pragma unroll
                for (int k = 0; k < IX_N; k++)
                    if (k == r - lo && k != c) {
                        const IX_T x = u[k];
                        u[k] = u[c];
                        u[c] = x;
                    }
            }
        }
}

#endif
