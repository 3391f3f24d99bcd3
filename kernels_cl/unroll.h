/* unroll.h -- per-entry code for small arrays kept in registers.
 *
 * ALL64(F) expands to F(0) F(1) ... F(63).  A kernel that keeps an array of
 * at most 64 entries in registers writes its per-entry code through it, each
 * F guarded by the array's real length: the indices are literals from the
 * start, so the compiler never needs to place the array in memory (a loop,
 * even one it unrolls, can leave the array in stack memory on some
 * compilers).
 */
#ifndef OCLLA_UNROLL_H
#define OCLLA_UNROLL_H

#define A8(F, b) F(b) F(b + 1) F(b + 2) F(b + 3) F(b + 4) F(b + 5) F(b + 6) F(b + 7)
#define ALL64(F) A8(F, 0) A8(F, 8) A8(F, 16) A8(F, 24) A8(F, 32) A8(F, 40) A8(F, 48) \
                 A8(F, 56)

#endif
