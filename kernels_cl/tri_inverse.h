/* tri_inverse.h -- a lower triangle inverted in local memory by doubling.
 *
 * Needs INV_N, the order; defines INV_DOUBLING and invert_lower only where INV_N is
 * 8 times a power of two (the includer's test of its order).  invert_lower(t, lid, items):
 * t, INV_N x INV_N with row stride INV_N + 1 in local memory, holds a lower
 * triangle L (zeros above the diagonal; a block smaller than INV_N padded with
 * the identity); it becomes X = L^-1, lower, zeros above.  A work-group of
 * `items` >= INV_N work-items calls it (every item meets its barriers).
 *
 * The diagonal first becomes its reciprocals; the 8 x 8 diagonal blocks are
 * inverted an item a column, in registers; then for h = 8, 16, .., INV_N / 2
 * every pair of h x h blocks [X11 0; L21 X22] gets X21 = -X22 (L21 X11): the
 * product T = L21 X11 is written above the diagonal, where nothing is read
 * (transposed, T(i, j) at row o + j, column o + h + i: consecutive items on
 * different banks), then X21 in L21's place, then T's place cleared.  Three
 * barriers a level and three before, where a column at a time (LAPACK's trti2)
 * takes two a column: H200, order 64, one work-group's kernel 15-26 us in
 * float64 (256 or 64 items) against trti2's 52 us
 * (benchmarks/results/nvidia-h200-2026-11-30-update-inverse.txt).
 */
#ifndef OCLLA_TRI_INVERSE_H
#define OCLLA_TRI_INVERSE_H

#if INV_N % 8 == 0 && ((INV_N / 8) & (INV_N / 8 - 1)) == 0
#define INV_DOUBLING 1
#define INV_S (INV_N + 1)  /* row stride: a column's entries on different banks */
#define INV_ENTRIES 4      /* entries an item takes at once, their products interleaved */

/* One step of level h: first, T = L21 X11 into T's place; second, X21 = -X22 T into
 * L21's place.  INV_ENTRIES entries an item at a time, so that their loads of local
 * memory go out together. */
inline void inverse_pair_products(__local real *t, const int h, const int second,
                                  const int lid, const int items)
{
    const int count = INV_N * h / 2, rs = second ? 1 : INV_S;
    for (int e0 = lid; e0 < count; e0 += INV_ENTRIES * items) {
        int left[INV_ENTRIES], right[INV_ENTRIES], to[INV_ENTRIES];
        real s[INV_ENTRIES];
        #pragma unroll
        for (int u = 0; u < INV_ENTRIES; u++) {
            const int e = min(e0 + u * items, count - 1);   /* pair o / 2h, (i, j) */
            const int o = e / (h * h) * 2 * h, i = e % (h * h) / h, j = e % h;
            left[u] = (o + h + i) * INV_S + o + (second ? h : 0);   /* L21 or X22, row i */
            right[u] = second ? (o + j) * INV_S + o + h : o * INV_S + o + j;  /* X11, T */
            to[u] = second ? (o + h + i) * INV_S + o + j : (o + j) * INV_S + o + h + i;
            s[u] = ZERO;
        }
        #pragma unroll
        for (int l = 0; l < h; l++) {
            #pragma unroll
            for (int u = 0; u < INV_ENTRIES; u++)
                s[u] += t[left[u] + l] * t[right[u] + l * rs];
        }
        #pragma unroll
        for (int u = 0; u < INV_ENTRIES; u++)
            if (e0 + u * items < count)
                t[to[u]] = second ? -s[u] : s[u];
    }
}

inline void invert_lower(__local real *t, const int lid, const int items)
{
    if (lid < INV_N)
        t[lid * INV_S + lid] = ONE / t[lid * INV_S + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    const int g0 = lid / 8 * 8, c = lid % 8;      /* item lid < INV_N: column c of block g0 */
    real xr[8];
    if (lid < INV_N) {
        #pragma unroll
        for (int i = 0; i < 8; i++) {
            real s = (i == c) ? ONE : ZERO;
            #pragma unroll
            for (int l = 0; l < i; l++)
                s -= t[(g0 + i) * INV_S + g0 + l] * xr[l];
            xr[i] = (i < c) ? ZERO : s * t[(g0 + i) * INV_S + g0 + i];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < INV_N) {
        #pragma unroll
        for (int i = 0; i < 8; i++)
            if (i >= c)
                t[(g0 + i) * INV_S + g0 + c] = xr[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int h = 8; h < INV_N; h *= 2) {
        inverse_pair_products(t, h, 0, lid, items);
        barrier(CLK_LOCAL_MEM_FENCE);
        inverse_pair_products(t, h, 1, lid, items);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = lid; e < INV_N * h / 2; e += items) {   /* T's place: zeros again */
            const int o = e / (h * h) * 2 * h, i = e % (h * h) / h, j = e % h;
            t[(o + j) * INV_S + o + h + i] = ZERO;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

#endif
#endif
