/* unroll.h -- per-entry code for small arrays kept in registers.
 *
 * ALL64(F) expands to F(0) F(1) ... F(63), EACH64(G, p) to G(p, 0) ...
 * G(p, 63).  A kernel that keeps an array of at most 64 entries in
 * registers writes its per-entry code through them, each F guarded by the
 * array's real length: the indices are literals from the start, so the
 * compiler never needs to place the array in memory (a loop, even one it
 * unrolls, can leave the array in stack memory on some compilers).
 */
#ifndef OCLLA_UNROLL_H
#define OCLLA_UNROLL_H

#define A8(F, b) F(b) F(b + 1) F(b + 2) F(b + 3) F(b + 4) F(b + 5) F(b + 6) F(b + 7)
#define ALL64(F) A8(F, 0) A8(F, 8) A8(F, 16) A8(F, 24) A8(F, 32) A8(F, 40) A8(F, 48) \
                 A8(F, 56)
#define E8(G, p, b) G(p, b) G(p, b + 1) G(p, b + 2) G(p, b + 3) G(p, b + 4) G(p, b + 5) \
                    G(p, b + 6) G(p, b + 7)
#define EACH64(G, p) E8(G, p, 0) E8(G, p, 8) E8(G, p, 16) E8(G, p, 24) E8(G, p, 32) \
                     E8(G, p, 40) E8(G, p, 48) E8(G, p, 56)

/* For a loop over steps whose body is a switch on the step's block of eight (an array
 * of N <= 64 entries, N a multiple of 8, in registers): LATER8(F, b, N) is F(j) for
 * the entries of the blocks after block b (b, bb literals: the tests fold away;
 * BLOCK8(bb, N) keeps the indices of a folded-away block inside the array). */
#define BLOCK8(bb, N) ((bb) < (N) ? (bb) : 0)
#define LATER1_(F, b, bb, N) if ((bb) > (b) && (bb) < (N)) { A8(F, BLOCK8(bb, N)) }
#define LATER8(F, b, N) LATER1_(F, b, 8, N) LATER1_(F, b, 16, N) LATER1_(F, b, 24, N) \
                        LATER1_(F, b, 32, N) LATER1_(F, b, 40, N) LATER1_(F, b, 48, N) \
                        LATER1_(F, b, 56, N)

#endif
