/* trsm.cl -- the triangular-solve kernels: diagonal blocks solved in place
 * (trsm_block) or inverted (trtri_blocks) for a GEMM to apply; solves with few
 * right-hand sides (trsm_rows, trsm_chain, trsm_columns); and the copy the
 * BLAS-3 routines need (copy_block).
 *
 * trsm_block: solve with one triangular diagonal block (at most TRSM_NB x TRSM_NB).
 *   left = 1:  op(T) X = B,   B is nb x nrhs, one work-item per column of B
 *   left = 0:  X op(T) = B,   B is nrhs x nb, one work-item per row of B
 *   op(T) = T (trans = 0) or T^T (trans = 1); T lower (lower = 1) or upper;
 *   unit = 1 takes the diagonal of T as ones without reading it.
 *
 * Both sides are the same recurrence on the system S y = b, with S = op(T)
 * (left) or S = op(T)^T (right).  The block is staged in local memory as a
 * lower triangle: S itself where S is lower, else S with its rows and
 * columns reversed (J S J, J the reversal; y and b reversed alike), and ones
 * on the diagonal for unit = 1.  So every case is one forward substitution,
 * and the side, triangle, transpose and diagonal are kernel arguments: one
 * program per TRSM_NB and TRSM_REG (each program is a build of its own).
 * TRSM_REG = 1 keeps each work-item's y in registers (column-oriented,
 * written with literal indices), 0 in a private array (row-oriented loops).
 * X overwrites B.  Larger triangles are solved block by block from the host
 * with GEMM updates in between (oclla.blas.trsm).
 *
 * trtri_blocks: W_i = inverse of the i-th nb x nb diagonal block of the m x m
 * triangle T (the last one may be smaller; lower or upper, unit diagonal or
 * not, as trsm_block), one work-group of at least nb items per block, inverting the
 * block in local memory (an upper block through J T J, as above): with
 * DOUBLING by doubling (tri_inverse.h; TRSM_NB 8 times a power of two), else a
 * column at a time.  W is m x nb, block i in rows i*nb ..; entries outside the
 * triangle of each block are set to zero.
 *
 * trsm_rows: op(T) X = B (left side) for a few right-hand sides (W from
 * trtri_blocks, unless `substitute`): one launch per diagonal block in the
 * order of the solve (from the first where op(T) is lower, `forward`, else
 * from the last).  Launch `step` (the global offset along dimension 1: the
 * host loop only launches) takes the blocks still to solve, work-group (g, h)
 * the g-th of them (g = 0: the block this launch solves) in the h-th chunk of
 * ROWS_WIDTH columns, item (t, c) (TRSM_NB x ROWS_WIDTH items: all of them
 * stage the blocks of T, those of the columns in B solve) entry (t, c) of that
 * chunk of the block: each first subtracts op(T)'s entries in the block the
 * launch before solved times its X (read from B, where that launch stored it),
 * then work-group 0 applies the block's inverse (op(W_k): W_k^T where trans) or,
 * with `substitute`, solves with the block by substitution (no W: backward
 * stable for any conditioning of the block, as LAPACK's xTRSM), and every entry
 * goes back to B.  The blocks of T and W are staged in local memory by coalesced
 * loads first (read from memory in the products, each item's loads formed a
 * chain of TRSM_NB latencies).  One launch per block instead of a GEMM update
 * and an inverse's GEMM and copy: a solve with few right-hand sides is bound by
 * its launches.
 *
 * trsm_chain: trsm_rows' blocks in one launch, each work-group solving its
 * block once the blocks before it are stored (at the kernel); it stages its
 * diagonal block (or W_k) before it waits for any.
 *
 * trsm_columns: the same system in one launch, one work-item (work-group) per
 * column of B solving it through the whole triangle by substitution in a
 * contiguous copy of the column (`work`, unless B is one contiguous column), T
 * read by rows: as dot products of T's rows where op(T) = T, as updates of the
 * entries still to solve by T's rows where op(T) = T^T (a CPU's route: one
 * core streams the triangle once per column).
 *
 * A program holds one of the three few-column kernels, the device's (FEW):
 * each is compiled only where it is used.  trsm_block is a program of its own
 * (BLOCK_SOLVE = 1: the other kernels left out), built only where a solve takes
 * the substituting route: devices that invert the diagonal blocks (trsm INVERSE)
 * rarely launch it.
 *
 * copy_block: D (rows x cols) = S, both row-major views.
 */
