/* tagged.h -- values that work-groups of one launch hand each other without a
 * barrier: each 32 bits of a value travel in a 64-bit word beside a tag that
 * names the step that stored them.
 *
 * OpenCL 1.2 has no fence beyond the work-group: another compute unit may see
 * an item's plain stores in any order, and a flag raised after them before
 * them (publish.h).  A word is stored and loaded whole (an aligned 64-bit access
 * through a volatile pointer is one access on GPUs and on CPUs), so a reader
 * that finds the tag it waits for holds the bits stored with it, whatever
 * became visible before or after: no flag, no fence, no barrier across
 * work-groups.  A buffer of words starts zeroed and every step stores with a
 * tag the buffer has not seen (never 0), so a word an earlier step left never
 * passes.  A reader loads all the words of a step (a real's in one vector,
 * `words`), then tests their tags (CARRY) and loads them all again until every
 * one passes, so that the loads are in flight together: written as loads into
 * a private array followed by a wait on each element, the readers of
 * lu_grid.cl took wrong values on PoCL (84 of 300 launches of a 25 x 24 panel
 * on two work-groups; tests/test_lu_kernels.py repeats it).
 */
#ifndef OCLLA_TAGGED_H
#define OCLLA_TAGGED_H

/* The word of 32 bits b and tag t, its tag and its bits */
#define WORD(b, t) ((long)(((ulong)(uint)(t) << 32) | (uint)(b)))
#define WORD_TAG(w) ((int)((ulong)(w) >> 32))
#define WORD_BITS(w) ((int)(w))

#if PRECISION == 64
typedef long2 words;                                /* a real's words: low, high half */
#define TAGGED(v, t) ((long2)(WORD(as_int2(v).x, t), WORD(as_int2(v).y, t)))
#define CARRY(w, t) ((WORD_TAG((w).x) == (t)) & (WORD_TAG((w).y) == (t)))
#define VALUE(w) as_double((int2)(WORD_BITS((w).x), WORD_BITS((w).y)))
#else
typedef long words;
#define TAGGED(v, t) WORD(as_int(v), t)
#define CARRY(w, t) (WORD_TAG(w) == (t))
#define VALUE(w) as_float(WORD_BITS(w))
#endif

#endif
