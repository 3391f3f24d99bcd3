"""Rank-k Cholesky update in product form (``cholesky_update``'s route for small ranks).

With A = L·Lᵀ (L = Rᵀ for an upper factor) and W = L⁻¹·V (n × k),

    A + V·Vᵀ = L·(I + W·Wᵀ)·Lᵀ,   I + W·Wᵀ = L₁·L₁ᵀ,   L₁ = D + tril(W·Bᵀ, −1),

so the new factor is L̃ = L·L₁ (Gill, Golub, Murray and Saunders' product
form, method C1, taken k columns at once).  Row j's coefficients need the
Cholesky factor R_j of M_j = I + Σ_{l<j} w_l·w_lᵀ (k × k):

    z = R_j⁻ᵀ·w_j,   d_j = √(1 + zᵀz),   b_j = R_j⁻¹·z / d_j,
    L̃(i, j) = d_j·L(i, j) + (Σ_{j<l≤i} L(i, l)·w_l)ᵀ·b_j.

Nothing here is a chain over the rows (the rotation sweep of
:mod:`oclla.update` is one: row j's rotations wait for row j − 1's):

1. W by a triangular solve: the diagonal blocks of L inverted in one launch
   (``trtri_blocks``), then one launch per block of TB rows (``solve_step``) or,
   where a tuned entry chooses it (the ``update`` knob SOLVE), one launch for all
   blocks whose work-groups invert their own diagonal block, then wait for the
   blocks before theirs (``solve_chain``; W's entries are their own flags: filled
   with :data:`UNSTORED` before the launch; for an upper factor each group of 4
   columns of W a chain of its own, :func:`splits`);
2. the R_j by orthogonal updates: per chunk of CH rows the R of its rows, an
   inclusive prefix over the chunks in ⌈log_fan⌉ launches (the R of stacked R's
   is associative; each a QR by Householder reflections, one per column, in a
   work-group of k items: ``chunk_merge``), then per row its
   chunk's prefix updated by the rows before it (Givens rotations), and d_j, b_j
   (``row_coefficients``);
3. the row sweep in column chunks of CW (``apply_product``): each chunk from
   right to left, writing L̃ in place, starting from the sum of L(i, l)·w_l over
   the row's later chunks.  That sum is v_i less the blocks of L·W the solve has
   subtracted from row i by the chunk's end (v_i = Σ_{l≤i} L(i, l)·w_l), so the
   solve stores it on its way (CW a multiple of TB) and L is read once more, not
   twice (H200, n = 8192, k = 16: no chunk_sums and suffix_sums launches, 0.24 ms
   in float32 and 0.31 ms in float64).

Forming M_j itself (prefix sums of w·wᵀ) and solving with it is unstable:
where V is large against A the early M_j are I plus a large matrix of low
rank, and the I is lost to rounding (thousands of units of n‖Ã‖ε;
``benchmarks/update_product_form.py``).  The square-root form above stays
within a few units while max|W| is below about 10⁵; beyond, the row sums
cancel (one float64 case of max|W| = 5.8·10⁵ reached ~290 units), where the
rotation sweep stays backward stable.  So the blocked method's route here
(updates of rank <= the ``update`` knob PRODUCT) checks max|W| against
:data:`GUARD` before it touches the factor and leaves a larger W to the
rotations; ``method="product"`` does not.  Updates only: a downdate's M_j
would need hyperbolic steps.  Full storage only.  V goes KB columns per pass
(each pass a full product-form update of the factor the previous pass left).
A rank-1 update of an upper factor, where the solve is the chained one, takes
:func:`update_rank1` instead: one launch that sweeps each tile of L as soon as the
chain has solved the w of its columns (L read and written once), the guard checked
block by block (a block past it stops the launch there and leaves the trailing
factor's update to the rotations).

H200, n = 8192, k = 16 (benchmarks/results/nvidia-h200-2026-11-30-update-inverse.txt):
float64 1.29-1.30 ms a call (cuSOLVER's refactorization 15.5 ms), of which the solve
for W 0.56-0.58 ms (one launch with SOLVE = "chain", its work-groups inverting their
diagonal blocks), the prefix's merges 0.22 ms, row_coefficients 0.05, the row sweep
0.30 ms; float32 0.82 ms (solve 0.36, merges 0.14, sweep 0.15 ms).  A lower factor's
sweep and solve read rows across the work-items: float64 1.85 ms.  The chain's
time is its blocks one after another: before its column groups were chains of their
own, 5.8 us a block in float64 (timestamps per work-group,
benchmarks/results/nvidia-h200-2026-11-29-solve.txt: 0.9 us from a block's stores to
its reader seeing them, 2.1 us subtracting that block, 2.6 us the diagonal solve),
now 4.2 us.
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl

from . import _scratch as scratch, trace
from ._device import device_info
from ._knobs import pow2_at_least
from ._params import params
from ._programs import enqueue, get_kernel, int_arg, real_arg, round_up, wide_indices
from ._queue_state import state_of
from .blas import View, invert_blocks

#: Most columns of V per pass.  A pass of k columns runs the kernels built for the
#: next power of two >= k (their KB: KB x KB factors a column per work-item in
#: chunk_merge's registers, a row's in row_coefficients' local memory; the padding
#: columns zero), one program per class.
KB = 16
#: Rows of W per chunk of the k x k prefix: row_coefficients updates its chunk's
#: prefix by at most CH − 1 rows (serially, in one work-item); the prefix takes
#: ⌈log(n/CH)⌉ launches to the base :func:`fan`.  8 rather than 16 or 32 since its
#: merges run in registers (H200, n = 8192, k = 16: row_coefficients 0.10 → 0.05 ms
#: for one more launch of 0.01 ms; the update 1.61-1.64 → 1.49-1.50 ms in float32,
#: 2.28-2.31 → 2.05-2.22 ms in float64; 32: slower;
#: benchmarks/results/nvidia-h200-2026-11-28-prefix.txt).
CH = 8
#: Columns of L per chunk of the row sweep: an apply_product work-item sweeps at
#: most CW entries of its row; its work-group keeps CW rows of W and of B and their CW
#: d_j in local memory (2·CW·KB + CW reals: 16.5 KiB in float64).  A multiple of TB:
#: the solve stores the rows' sums over the later chunks where a chunk's blocks end.
#: 64 rather than 128 (H200, n = 8192, k = 16, float32: the sweep 0.26-0.28 → 0.21-0.22
#: ms).
CW = 64
#: Entries of its row of L an apply_product item loads before it stores any of them, so
#: that their round trips to memory overlap (one at a time, each load came after the
#: last entry's store through the same pointer and waited out its own).  H200, n = 8192:
#: the sweep 0.20-0.21 → 0.14-0.15 ms in float32, k = 16, and 0.17 → 0.145 ms in
#: float64, k = 1; float64, k = 16, bound elsewhere, level at 0.32-0.33 ms; 4 and 16 no
#: better.
SB = 8
#: Rows per block of the solve for W: n/TB launches of ``solve_step``, each
#: subtracting the last block's part from every later row and solving the next
#: block with its inverted diagonal block (trtri_blocks, one launch for all); four
#: columns of W per work-item (one item per row took 3.0 instead of 1.8 ms at
#: n = 8192, k = 16 on the H100: too few items to hide the loads), each row's TB
#: loads of L in flight together (16 at a time: 3.9-4.4 against 3.6 ms for the whole
#: update, benchmarks/results/nvidia-h100-2026-11-26-update-loads.txt).
TB = 64
#: ``solve_chain`` splits the chain of an upper factor's solve by W's column groups
#: (each block's groups of 4 columns in work-groups of their own, TB items: chains
#: whose steps are products of TB x TB by TB x 4, not TB x KB) while those work-groups
#: number at most SPLIT_PER_CU per compute unit.  H200, k = 16, the solve's kernel:
#: float64 n = 5000 / 8192 0.42 / 0.70 -> 0.30 / 0.61 ms, float32 0.25 / 0.42 ->
#: 0.18 / 0.32 ms; at n = 16384 (8 work-groups per compute unit) float64 1.81 ->
#: 2.15 ms; a lower factor's rows, read across the items, 1.3-2.7x slower split.
SPLIT_PER_CU = 4
#: Work-items per row of :func:`update_rank1`, each sweeping TB / RANK1_PARTS of a tile's
#: columns from the row's sum less the parts before its own (a build option of
#: update_product.cl's programs, the same for all of them).  H200, 1 / 2 / 4 with each
#: tile's loads at its start: float64 n = 16384 1.20 / 1.04 / 1.12 ms, 8192 0.58 / 0.48 /
#: 0.46, 2048 0.23 / 0.19 / 0.18; float32 16384 0.97 / 0.78 / 0.75 (benchmarks/results/
#: nvidia-h200-2026-11-30-rank1.txt).  With the next tile's loads issued after a tile's
#: wait, 4 against 2: float64 16384 level (1.00-1.04 / 0.99-1.01 ms), 8192 0.43-0.46 /
#: 0.44-0.47, 5000 0.33 / 0.37; float32 16384 0.69-0.79 / 0.72-0.78 (one item a row
#: spills: 3x slower; nvidia-h200-2026-11-30-rank1-3.txt).
RANK1_PARTS = 4
#: The route of the ``blocked`` method (the ``update`` knob PRODUCT) takes the product
#: form only while every entry of W stays below GUARD in magnitude; a pass past it is
#: left to the rotations (it is found before the factor is touched).  The square-root
#: form's backward error stayed within a few units of n‖Ã‖ε up to max|W| ~ 10⁵ and
#: reached ~290 at 5.8·10⁵ (benchmarks/update_product_form.py).
GUARD = 1e4
#: The bits of an entry of W that solve_chain has not stored yet, per itemsize (a
#: signalling NaN's, which no arithmetic returns, each of whose 32-bit words is the same
#: positive int; kernels_cl/update_product.cl UNSTORED).
UNSTORED = {8: np.array([0x7ff4a5a57ff4a5a5], np.uint64), 4: np.array([0x7fa5a5a5], np.uint32)}


def fan(kb: int, rows: int) -> int:
    """R's a level of the prefix merges for a pass of kb columns: a chunk's own and
    those of the ``rows`` (the ``update`` knob PREFIX_ROWS) below it, at least one."""
    return 1 + max(1, rows // kb)


def splits(queue, n: int, kb: int, lower: bool) -> bool:
    """Whether ``solve_chain`` takes W's column groups of 4 as chains of their own for
    a pass of kb columns (:data:`SPLIT_PER_CU`)."""
    groups = -(-n // TB) * (kb // min(kb, 4))
    return (not lower and kb > 4
            and groups <= SPLIT_PER_CU * device_info(queue).compute_units)


def later_rows(n: int) -> int:
    """Rows of the row sums the solve stores for the sweep: t(i, c) for each column
    chunk c (CW columns) and each row i below it (kernels_cl/update_product.cl
    LATER_ROW), about n²/(2·CW)."""
    chunks = -(-n // CW)
    return (chunks - 1) * n - CW * (chunks - 1) * chunks // 2


def local_bytes(k: int, itemsize: int) -> int:
    """Local memory of the largest of the kernels for an update of k columns: solve_step's
    TB·KB + TB² reals, solve_chain's TB·KB + TB·(TB + 1) or apply_product's
    2·CW·KB + CW (KB: the next power of two of its widest pass, min(k, :data:`KB`));
    row_coefficients takes at most as much (:func:`row_items`)."""
    kb = pow2_at_least(min(k, KB))
    return itemsize * max(TB * kb + TB * (TB + 1), 2 * CW * kb + CW)


def row_items(k: int, itemsize: int) -> int:
    """Work-items of a row_coefficients work-group for a pass of k columns (its RC):
    each keeps its row's R, KB x KB reals, in local memory, so as many as fit in the
    pass's :func:`local_bytes`, a power of two up to 64 (float64, KB = 16: 16)."""
    kb = pow2_at_least(min(k, KB))
    fit = local_bytes(k, itemsize) // (kb * kb * itemsize)
    return min(64, 1 << (fit.bit_length() - 1))