#include "common.h"
#include "unroll.h"
#include "publish.h"

#ifndef TRSM_NB
#define TRSM_NB 32         /* largest diagonal block a work-group stages */
#endif
#ifndef BLOCK_SOLVE
#define BLOCK_SOLVE 0      /* 1: the program holds trsm_block alone, 0: every other kernel */
#endif
#ifndef DOUBLING
#define DOUBLING 0         /* 1: trtri_blocks inverts by doubling (tri_inverse.h) */
#endif
#if DOUBLING && !BLOCK_SOLVE  /* INV_DOUBLING where TRSM_NB is 8 times a power of two */
#define INV_N TRSM_NB
#include "tri_inverse.h"
#endif
#ifndef TRSM_REG
#define TRSM_REG 0         /* trsm_block: 1 = right-hand side in registers (TRSM_NB <= 64) */
#endif
#ifndef ROWS_WIDTH
#define ROWS_WIDTH 16      /* trsm_rows, trsm_chain: most columns of B per work-group */
#endif
#define SUBSTEP 4          /* trsm_rows, trsm_chain: rows of a diagonal block substituted
                              between two barriers (by one item per column); H200, lu_solve
                              of one right-hand side, n = 8192: float32 5.54 -> 4.63 ms
                              against 1 row (4.32 with 8, whose registers did not fit
                              trsm_rows' work-groups of 64 x 16 items; benchmarks/results/
                              nvidia-h200-2026-11-30-solves.txt) */
/* the one few-column kernel the program holds: the device's trsm FEW_ROUTE (the order
 * of oclla/_knobs.py FEW_ROUTES) */
#define FEW_ROWS 0         /* trsm_rows */
#define FEW_COLUMNS 1      /* trsm_columns */
#define FEW_CHAIN 2        /* trsm_chain */
#ifndef FEW
#define FEW FEW_ROWS
#endif

/* index i of the staged lower triangle of order n in the block's own order:
 * reversed (flip) where the block's S is upper */
#define ORDER(i, n) (flip ? (n) - 1 - (i) : (i))

/* Loads a work-item issues before it stores them to local memory (staging): each
 * load after a store would otherwise wait out a round trip to memory. */
#define STAGE_LOADS 4

/* Ts (lower, row stride TRSM_NB + 1) = the nb x nb block at T as a lower
 * triangle: entry (i, p) is S(ORDER(i, nb), ORDER(p, nb)), S(r, c) = T(r, c) where
 * `direct`, else T(c, r); ones on the diagonal where `unit`; work-item `first` of
 * `step` takes every step-th entry, STAGE_LOADS loads in flight before their stores. */
#define STAGE_LOWER(Ts, T, ldt, nb, direct, flip, unit, first, step)          \
    for (int base = (first); base < (nb) * (nb); base += STAGE_LOADS * (step)) { \
        real v_[STAGE_LOADS];                                                 \
        _Pragma("unroll") for (int e = 0; e < STAGE_LOADS; e++) {             \
            const int idx = base + e * (step), i = idx / (nb), p = idx % (nb); \
            const int r = ORDER(i, nb), c = ORDER(p, nb);                     \
            v_[e] = (idx >= (nb) * (nb) || ((unit) && i == p)) ? ONE          \
                  : T[(direct) ? AT(r, c, ldt) : AT(c, r, ldt)];              \
        }                                                                     \
        _Pragma("unroll") for (int e = 0; e < STAGE_LOADS; e++) {             \
            const int idx = base + e * (step);                                \
            if (idx < (nb) * (nb))                                            \
                Ts[idx / (nb)][idx % (nb)] = v_[e];                           \
        }                                                                     \
    }

#if BLOCK_SOLVE
__kernel void trsm_block(const int nb, const int nrhs,
                         __global const real *T, const long t_off, const int ldt,
                         __global real *B, const long b_off, const int ldb,
                         const int left, const int lower, const int trans, const int unit)
{
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    T += t_off;
    B += b_off;
    const int flip = ((lower != trans) == left) == 0;      /* S upper: reversed */
    STAGE_LOWER(Ts, T, ldt, nb, left != trans, flip, unit, get_local_id(0),
                get_local_size(0))
    barrier(CLK_LOCAL_MEM_FENCE);

    const int v = get_global_id(0);    /* which column (left) or row (right) of B */
    if (v >= nrhs) return;
#define Y(j) B[left ? AT(ORDER(j, nb), v, ldb) : AT(v, ORDER(j, nb), ldb)]
#if TRSM_REG
    /* y[] is written with literal indices only (unroll.h), so it stays in
     * registers; column-oriented substitution: y[p] is final, then
     * subtracted from the entries still to solve */
    real y[64];
#define LOAD_Y(j) if ((j) < TRSM_NB && (j) < nb) y[j] = Y(j);
    ALL64(LOAD_Y)
#define ELIM(p, i) if ((i) > (p) && (i) < TRSM_NB && (i) < nb) y[i] -= Ts[i][p] * y[p];
#define SOLVE(p) if ((p) < TRSM_NB && (p) < nb) { y[p] /= Ts[p][p]; EACH64(ELIM, p) }
    ALL64(SOLVE)
#define STORE_Y(j) if ((j) < TRSM_NB && (j) < nb) Y(j) = y[j];
    ALL64(STORE_Y)
#else
    real y[TRSM_NB];
    for (int j = 0; j < nb; j++)
        y[j] = Y(j);
    for (int i = 0; i < nb; i++) {
        real s = y[i];
        for (int p = 0; p < i; p++)
            s -= Ts[i][p] * y[p];
        y[i] = s / Ts[i][i];
    }
    for (int j = 0; j < nb; j++)
        Y(j) = y[j];
#endif
#undef Y
}
#else