def update_product(queue, buf, off: int, ld: int, n: int, v, *, lower: bool, info,
                   region, guard: float | None = None) -> int:
    """Update the factor at ``buf[off:]`` (order n, leading dimension ``ld``, the
    triangle ``lower`` names) by the dense (n, k) device array ``v`` (not written) in
    product form, KB columns per pass; a zero diagonal entry sets ``info`` to its
    order.  With ``guard``, a pass whose W has an entry larger than it in magnitude
    leaves the factor as it was and ends the update (``apply_product`` reads the flag
    on the device, so the pass is enqueued whole and the host waits once, at its end).
    Returns the columns of ``v`` applied: all of them, or those before the stopped
    pass."""
    dtype = v.dtype
    item = dtype.itemsize
    k_all = v.shape[1]
    wg = params(queue, "wg1d", dtype)["WG"]
    blocks = -(-n // TB)
    nc, ncw = -(-n // CH), -(-n // CW)
    widest = pow2_at_least(min(k_all, KB))          # the widest pass's KB
    w = scratch.buffer(queue, n * widest * item)
    b = scratch.buffer(queue, n * widest * item)
    d = scratch.buffer(queue, n * item)
    prefix = [scratch.buffer(queue, nc * widest * widest * item) for _ in range(2)]
    sums = scratch.buffer(queue, later_rows(n) * widest * item)
    knobs = params(queue, "update", dtype)
    chain = knobs["SOLVE"] == "chain"
    solve = "solve_chain" if chain else "solve_step"
    inverses = None if chain else scratch.buffer(queue, blocks * TB * TB * item)
    state = scratch.buffer(queue, 4) if chain else None
    common = (int_arg(n),)
    large = scratch.zeroed_ints(queue)
    reg, extra = region(0, n, 0, n) if trace.recording() else ((0, 0, 0, 0), {})
    for c0 in range(0, k_all, KB):
        k = min(KB, k_all - c0)
        kb = pow2_at_least(k)
        rc = row_items(k, item)
        merged = fan(kb, knobs["PREFIX_ROWS"])
        kernels = {name: get_kernel(queue, "update_product.cl", name, dtype, KB=kb, CH=CH,
                                    CW=CW, SB=SB, TB=TB, RC=rc, FAN=merged,
                                    PARTS=RANK1_PARTS)
                   for name in (solve, "chunk_merge", "row_coefficients", "apply_product")}
        with trace.step("solve", reg, flops=float(k) * n * n,
                        nbytes=(n * n / 2 + 2 * n * k + n * ncw * k / 2) * item,
                        v_rows=(0, n), **extra):
            items = TB * (kb // min(kb, 4))          # 4 columns of W an item
            v_pass = (v.base_data, np.int64(v.offset // item + c0), int_arg(k_all), int_arg(k))
            if chain:
                split = splits(queue, n, kb, lower)
                cl.enqueue_fill_buffer(queue, w, UNSTORED[item], 0, n * kb * item)
                cl.enqueue_fill_buffer(queue, state, np.zeros(1, np.int32), 0, 4)
                enqueue(queue, kernels[solve], (blocks * items,), (TB if split else items,),
                        *common, buf, np.int64(off), int_arg(ld), int_arg(lower), *v_pass, w,
                        sums, state, int_arg(split))
            else:
                invert_blocks(queue, n, TB, View(buf, off, ld), inverses, dtype=dtype,
                              lower=lower, unit=False)
                for block in range(blocks):
                    enqueue(queue, kernels[solve],
                            (round_up(n - block * TB, TB) // TB * items,), (items,), *common,
                            int_arg(block), buf, np.int64(off), int_arg(ld), int_arg(lower),
                            inverses, *v_pass, w, sums)
        with trace.step("prefix", reg, flops=6.0 * k * k * (n + CH * n),
                        nbytes=(2 * n * k + 2 * nc * KB * KB) * item, **extra):
            enqueue(queue, kernels["chunk_merge"], (nc * kb,), (kb,), *common, int_arg(0), w,
                    prefix[0])
            src = 0
            step = 1
            while step < nc:
                enqueue(queue, kernels["chunk_merge"], (nc * kb,), (kb,), *common,
                        int_arg(step), prefix[src], prefix[1 - src])
                src = 1 - src
                step *= merged
            enqueue(queue, kernels["row_coefficients"], (round_up(n, rc),), (rc,),
                    *common, w, prefix[src], buf, np.int64(off), int_arg(ld),
                    int_arg(lower), b, d, info.data, real_arg(guard or np.inf, dtype),
                    large.data)
        with trace.step("apply", reg, flops=2.0 * k * n * n,
                        nbytes=(n * n + n * ncw * k / 2) * item, **extra):
            grid = (round_up(n, wg), ncw)
            enqueue(queue, kernels["apply_product"], grid, (wg, 1), *common, buf,
                    np.int64(off), int_arg(ld), int_arg(lower), w, b, d, sums, large.data)
        if guard is not None and large.get()[0]:
            return c0                  # apply_product left the factor as it was
    return k_all


def fuses_rank1(knobs: dict, k: int, lower: bool) -> bool:
    """Whether an update of rank k that the blocked method gives the product form takes
    :func:`update_rank1`, by the device's ``update`` ``knobs``: rank 1 of an upper factor
    where the solve for W is the chained one (SOLVE = "chain": a tuned entry that trusts
    work-groups of one launch to wait for each other)."""
    return k == 1 and not lower and knobs["SOLVE"] == "chain"


def update_rank1(queue, buf, off: int, ld: int, n: int, v, *, region, guard: float,
                 prefix_rows: int) -> int:
    """Update the upper factor R at ``buf[off:]`` (order n, leading dimension ``ld``,
    A = RᵀR) by the dense (n, 1) device array ``v`` in one launch that reads and writes
    the factor once (``update_rank1``, kernels_cl/update_product.cl): the chained
    solve for w = R⁻ᵀv, and each tile of a row block swept with the product form's
    coefficients as soon as the chain has published the w of its columns, x keeping
    the row's sum v_i − Σ_{l≤j} L(i, l)·w_l.  Where a block of w has an entry past
    ``guard`` in magnitude (or one that is not finite), every row stops before that
    block's first row K: rows and columns before K are final, and v's rows from K
    hold y with R̃₂₂ᵀR̃₂₂ = R₂₂ᵀR₂₂ + y·yᵀ, which the caller applies to the trailing
    factor R₂₂ (order n − K).  ``prefix_rows``: the device's ``update`` knob
    PREFIX_ROWS (the caller's lookup).  Returns K (n: the whole update done; the host
    waits for the launch to read it).

    H200, upper factors of rank-1 updates (benchmarks/results/
    nvidia-h200-2026-11-30-rank1.txt, calls interleaved in one process): with one item a
    row against the product form's four kernels, float64 n = 16384 1.34 -> 1.17 ms,
    n = 1000 0.34 -> 0.23 ms, 8192 level (0.57 / 0.58 ms), float32 16384 1.05 -> 0.91
    ms; with RANK1_PARTS = 2 against one item a row, float64 16384 1.20 -> 1.04 ms (43 %
    of the bandwidth roof), 8192 0.58 -> 0.48, float32 16384 0.97 -> 0.78.  With the
    next tile's entries loaded after a tile's wait and four items a row
    (nvidia-h200-2026-11-30-rank1-3.txt): float64 16384 1.02-1.07 -> 1.00-1.04 ms, 8192
    0.47-0.49 -> 0.43-0.46, float32 16384 0.77-0.88 -> 0.69-0.79; with a tile's entries
    addressed from one base and int offsets (nvidia-h200-2026-11-30-rank1-4.txt, section
    8): float64 16384 1.01 -> 0.97 ms, 8192 0.43 -> 0.41; with the diagonal tile's
    entries loaded after the chain's solve and coefficients
    (nvidia-h200-2026-12-01-rank1-5.txt): float64 16384 0.96 -> 0.95 ms, 8192 0.41 ->
    0.39, float32 16384 0.69 -> 0.66.  With one scratch buffer whose one fill also sets
    the launch's state, read back by one copy (nvidia-h200-2026-12-01-rank1-6.txt, the
    host's part): float64 16384 0.97 -> 0.94 ms, 8192 0.40 -> 0.37, float32 16384 0.69
    -> 0.65; with that scratch kept by the queue (:class:`_Rank1Scratch`), its numbers.
    Each work-group sweeps its tiles one after the other, about 3-4 us a tile at every
    order, and every group moves at that pace: with w, d and b stored beforehand (no
    wait) the launch is as slow, and the chain alone (its waits, solves and
    coefficients) takes 0.42 of float64 16384's 1.07 ms.  Clock stamps put a tile's time
    in its loads (a work-group's 16-64 KB), wherever they are issued: the wait finds the
    entries in registers now, and the tile's sums, which follow the next tile's loads,
    take their time instead.
    """
    item = v.dtype.itemsize
    kept = _Rank1Scratch.of(queue, n, item)
    blocks = -(-n // TB)
    items = TB * RANK1_PARTS
    reg, extra = region(0, n, 0, n) if trace.recording() else ((0, 0, 0, 0), {})
    with kept.lock:
        kept.begin()
        with trace.step("sweep", reg, flops=4.0 * n * n, nbytes=float(n) * (n + 1) * item,
                        **extra):
            launch = enqueue(queue, kept.kernel(v.dtype, prefix_rows), (blocks * items,),
                             (items,), int_arg(n), buf, np.int64(off), int_arg(ld), v.base_data,
                             np.int64(v.offset // item), kept.buffer, int_arg(kept.region),
                             int_arg(kept.cap), int_arg(kept.written[1 - kept.region]),
                             real_arg(guard, v.dtype))
        return kept.launched(launch, n)


class _Rank1Scratch:
    """:func:`update_rank1`'s scratch on one queue for one size of real, kept between
    calls: two regions of 3·cap reals (each launch's w, d and b in one, the launch
    storing :data:`UNSTORED` over what the launch before wrote in the other) and the
    state's two ints after them (UNSTORED's words between launches).  So a call fills
    nothing and allocates nothing but at an order larger than any before on the queue.
    A call holds :attr:`lock` from its launch to its read of the state, which waits for
    the launch (so launches never overlap, on an out-of-order queue too), and launches
    the scratch's own kernel object (:meth:`kernel`), which nothing else sets arguments
    of.  A call that does not reach its read (an exception, a KeyboardInterrupt) leaves
    the scratch unsettled, and the next call fills it whole first (:meth:`begin`).

    H200, the rank-1 route against one pool buffer and one fill a call, interleaved, the
    factor's buffer reused (benchmarks/results/nvidia-h200-2026-12-01-rank1-path.txt):
    float64 n = 16384 0.880 -> 0.852 ms (beyond the kernel 76 -> 54 us), 8192 0.361 ->
    0.336, 1000 0.131 -> 0.101; float32 16384 0.630 -> 0.586, 1000 0.131 -> 0.100."""

    _lock = threading.Lock()          # kept in the queue's state (its rank1, by itemsize)

    def __init__(self, queue, cap: int, item: int):
        self.queue, self.cap, self.item = queue, cap, item
        self.state_at = 6 * cap * item
        self.buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, self.state_at + 8)
        self.settled = False                     # whether the buffer is as recorded here
        self.region = 0                          # the next launch's
        self.written = [0, 0]                    # each region's leading reals not UNSTORED
        self.state = np.empty(2, np.int32)
        self.lock = threading.Lock()
        self._kernels: dict = {}

    @classmethod
    def of(cls, queue, n: int, item: int) -> _Rank1Scratch:
        """The queue's scratch for orders up to n (a new one past the largest so far)."""
        kept_by_item = state_of(queue).rank1
        kept = kept_by_item.get(item)
        if kept is None or kept.cap < n:
            with cls._lock:
                kept = kept_by_item.get(item)
                if kept is None or kept.cap < n:
                    kept = kept_by_item[item] = cls(queue, round_up(n, TB), item)
        return kept

    def begin(self) -> None:
        """Before a launch (with :attr:`lock` held): a scratch that a call left
        unsettled (an exception between its launch and its read of the state, a
        KeyboardInterrupt included) or a new one is filled whole with UNSTORED first."""
        if not self.settled:
            cl.enqueue_fill_buffer(self.queue, self.buffer, UNSTORED[self.item], 0,
                                   self.state_at + 8).wait()
            self.region, self.written = 0, [0, 0]
        self.settled = False                     # until launched() has read the state

    def kernel(self, dtype, prefix_rows: int) -> cl.Kernel:
        """This scratch's update_rank1 kernel object for ``dtype`` and the ``update`` knob
        PREFIX_ROWS (of the program that :func:`oclla._programs.get_kernel` builds; call
        with :attr:`lock` held)."""
        key = (prefix_rows, RANK1_PARTS, wide_indices())
        kernel = self._kernels.get(key)
        if kernel is None:
            built = get_kernel(self.queue, "update_product.cl", "update_rank1", dtype, KB=1,
                               CH=CH, CW=CW, SB=SB, TB=TB, RC=row_items(1, self.item),
                               FAN=fan(1, prefix_rows), PARTS=RANK1_PARTS)
            kernel = self._kernels[key] = cl.Kernel(built.program, "update_rank1")
        return kernel

    def launched(self, launch: cl.Event, n: int) -> int:
        """After the ``launch`` of order n on :attr:`region`, which stores UNSTORED over
        the other region's :attr:`written` reals (its ``clear``): the other region takes
        the next launch.  Reads K (the stop row, n if none) once the launch is done and
        puts the state back after a stop."""
        self.written[self.region], self.written[1 - self.region] = 3 * n, 0
        self.region = 1 - self.region
        cl.enqueue_copy(self.queue, self.state, self.buffer, src_offset=self.state_at,
                        wait_for=[launch])
        stop = int(self.state[1])
        if stop < n:
            cl.enqueue_fill_buffer(self.queue, self.buffer, UNSTORED[self.item].view(
                np.int32)[:1], self.state_at + 4, 4).wait()
        self.settled = True
        return min(n, stop)