__kernel void trtri_blocks(const int m, const int nb,
                           __global const real *T, const long t_off, const int ldt,
                           __global real *W, const int ldw, const int lower, const int unit)
{
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    const int k0 = get_group_id(0) * nb;
    const int kb = min(nb, m - k0);
    const int j = get_local_id(0);
    const int flip = !lower;
    T += t_off + AT(k0, k0, ldt);
    W += AT(k0, 0, ldw);
    STAGE_LOWER(Ts, T, ldt, kb, 1, flip, unit, j, get_local_size(0))
    barrier(CLK_LOCAL_MEM_FENCE);
#ifdef INV_DOUBLING
    /* the staged lower block S padded to TRSM_NB with the identity, zeros above its
     * diagonal (staged from the other triangle), then inverted by doubling (H200,
     * blocks of 64: 74-78 us for the launch by columns below, 15-26 us so) */
    for (int idx = j; idx < TRSM_NB * TRSM_NB; idx += get_local_size(0)) {
        const int r = idx / TRSM_NB, c = idx % TRSM_NB;
        if (c > r || r >= kb)
            Ts[r][c] = (r == c) ? ONE : ZERO;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    invert_lower(&Ts[0][0], j, get_local_size(0));
#else
    /* the staged lower block S inverted in place, its columns right to left (LAPACK's
     * trti2): once the rows and columns after c hold those of S^-1, entry (i, c) of
     * S^-1 below the diagonal is -(S^-1(i, c+1:i+1) S(c+1:i+1, c)) / S(c, c); item j
     * forms row j's, all of a column's read before any is written.  (Each item's
     * column by substitution through W in global memory, before: H200, blocks of 64,
     * 65-67 -> 52-54 us in float64, 56-57 -> 51 us in float32.) */
    if (j < kb)
        Ts[j][j] = ONE / Ts[j][j];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = kb - 2; c >= 0; c--) {
        real s0 = ZERO, s1 = ZERO;                 /* two chains of multiply-adds */
        if (j > c && j < kb) {
            int p = c + 1;
            for (; p < j; p += 2) {
                s0 += Ts[j][p] * Ts[p][c];
                s1 += Ts[j][p + 1] * Ts[p + 1][c];
            }
            if (p == j)
                s0 += Ts[j][p] * Ts[p][c];
        }
        const real s = s0 + s1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (j > c && j < kb)
            Ts[j][c] = -s * Ts[c][c];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif
    /* column j of S^-1, zeros above the diagonal; entry (i, j) of the staged order is
     * W(ORDER(i, kb), ORDER(j, kb)) */
    if (j < kb)
        for (int i = 0; i < kb; i++)
            W[AT(ORDER(i, kb), ORDER(j, kb), ldw)] = i >= j ? Ts[i][j] : ZERO;
}

#if FEW != FEW_COLUMNS
/* Ts[i][p] = op(S)(i, p) for i < rows, p < cols: S(i, p), or S(p, i) where `trans`
 * (S row-major at S, leading dimension lds); work-item `first` of `step` takes
 * every step-th entry, consecutive items consecutive entries of S (coalesced),
 * STAGE_LOADS loads in flight before their stores. */
void stage_op(__local real (*Ts)[TRSM_NB + 1], __global const real *S, const int lds,
              const int rows, const int cols, const int trans, const int first,
              const int step)
{
#define STAGE_INDEX(idx) const int i = trans ? (idx) % rows : (idx) / cols,            \
                               p = trans ? (idx) / rows : (idx) % cols;
    const int count = rows * cols;
    for (int base = first; base < count; base += STAGE_LOADS * step) {
        real v[STAGE_LOADS];
        #pragma unroll
        for (int e = 0; e < STAGE_LOADS; e++) {
            STAGE_INDEX(base + e * step)
            v[e] = base + e * step < count ? S[trans ? AT(p, i, lds) : AT(i, p, lds)] : ZERO;
        }
        #pragma unroll
        for (int e = 0; e < STAGE_LOADS; e++) {
            STAGE_INDEX(base + e * step)
            if (base + e * step < count)
                Ts[i][p] = v[e];
        }
    }
#undef STAGE_INDEX
}

/* x (this item's entry of B's block k, rows k0 .., columns c) less op(T)(k, j)
 * X_j (the block j solved before, j0 .. j0 + jrows), X_j's entries of the
 * item's column in xs[.][cs] and op(T)'s block in Ts. */
real subtract_staged(__local real (*Ts)[TRSM_NB + 1], __local real (*xs)[ROWS_WIDTH],
                     const int jrows, const int t, const int cs, real x)
{
    #pragma unroll 8
    for (int u = 0; u < jrows; u++)
        x -= Ts[t][u] * xs[u][cs];
    return x;
}

/* D = op(T_kk) (`substitute`) or op(W_k), W_k = T_kk^-1 from trtri_blocks (op: the
 * transpose where `trans`): the block solve_diagonal applies, staged by every item. */
void stage_diagonal(__local real (*D)[TRSM_NB + 1], __global const real *T, const int ldt,
                    __global const real *W, const int k0, const int rows, const int trans,
                    const int substitute, const int me, const int items)
{
    stage_op(D, substitute ? T + AT(k0, k0, ldt) : W + AT(k0, 0, TRSM_NB),
             substitute ? ldt : TRSM_NB, rows, rows, trans, me, items);
}

/* The diagonal block's solve: after every item of the work-group has read xs (a
 * barrier), with x the item's entry of B_k less the blocks before it and D staged
 * (stage_diagonal; visible after the barrier this function begins with), op(T_kk) X_k
 * = that by substitution with op(T_kk) (`substitute`; backward stable for any
 * conditioning of the block, as LAPACK's xTRSM), else X_k = op(W_k) times it.  Every
 * item calls it (it holds barriers); in a work-group that does not solve (solver = 0)
 * nothing changes.  Returns the item's entry of X_k (x where it does not solve). */
real solve_diagonal(__local real (*D)[TRSM_NB + 1], __local real (*xs)[ROWS_WIDTH],
                    const int rows, const int t, const int cs, const int live,
                    const int forward, const int unit, const int substitute,
                    const int solver, real x)
{
    xs[t][cs] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    /* substitution SUBSTEP rows at a time in the order of the solve (pos: the item's
     * row's place in it): the item of a step's first row solves the step's triangle
     * for its column in registers, then every later row subtracts the step's
     * products; each row's operations in the order of row-by-row substitution */
#define SOLVE_ROW(j) (forward ? (j) : rows - 1 - (j))
    const int pos = forward ? t : rows - 1 - t;
    for (int j0 = 0; j0 < (substitute ? rows : 0); j0 += SUBSTEP) {
        const int steps = min(SUBSTEP, rows - j0);
        if (solver && live && pos == j0) {
            real y[SUBSTEP];
            #pragma unroll
            for (int i = 0; i < SUBSTEP; i++)
                y[i] = i < steps ? xs[SOLVE_ROW(j0 + i)][cs] : ZERO;
            #pragma unroll
            for (int i = 0; i < SUBSTEP; i++) {
                const int q = SOLVE_ROW(j0 + i);
                if (i < steps && !unit)
                    y[i] /= D[q][q];
                #pragma unroll
                for (int l = i + 1; l < SUBSTEP; l++)
                    if (l < steps)
                        y[l] -= D[SOLVE_ROW(j0 + l)][q] * y[i];
            }
            #pragma unroll
            for (int i = 0; i < SUBSTEP; i++)
                if (i < steps)
                    xs[SOLVE_ROW(j0 + i)][cs] = y[i];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (solver && live && pos >= j0 + steps) {
            real v = xs[t][cs];
            #pragma unroll
            for (int i = 0; i < SUBSTEP; i++)
                if (i < steps)
                    v -= D[t][SOLVE_ROW(j0 + i)] * xs[SOLVE_ROW(j0 + i)][cs];
            xs[t][cs] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#undef SOLVE_ROW
    if (!solver || !live)
        return x;
    if (substitute)
        return xs[t][cs];
    real y = ZERO;
    #pragma unroll 8
    for (int u = 0; u < rows; u++)
        y += D[t][u] * xs[u][cs];
    return y;
}

/* The item's place: the blocks of TRSM_NB rows in m, the rows of block k (k0 ..,
 * `rows` of them; k may name `blocks`), its column cs in the work-group's chunk of
 * columns (c, declared before, in B), its index me of `items` (consecutive over t). */
#define FEW_PLACE(k)                                                           \
    const int blocks = (m + TRSM_NB - 1) / TRSM_NB;                             \
    const int t = get_local_id(0), cs = get_local_id(1);                        \
    const int me = cs * TRSM_NB + t, items = TRSM_NB * get_local_size(1);       \
    const int k0 = (k) * TRSM_NB, rows = min(TRSM_NB, m - k0);                 \
    const int r = k0 + t, live = t < rows && c < nrhs;

#if FEW == FEW_ROWS
__kernel void trsm_rows(const int m, const int nrhs, __global const real *T,
                        const long t_off, const int ldt, __global const real *W,
                        __global real *B, const long b_off, const int ldb, const int trans,
                        const int forward, const int unit, const int substitute)
{
    __local real xs[TRSM_NB][ROWS_WIDTH];  /* the last block's X, then this block's rows */
    __local real Ts[TRSM_NB][TRSM_NB + 1];  /* op(T)(k, kp), then op(T_kk) or op(W_k) */
    const int step = get_global_offset(1);         /* the launch's place in the solve */
    const int g = get_group_id(0);
    const int c = get_group_id(1) * get_local_size(1) + get_local_id(1);
    FEW_PLACE(forward ? step + g : blocks - 1 - step - g)
    const int kp = forward ? step - 1 : blocks - step;            /* solved last launch */
    const int kp0 = kp * TRSM_NB, prows = step > 0 ? min(TRSM_NB, m - kp0) : 0;
    T += t_off;
    B += b_off;
    real x = live ? B[AT(r, c, ldb)] : ZERO;
    if (t < prows && c < nrhs)
        xs[t][cs] = B[AT(kp0 + t, c, ldb)];
    /* op(T)(block k, block kp): T(k, kp), or T(kp, k) where trans (none at step 0) */
    if (prows > 0)
        stage_op(Ts, T + (trans ? AT(kp0, k0, ldt) : AT(k0, kp0, ldt)), ldt, rows, prows,
                 trans, me, items);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (live)
        x = subtract_staged(Ts, xs, prows, t, cs, x);
    barrier(CLK_LOCAL_MEM_FENCE);                   /* xs and Ts read by all */
    if (g == 0)
        stage_diagonal(Ts, T, ldt, W, k0, rows, trans, substitute, me, items);
    x = solve_diagonal(Ts, xs, rows, t, cs, live, forward, unit, substitute, g == 0, x);
    if (live)
        B[AT(r, c, ldb)] = x;
}

#endif

#if FEW == FEW_CHAIN
/* The same solve in one launch (FEW_ROUTE "chain"): work-group g takes the next
 * ticket from state[0]; ticket s is block k = s / chunks of the solve's order (the
 * s / chunks-th from the first where forward, else from the last) in column chunk
 * h = s % chunks.  For each block j before it in that order it stages op(T)(k, j),
 * waits until state[1 + j * chunks + h] says X_j of its chunk is stored, subtracts
 * op(T)(k, j) X_j; then solves its diagonal block, stores X_k (publish.h) and
 * sets its own flag.  A work-group waits only for blocks of earlier tickets,
 * whose work-groups were running when they took them; so it relies, as
 * kernels_cl/grid.h and update_product.cl's solve_chain do, on a running
 * work-group making progress and on volatile and atomic global accesses
 * reaching the memory all compute units share, which OpenCL does not promise:
 * only a tuned entry measured on the device chooses it.  state: 1 + blocks *
 * chunks ints, 0 before the launch. */
__kernel void trsm_chain(const int m, const int nrhs, __global const real *T,
                         const long t_off, const int ldt, __global const real *W,
                         volatile __global real *B, const long b_off, const int ldb,
                         const int trans, const int forward, const int unit,
                         const int substitute, volatile __global int *state)
{
    __local real xs[TRSM_NB][ROWS_WIDTH];
    __local real Ts[TRSM_NB][TRSM_NB + 1];
    __local real Ds[TRSM_NB][TRSM_NB + 1];
    __local int ticket;
    if (get_local_id(0) == 0 && get_local_id(1) == 0)
        ticket = atomic_inc(state);
    barrier(CLK_LOCAL_MEM_FENCE);
    const int chunks = get_num_groups(1), s = ticket / chunks, h = ticket % chunks;
    const int c = h * get_local_size(1) + get_local_id(1);
    FEW_PLACE(forward ? s : blocks - 1 - s)
    T += t_off;
    B += b_off;
    real x = live ? B[AT(r, c, ldb)] : ZERO;
    stage_diagonal(Ds, T, ldt, W, k0, rows, trans, substitute, me, items);  /* before any wait */
    for (int i = 0; i < s; i++) {
        const int j0 = (forward ? i : blocks - 1 - i) * TRSM_NB;
        const int jrows = min(TRSM_NB, m - j0);
        stage_op(Ts, T + (trans ? AT(j0, k0, ldt) : AT(k0, j0, ldt)), ldt, rows, jrows,
                 trans, me, items);
        if (me == 0) {
            while (state[1 + i * chunks + h] == 0)
                ;
            mem_fence(CLK_GLOBAL_MEM_FENCE);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (t < jrows && c < nrhs)
            xs[t][cs] = B[AT(j0 + t, c, ldb)];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (live)
            x = subtract_staged(Ts, xs, jrows, t, cs, x);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    x = solve_diagonal(Ds, xs, rows, t, cs, live, forward, unit, substitute, 1, x);
    if (live && PUBLISHED(publish(B + AT(r, c, ldb), x)))     /* publish.h */
        B[AT(r, c, ldb)] = x;
    barrier(CLK_GLOBAL_MEM_FENCE);                 /* the work-group's entries, then */
    if (me == 0) {
        mem_fence(CLK_GLOBAL_MEM_FENCE);           /* the signal */
        state[1 + s * chunks + h] = 1;
    }
}

#endif
#endif

#if FEW == FEW_COLUMNS
__kernel void trsm_columns(const int m, const int nrhs, __global const real *T,
                           const long t_off, const int ldt, __global real *B,
                           const long b_off, const int ldb, __global real *work,
                           const int trans, const int forward, const int unit)
{
    const int c = get_global_id(0);
    if (c >= nrhs)
        return;
    T += t_off;
    B += b_off + c;
    /* the solve walks a contiguous vector x (a loop which a CPU compiler vectorizes: the
     * eight sums are independent): B's column itself where it is one (ldb = 1), else
     * the item's m entries of work, copied there and back (where the items solved in
     * B's rows, neighbours on two cores wrote one cache line all through the solve) */
    __global real *x = ldb == 1 ? B : work + (size_t)c * m;
    if (ldb != 1)
        for (int p = 0; p < m; p++)
            x[p] = B[AT(p, 0, ldb)];
    for (int step = 0; step < m; step++) {
        const int i = forward ? step : m - 1 - step;
        __global const real *row = T + AT(i, 0, ldt);   /* T's row i */
        /* the entries of row i on the solved side: before i (forward) or after it */
        const int p0 = forward ? 0 : i + 1, p1 = forward ? i : m;
        real xi = x[i];
        if (!trans) {           /* x_i = (b_i - row_i . x) / T_ii, eight partial sums */
            real s[8] = {ZERO, ZERO, ZERO, ZERO, ZERO, ZERO, ZERO, ZERO};
            int p = p0;
            for (; p + 8 <= p1; p += 8) {
                #pragma unroll
                for (int u = 0; u < 8; u++)
                    s[u] += row[p + u] * x[p + u];
            }
            for (; p < p1; p++)
                s[0] += row[p] * x[p];
            xi -= ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
        }
        if (!unit)
            xi /= row[i];
        x[i] = xi;
        if (trans) {            /* b_p -= T(i, p) x_i for the entries still to solve */
            const int q0 = forward ? i + 1 : 0, q1 = forward ? m : i;
            for (int p = q0; p < q1; p++)
                x[p] -= row[p] * xi;
        }
    }
    if (ldb != 1)
        for (int p = 0; p < m; p++)
            B[AT(p, 0, ldb)] = x[p];
}
#endif

__kernel void copy_block(const int rows, const int cols,
                         __global const real *S, const long s_off, const int lds,
                         __global real *D, const long d_off, const int ldd)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (r < rows && c < cols)
        D[d_off + AT(r, c, ldd)] = S[s_off + AT(r, c, lds)];
}
#endif
