"""Rank-k update and downdate of a Cholesky factor: the factor of A ± V·Vᵀ from that of A.

Given R with A = Rᵀ·R (``lower=False``, scipy's default; ``lower=True``:
A = L·Lᵀ, L = Rᵀ) and V (n × k), :func:`cholesky_update` forms R̃ with
R̃ᵀ·R̃ = A + σ·V·Vᵀ in O(k·n²) operations instead of refactoring A ± V·Vᵀ
in O(n³), following Walder's gpucholmod (Algorithm 1, the hyperbolic
method).  Row i of R and column p of V are rotated together::

    Compute:  w = √(R(i,i)² + σ·V(i,p)²),  c = w/R(i,i),  s = V(i,p)/R(i,i),  R(i,i) = w
    Apply:    R(i,j) = (R(i,j) + σ·s·V(j,p))/c,  V(j,p) = c·V(j,p) − s·R(i,j)   (j > i)

an ordinary rotation for σ = +1 and a hyperbolic one for σ = −1, in the
"mixed" form in which the new R(i,j) forms the new V(j,p) (the paper's
Apply).  The k columns of V are rotated in one sweep over the rows; the
result equals k rank-1 modifications in turn.

Methods
-------
``method="pivot"`` (teaching)
    Two launches per row i, each a trace step: ``compute`` (one work-item:
    the k rotations of row i) and ``apply`` (one work-item per column j > i:
    R(i,j) and V(j,:) rotated by them).  The rows go one after the other and
    each launch rotates the rest of its row at once: Algorithm 1's
    CholeskyModifyB loop order, the one that gives a launch per row work for
    n − i work-items; each work-item itself follows CholeskyModifyA's
    pattern, V(j,:) read before and written after its loop over p.
``method="blocked"`` (default)
    The paper's panelling (its Section 4): per panel of PANEL rows (the
    ``update`` knobs, :func:`panel_rows`; docs/parameters.md) one work-group
    forms the panel's rotations and applies them inside the panel's diagonal
    triangle (``panel`` step), then each work-item of the next launch applies
    all the panel's rotations to its trailing columns: their PANEL entries of
    R and their rows of V held in registers, V KB columns at a time (the
    ``update`` knob; ``apply`` step, CholeskyModifyA's order).  A work-item takes as many
    columns as the device's native vector width (one on GPUs, whose
    neighbouring items then read neighbouring entries of R; a vector of 4-8
    on CPUs, which run a work-item's loops as written: 3-4× faster there than
    one column per item).  2·⌈n/PANEL⌉ launches.

    The panel's kernel is the knob LOCAL_PANEL.  CPUs (0): ``factor_panel``,
    the rows in global memory, a row's k rotations formed one after the other
    by one work-item (a chain of k square roots and divisions).  GPUs (1):
    ``factor_panel_local``, the panel's triangle in local memory, each
    work-item's row of V (KF columns at a time) in registers, and a row's
    rotations formed in parallel from the prefix sums

        u_p = 1 + σ·Σ_{q≤p} (V(i,q)/R(i,i))²,  r_p = |R(i,i)|·√u_p,
        c_p = r_p/r_{p−1},  s_p = V(i,p)/r_{p−1}

    (r_p: the diagonal after p + 1 rotations).  On the H100 at n = 8192
    (float32; benchmarks/results/nvidia-h100-2026-11-26-update.txt,
    ``benchmarks/update_variants.py``) the
    panels took 41 ms of a 52 ms rank-16 update with ``factor_panel`` and
    7.4 ms with ``factor_panel_local``; KF = 64 rather than 16 took the
    rank-64 panels from 17 to 12 ms.  Where a panel's time went (H100,
    n = 8192, k = 16, float32; ``benchmarks/update_probe.py``, the kernel with
    its row loop cut; benchmarks/results/nvidia-h100-2026-11-26-update-3.txt):
    the triangle's load into local memory, one entry at a time, was 2.4 of
    7.5 ms (now loaded by columns, the loads in flight: 5.2 ms); of the rest,
    load, store and launch 2.0 ms (16 µs per panel, 5.7 of them an empty
    kernel's), the rows' work 3.1 ms (~0.4 µs per row: the prefix sums, now by
    halving, two square roots, three divisions, k chained rotations), the
    barriers 0.75 ms.  A look-ahead of one panel on a second in-order queue
    gained nothing there (NVIDIA ran the two queues' kernels one after the
    other) and lost on PoCL: not kept.  Nor was one inside the launch (the
    next panel factored by the apply's first work-group after it applied the
    panel to that panel's columns; nvidia-h100-2026-11-26-update-4.txt): an
    apply launch lasts as long as one work-item's chain of PANEL x k rotations
    (~30 µs at k = 16), so the fused launch took the sum of the two kernels
    (8.4 against 4.6 + 3.9 ms at k = 16, float32), gained only at k = 1 (4.4
    against 5.5 ms), lost at k = 64, and doubled the programs' builds.
    Helpers that take a private array by pointer must be macros (TREE_SUM,
    REFLECTOR in update.cl): as functions NVIDIA's compiler kept the array in
    memory, 2-2.5x slower (V's entries go through v_entry/v_store, which
    take and return values).
    On PoCL ``factor_panel_local`` was no faster (2 cores, n = 2000), so
    CPUs keep ``factor_panel``.  apply_panel's work-groups are APPLY_WG
    items: 32 on GPUs, where the 256 of the one-dimensional kernels left
    most compute units idle (a panel has at most n columns; 3.8 against
    4.7 ms at n = 8192, k = 16).  Tried and dropped: one column per
    work-item with the panel's R streamed row by row instead of held in
    registers (twice as slow on the H100).  Panels of 64 rows on GPUs (32
    were 10-35 % slower: twice the launches), 32 on CPUs.  Where the time
    still goes (H100, float32, n = 8192, cuSOLVER's refactorization 14.2 ms
    in the same run; nvidia-h100-2026-11-26-update-4.txt): 5.4 ms at k = 1
    (2.6×), 8.6-8.8 ms at k = 16 (1.6-1.7×: panels 4.6, applies 3.9), 16.5 ms at
    k = 64 with reflectors (0.86×); 0.6 % of the FP32 peak and 1.4 % of the
    memory bandwidth at k = 16.  The bound is the chain, not a roof: n rows
    at ~0.4 µs of work each (3.1 ms) plus two launches per panel (5.7 µs
    each at least); 10× cuSOLVER (1.4 ms) would need at most one launch per
    panel and a row step about five times shorter (~150 cycles: one warp
    exchanging values in registers, which OpenCL 1.2 has no way to say).

    The rotation sweep was kept over the blocked formulation that
    accumulates a panel's rotations into a (PANEL + k)-square matrix and
    applies it to the trailing part with one GEMM (:func:`oclla.blas.gemm`):
    that costs 2·(PANEL + k)² flops per trailing column against the sweep's
    6·PANEL·k (1.5× more at PANEL = 32, k = 16; 11× at k = 1), and on PoCL
    (2 cores) ``gemm`` of that shape ran at 6-7 GFLOP/s against the sweep's
    10-14 GFLOP/s of CPU time (k = 16, 64), so it would be slower for every
    k; on the H100 the trailing part is not what binds (the panels are, and
    the GEMM form needs the same per-row panel factorization plus the
    accumulation of the transformation); it would also multiply by the
    accumulated hyperbolic transformation, whose norm grows near the
    positive definite boundary, giving up the mixed form's stability in
    downdates.

    Updates (sign +1) of rank REFLECT <= k <= KF (the ``update`` knobs;
    :func:`reflects`) use Householder reflectors instead: an update is the QR
    factorization of [R; Vᵀ], and row i's k rotations become one reflector
    of length 1 + k (``factor_panel_reflect``: a reduction of k values and a
    rank-1 update of the panel's remaining columns per row, one barrier per
    row).  ``apply_panel_reflect`` finds a trailing column's PANEL
    coefficients at once, z = R(P, j) + U·V(j, :)ᵀ, then d by forward
    substitution with the panel's coupling M(r, l) = τ_l·u_r·u_l (the compact
    WY form's T), and updates R(P, j) and V(j, :) with independent sums: no
    chain of dependent rotations per column, PANEL²/2 more flops.  On the H200
    at n = 8192 (benchmarks/results/nvidia-h200-2026-11-26-update-2.txt) the
    reflector panels were no faster than the prefix-sum rotations (7.9
    against 7.4 ms at k = 16 float32: the ~0.9 µs per row is neither the
    square roots nor the second barrier), the apply faster for large k (8.0
    against 12.8 ms at k = 64 float32, 8.4 against 12.0 ms at k = 16 float64)
    and slower at k = 1 (the substitution): GPUs use them from k = 64 in
    float32 and k = 16 in float64 (20.3 against 25.7 ms; 18.8 against
    24.9 ms), CPUs never.  With their dlarfg and sums as macros (H100,
    nvidia-h100-2026-11-26-update-3.txt) the reflector panels took 4.7 ms at
    k = 16 and 8.5 ms at k = 64 (float32, were 7.7 and 19.5), 6.0 ms at k = 16
    float64: totals 10.0, 16.9 and 15.5 ms at n = 8192 (cuSOLVER's
    refactorization 14.1, 14.3 and 15.4 ms).  Measured again with
    apply_panel's committed code (update-4): the rotations total 8.6-8.8 ms
    at k = 16 float32 against the reflectors' 9.6-10.0 ms, and 22.4-23.0
    against 16.5-16.8 ms at k = 64, so REFLECT stays 64 in float32.  The
    reflectors' program holds only their two kernels, and apply_panel_reflect's
    forward substitution is a loop over its steps (literal indices per block
    of eight) with passes of 4 columns of V: a 1.7-1.9 s build on the H100
    instead of 12.9-15.9 s, for updates 1-16 % slower (19.6 against 16.8 ms at
    n = 8192, k = 64, float32; still ahead of the rotations' 22.4-23.0;
    nvidia-h100-2026-11-26-update-build-4.txt).
    Downdates keep the rotations (a hyperbolic reflector is not orthogonal;
    the mixed rotations are the stable form).

    Updates (sign +1) of a full factor of rank k <= PRODUCT (the ``update`` knob; 128 on
    GPUs, 0 on CPUs; :func:`products`) take the product form of
    :mod:`oclla.update_product` instead, which has no chain over the rows (W = L⁻¹V,
    then the k x k factors of I + Σ w·wᵀ, then suffix sums along the rows; 16 columns of
    V a pass), unless an entry of a pass's W passes its GUARD, where it would lose
    accuracy: that is found before the pass touches the factor, and the rotations do the
    columns from that pass on. On the H100 (n = 8192;
    nvidia-h100-2026-11-26-update-product.txt) it took 2.1-2.3 ms at k = 1 against 5.5
    ms for the rotations (float32; 2.7-3.4 against 7.8 ms in float64), and at k = 16
    3.5-3.6 against 9.0 ms (float32; 4.1-4.3x cuSOLVER's refactorization) and 4.6-4.7
    against 15.4 ms (float64; nvidia-h100-2026-11-26-update-loads.txt); at k = 64 (four
    passes) it was slower then.  With the row sums taken from the solve, on an H200
    (n = 8192, k = 16; nvidia-h200-2026-11-28-sums.txt): 1.11-1.17 ms in float32 (12-12.7x
    cuSOLVER's refactorization), 1.70-1.77 ms in float64 (8.5-8.9x); with the solve's
    chain split by column groups (nvidia-h200-2026-11-30-chain.txt): 0.95-1.08 ms in
    float32 (13.6-15.3x), 1.45-1.53 ms in float64 (10.1-10.6x; 1.65 ms, 9.4x, on a
    slower machine).  Past 16 columns the passes now beat the rotations (H200,
    nvidia-h200-2026-11-30-flags.txt: float64 n = 8192, k = 32 / 64 / 128 2.7 / 5.2 /
    10.2 ms against 20.4 / 30.1 / 139.6 ms; float32 1.7 / 3.2 / 6.1 against 23.4 / 19.7
    / 79.5 ms), so PRODUCT is 128.

``method="product"``
    The product form for any rank (passes of 16 columns), without the guard.

Streamed (automatic)
    A host factor larger than one buffer of the device (or than its memory)
    stays on the host and goes through the device a panel at a time
    (:func:`oclla.update_stream.stream_update`, the paper's O(n) device memory):
    the rotations' panel kernels, bitwise their resident result, transfers
    overlapping the kernels (pinned staging, double buffering).  On the H100 an
    n = 65536 float64 factor (32 GiB on the host) took 2.85 s for k = 16,
    bound by the bus and the host's copies (12 GB/s each way;
    nvidia-h100-2026-11-26-update-4.txt).

Downdates (σ = −1) exist only while A − V·Vᵀ stays positive definite.
Compute then needs R(i,i)² − V(i,p)² > 0; where it is not (or R(i,i) = 0)
the modified matrix's leading minor of order i + 1 is not positive definite
and :class:`numpy.linalg.LinAlgError` names that order, as LAPACK's ``info``
would for ``potrf`` of A − V·Vᵀ.  Hyperbolic downdating is stable relative
to the input: R̃ᵀ·R̃ = A + ΔA − (V + ΔV)(V + ΔV)ᵀ with ‖ΔA‖ of order n‖A‖ε.
Where the downdate removes most of A (‖A‖ ≫ ‖A − V·Vᵀ‖, near the positive
definite boundary) the backward error in units of n‖Ã‖ε therefore grows like
‖A‖/‖Ã‖: forming A − V·Vᵀ in the working precision to refactor it cancels
the same digits, and the downdate loses a few times more
(``tests/test_update.py`` measures both).  ``factor_panel_local``'s prefix
sums 1 − Σ(V(i,q)/R(i,i))² cancel like the sequential radicands
(|r| − |v|)(|r| + |v|) do: its downdates near the boundary stay within a few
times the sequential rotations' error (measured in the same test file).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from numpy.linalg import LinAlgError

from . import trace, update_product as product_form
from ._device import driver_errors, resolve_queue, vector_width
from ._knobs import pow2_at_least
from ._params import params
from ._programs import (enqueue, flushed_marker, get_kernel, int_arg, launch_queue, round_up,
                        side_queue)
from ._validate import (as_matrix, as_rhs, check_method, factor_in_place, is_device_array,
                        read_status, status_flags, to_device)
from .blas import View, copy_block
from .cholesky import _full_region

#: The methods of :func:`cholesky_update`: "product" is
#: :func:`oclla.update_product.update_product` (updates of a full factor only).
METHODS = ("blocked", "pivot", "product")


def update_flops(n: int, k: int) -> float:
    """Flops of a rank-k modification of an order-n factor: 6 per Apply
    (k·n(n−1)/2 of them) and per Compute (k·n): 3k·n² + 3k·n."""
    return 3.0 * k * n * (n + 1)


def _failure(info: int, sign: int) -> LinAlgError:
    if sign < 0:
        return LinAlgError(f"downdated matrix is not positive definite: leading minor of "
                           f"order {info}")
    return LinAlgError(f"the factor has a zero diagonal entry at order {info}: it is not "
                       f"the Cholesky factor of a positive definite matrix")


def _group_width(queue, dtype, k: int) -> int:
    """apply_panel's KB for k columns: the next power of two >= k, at most the
    ``update`` knob KB (so that a rank-1 update does no work on padding)."""
    return min(pow2_at_least(k), params(queue, "update", dtype)["KB"])


def panel_rows(queue, dtype) -> int:
    """Rows per panel of the blocked and streamed methods on this device: the
    ``update`` family's PANEL (docs/parameters.md)."""
    return params(queue, "update", dtype)["PANEL"]


def _options(queue, dtype, k: int, lower: bool, packed: bool, reflect: bool = False) -> dict:
    """The defines of update.cl: one program per layout and group width serves both
    methods (each program is one build, several seconds on some CPU runtimes).
    apply_panel's VW columns per work-item: the device's native vector width
    (1 on GPUs: a column per item; a CPU gets explicit SIMD across columns).
    factor_panel_local's KF columns of V per pass (the next power of two >= k, at
    most the knob KF) and its work-group FWG: an item per panel column and per
    rotation of a row.  HOUSEHOLDER: the reflector kernels are in the program
    (``reflect``; a program of their own)."""
    knobs = params(queue, "update", dtype)
    rows = knobs["PANEL"]
    kf = min(pow2_at_least(k), knobs["KF"])
    return dict(LOWER=int(lower), PACKED=int(packed), WG=params(queue, "wg1d", dtype)["WG"],
                PANEL=rows, KB=_group_width(queue, dtype, k),
                VW=vector_width(queue, dtype.itemsize),
                KF=kf, FWG=pow2_at_least(max(rows, kf)), HOUSEHOLDER=int(reflect))


# ---- device algorithms: enqueue only, never wait -------------------------------------

def update_pivot(queue, buf, off: int, ld: int, n: int, v, rot, kp: int, *, lower: bool,
                 packed: bool, sign: int, info, region) -> None:
    """Per row: ``compute`` then ``apply`` (two launches, two trace steps)."""
    k = v.shape[1]
    dtype = v.dtype
    wg = params(queue, "wg1d", dtype)["WG"]
    opts = _options(queue, dtype, k, lower, packed)
    compute = get_kernel(queue, "update.cl", "compute_row", dtype, **opts)
    apply = get_kernel(queue, "update.cl", "apply_row", dtype, **opts)
    recording = trace.recording()
    none = ((0, 0, 0, 0), {})
    common = (buf, np.int64(off), int_arg(ld), int_arg(n))
    item = dtype.itemsize
    for i in range(n):
        reg, extra = region(i, i + 1, i, i + 1) if recording else none
        pivot = (reg[0], reg[2])
        with trace.step("compute", reg, pivot=pivot, flops=6.0 * k,
                        nbytes=(2 + 3 * k) * item, v_rows=(i, i + 1), **extra):
            enqueue(queue, compute, (1,), None, *common, int_arg(i), v.data, int_arg(k),
                    rot.data, int_arg(kp), int_arg(sign), info.data)
        t = n - i - 1
        if t == 0:
            break
        reg, extra = region(i + 1, n, i, i + 1) if recording else none
        with trace.step("apply", reg, pivot=pivot, flops=6.0 * k * t,
                        nbytes=(2 * t + 4 * k * t + 2 * k) * item, **extra):
            enqueue(queue, apply, (round_up(t, wg),), (wg,), *common, int_arg(i), v.data,
                    int_arg(k), rot.data, int_arg(kp), info.data)


class _Panels(NamedTuple):
    """The blocked method's kernels, looked up once per call."""
    panel: object              # factor_panel, factor_panel_local or factor_panel_reflect
    apply: object              # apply_panel or apply_panel_reflect
    pwg: int                   # work-group size of the panel's kernel
    wg: int                    # work-group size of apply_panel (APPLY_WG)
    vw: int                    # trailing columns per apply_panel work-item
    rows: int                  # rows per panel
    reflect: bool              # Householder reflectors (h array of :func:`rotations`)


def reflects(queue, dtype, k: int, sign: int) -> bool:
    """Whether the blocked method uses reflectors: an update (sign +1) of rank k from
    the knob REFLECT (0: never) to KF (a row of V in one work-item's registers)."""
    knobs = params(queue, "update", dtype)
    return sign > 0 and 0 < knobs["REFLECT"] <= k <= knobs["KF"]


def products(knobs: dict, k: int, sign: int, packed: bool) -> bool:
    """Whether the blocked method takes the product form, by the device's ``update``
    ``knobs``: an update (sign +1) of a full factor of rank k up to the knob PRODUCT
    (0: never)."""
    return sign > 0 and not packed and 0 < k <= knobs["PRODUCT"]


def _panel_kernels(queue, dtype, k: int, lower: bool, packed: bool, sign: int) -> _Panels:
    reflect = reflects(queue, dtype, k, sign)
    opts = _options(queue, dtype, k, lower, packed, reflect)
    knobs = params(queue, "update", dtype)
    local = knobs["LOCAL_PANEL"] or reflect
    panel = ("factor_panel_reflect" if reflect else
             "factor_panel_local" if local else "factor_panel")
    return _Panels(get_kernel(queue, "update.cl", panel, dtype, **opts),
                   get_kernel(queue, "update.cl",
                              "apply_panel_reflect" if reflect else "apply_panel", dtype,
                              **opts),
                   pow2_at_least(max(opts["PANEL"], opts["KF"])) if local else opts["WG"],
                   knobs["APPLY_WG"], opts["VW"],
                   opts["PANEL"], reflect)


def _panel_pass(queue, kernels: _Panels, buf, off: int, ld: int, n: int, i0: int, v, voff: int,
                rot, kp: int, *, sign: int, info, region, shift: int = 0) -> None:
    """One panel of the blocked method: rows i0 .. i0+nb-1 (nb = min(rows, n − i0)) of
    the order-n factor at ``buf[off:]``, ``ld``: factor_panel, then apply_panel on the
    columns after the panel; a ``panel`` and an ``apply`` trace step.  V's row 0 is
    element ``voff`` of ``v``; ``shift`` moves the recorded regions (a streamed panel
    is a matrix of its own, ``shift`` rows down the factor)."""
    args = (kernels, buf, off, ld, n, i0, v, voff, rot, kp)
    _panel_factor(queue, *args, sign=sign, info=info, region=region, shift=shift)
    _panel_apply(queue, *args, i0 + min(kernels.rows, n - i0), n, info=info, region=region,
                 shift=shift)


def _panel_args(kernels: _Panels, buf, off: int, ld: int, n: int, i0: int, v, voff: int, rot,
                kp: int) -> tuple:
    """The arguments factor_panel and apply_panel start with."""
    return (buf, np.int64(off), int_arg(ld), int_arg(n), int_arg(i0),
            int_arg(min(kernels.rows, n - i0)), v.data, np.int64(voff), int_arg(v.shape[1]),
            rot.data, int_arg(kp))


def _panel_factor(queue, kernels: _Panels, buf, off: int, ld: int, n: int, i0: int, v,
                  voff: int, rot, kp: int, *, sign: int, info, region, shift: int = 0) -> None:
    """factor_panel of the panel at row i0 (a ``panel`` trace step; see _panel_pass)."""
    k, item = v.shape[1], v.dtype.itemsize
    nb = min(kernels.rows, n - i0)
    g = i0 + shift
    tri = nb * (nb - 1) // 2
    reg, extra = region(g, g + nb, g, g + nb) if trace.recording() else ((0, 0, 0, 0), {})
    with trace.step("panel", reg, pivot=(reg[0], reg[2]), flops=6.0 * k * (tri + nb),
                    nbytes=(2 * (tri + nb) + 4 * k * nb) * item, v_rows=(g, g + nb), **extra):
        enqueue(queue, kernels.panel, (kernels.pwg,), (kernels.pwg,),
                *_panel_args(kernels, buf, off, ld, n, i0, v, voff, rot, kp), int_arg(sign),
                info.data)


def _panel_apply(queue, kernels: _Panels, buf, off: int, ld: int, n: int, i0: int, v,
                 voff: int, rot, kp: int, j1: int, j2: int, *, info, region,
                 shift: int = 0) -> None:
    """apply_panel of the panel at row i0 to columns j1 .. j2-1 (an ``apply`` trace step;
    nothing where j1 >= j2)."""
    t = j2 - j1
    if t <= 0:
        return
    k, item = v.shape[1], v.dtype.itemsize
    nb = min(kernels.rows, n - i0)
    g, gj = i0 + shift, j1 + shift
    reg, extra = region(gj, gj + t, g, g + nb) if trace.recording() else ((0, 0, 0, 0), {})
    with trace.step("apply", reg, flops=6.0 * k * nb * t,
                    nbytes=(2 * nb * t + 2 * k * t + 2 * k * nb) * item, **extra):
        enqueue(queue, kernels.apply, (round_up(-(-t // kernels.vw), kernels.wg),),
                (kernels.wg,), *_panel_args(kernels, buf, off, ld, n, i0, v, voff, rot, kp),
                info.data, int_arg(j1), int_arg(j2))


def update_blocked(queue, buf, off: int, ld: int, n: int, v, rot, kp: int, *, lower: bool,
                   packed: bool, sign: int, info, region) -> None:
    """Per panel of :func:`panel_rows` rows: ``panel`` then ``apply`` (two launches).

    With the ``update`` knob LOOKAHEAD, a second queue, and no recording (a recording
    shows the panels one after the other), a panel's apply is split: the next panel's
    columns on ``queue``, which then factors that panel, while the later columns are
    rotated on the second queue; the next panel's apply waits for them (it rotates the
    same rows of V, after this panel).  A factor_panel is one work-group: the rest of
    the device works meanwhile.  Each queue is flushed before the other waits on one of
    its events (:func:`oclla._programs.flushed_marker`)."""
    kernels = _panel_kernels(queue, v.dtype, v.shape[1], lower, packed, sign)
    rows = kernels.rows
    side = (side_queue(queue) if params(queue, "update", v.dtype)["LOOKAHEAD"]
            and n > 2 * rows and not trace.recording() else None)
    if side is None:
        for i0 in range(0, n, rows):
            _panel_pass(queue, kernels, buf, off, ld, n, i0, v, 0, rot, kp, sign=sign,
                        info=info, region=region)
        return
    later = None                     # the second queue's rotations of the last panel
    for i0 in range(0, n, rows):
        args = (kernels, buf, off, ld, n, i0, v, 0, rot, kp)
        _panel_factor(queue, *args, sign=sign, info=info, region=region)
        if later is not None:
            cl.enqueue_barrier(queue, wait_for=[later])
            later = None
        j1 = i0 + min(rows, n - i0)
        j2 = j1 + min(rows, n - j1)
        if j2 < n:
            cl.enqueue_barrier(side, wait_for=[flushed_marker(queue)])
            _panel_apply(side, *args, j2, n, info=info, region=region)
            later = flushed_marker(side)
        _panel_apply(queue, *args, j1, j2, info=info, region=region)
    if later is not None:
        cl.enqueue_barrier(queue, wait_for=[later])


def modify_device(queue, buf, off: int, ld: int, n: int, v: cl_array.Array, *, lower: bool,
                  sign: int, method: str, info, packed: bool = False, region=None) -> None:
    """Rotate the factor at ``buf[off:]`` (leading dimension ``ld``, or an RFP array of
    order n with ``packed``) by the dense (n, k) device array ``v``, which is consumed
    (overwritten).  A failing row sets ``info`` to its order (1-based).  ``region``
    maps a region of the logical lower factor to the recorded (region, extra info).
    Routes: :func:`oclla.update_product.update_rank1` (rank 1, upper, the chained
    solve; from the row where its guard stops it, the rotations on the trailing
    factor), :func:`oclla.update_product.update_product` (the product form, up to the
    ``update`` knob PRODUCT; a pass past its guard, the rotations), else the rotations."""
    region = region or _full_region(lower)
    stop = 0                           # rows and columns before it already final
    knobs = params(queue, "update", v.dtype)      # one lookup: on every update's path
    blocked_product = method == "blocked" and products(knobs, v.shape[1], sign, packed)
    if blocked_product and product_form.fuses_rank1(knobs, v.shape[1], lower):
        # one launch on the caller's queue, not a twin of launch_queue, whose two
        # cross-queue waits cost about 10 us of a 1 ms update (H200)
        stop = product_form.update_rank1(queue, buf, off, ld, n, v, guard=product_form.GUARD,
                                         region=region, prefix_rows=knobs["PREFIX_ROWS"])
        if stop == n:
            return                     # else the rotations on the trailing factor
        whole = region
        off, n, v = off + stop * (ld + 1), n - stop, v[stop:].copy()
        region = lambda r0, r1, c0, c1: whole(r0 + stop, r1 + stop, c0 + stop, c1 + stop)
    elif method == "product" or blocked_product:
        with launch_queue(queue) as loop_queue:
            done = product_form.update_product(
                loop_queue, buf, off, ld, n, v, lower=lower, info=info, region=region,
                guard=None if method == "product" else product_form.GUARD)
        if done == v.shape[1]:
            return                     # else max|W| passed GUARD: the rotations instead
        if done:                       # for the columns from the pass that stopped
            v = _columns_from(queue, v, done)
    rot, kp = rotations(queue, n, v.shape[1], v.dtype, panel_rows(queue, v.dtype),
                        reflect=method != "pivot" and reflects(queue, v.dtype, v.shape[1], sign))
    algorithm = update_pivot if method == "pivot" else update_blocked
    with launch_queue(queue) as loop_queue:
        algorithm(loop_queue, buf, off, ld, n, v, rot, kp, lower=lower, packed=packed,
                  sign=sign, info=info, region=region)
    if stop:                           # a failing row's order in the whole factor
        flags = info.get()
        if flags[0]:
            flags[0] += stop
            info.set(flags)


def _columns_from(queue, v: cl_array.Array, c0: int) -> cl_array.Array:
    """A dense device copy of the columns c0.. of the dense (n, k) device array ``v``."""
    n, k = v.shape
    out = cl_array.empty(queue, (n, k - c0), v.dtype)
    item = v.dtype.itemsize
    copy_block(queue, n, k - c0, View(v.base_data, v.offset // item + c0, k),
               View(out.base_data, out.offset // item, k - c0), v.dtype)
    return out


def rotations(queue, n: int, k: int, dtype, rows: int, *, reflect: bool = False) -> tuple:
    """update.cl's rotation array and its row length kp: (n + rows) x kp entries of
    (c, s, 1/c, sign·s), kp = k rounded up to apply_panel's group width, filled with
    identities (1, 0, 1, 0) by the device (``clEnqueueFillBuffer``); ``rows``: the
    panel's rows.  With ``reflect``, the reflectors' array h instead: (n + rows) rows
    of kp + 2 + rows reals (u, tau, flip, the panel's coupling M; update.cl), zeros."""
    width = _group_width(queue, dtype, k)
    kp = -(-k // width) * width
    fill = np.zeros(1, dtype) if reflect else np.array([1, 0, 1, 0], dtype)
    count = (n + rows) * ((kp + 2 + rows) if reflect else 4 * kp)
    size = count * fill.itemsize
    rot = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, size)
    cl.enqueue_fill_buffer(queue, rot, fill, 0, size)
    shape = (count,) if reflect else (count // 4, 4)
    return cl_array.Array(queue, shape, dtype, data=rot), kp


def checked_method(method: str, sign, *, packed: bool = False) -> int:
    """``sign`` as +1 or -1 once ``method`` is one of :data:`METHODS` that takes it
    (ValueError otherwise): "product" updates (sign +1) a factor in full storage."""
    check_method(method, METHODS)
    sign = check_sign(sign)
    if method == "product" and (sign < 0 or packed):
        raise ValueError('method "product" updates a factor in full storage: downdates and '
                         'packed factors take "blocked" or "pivot"')
    return sign


def check_sign(sign) -> int:
    """``sign`` as +1 or -1 (ValueError for anything else)."""
    if isinstance(sign, bool) or sign not in (1, -1):
        raise ValueError(f"sign must be +1 (update) or -1 (downdate), got {sign!r}")
    return int(sign)


def rotations_input(v, queue, n: int, dtype, *, check_finite: bool) -> cl_array.Array:
    """V validated as a right-hand side of n rows (the dtype rules of
    :func:`oclla.cho_solve`'s b), as a private dense (n, k) device array."""
    v_ = as_rhs(v, queue, n, dtype, name="v", check_finite=check_finite)
    work = v_.copy() if v_ is v and is_device_array(v) else to_device(queue, v_)
    return work.reshape(n, -1) if work.ndim == 1 else work


def modify(c, v, *, validate, order, sign, lower, overwrite_c: bool, check_finite: bool,
           method: str, queue, name: str, packed: bool = False, region=None,
           snapshot=None):
    """The prologue, run and epilogue that :func:`cholesky_update` and
    :func:`oclla.rfp.cholesky_update` share.

    ``validate(c, queue, check_finite=...)`` returns the factor operand (host, or a
    dense device array); ``order(validated)`` its order n.  V is validated against
    it (:func:`rotations_input`), the factor modified in a device work array
    (:func:`oclla._validate.factor_in_place`: a copy unless ``overwrite_c``) and
    handed back as ``c`` came.  ``snapshot(work)`` makes a recording's picture of the
    work array (default: ``work.get()``); ``region(n)``, if given, the region map of
    :func:`modify_device` for order n.
    """
    sign = checked_method(method, sign, packed=packed)
    lower = bool(lower)
    queue = resolve_queue(queue)
    operands = {}

    def validated(a, q, check_finite: bool):     # check_finite is False where deferred
        c_ = validate(a, q, check_finite=check_finite)
        operands["n"] = n = order(c_)
        operands["v"] = rotations_input(v, q, n, c_.dtype, check_finite=check_v)
        return c_

    def run(work, deferred: bool):
        n, v_ = operands["n"], operands["v"]
        flags = status_flags(queue, work, deferred)
        k = v_.shape[1]
        picture = (lambda: snapshot(work)) if snapshot else work.get
        with trace.run(name, method, queue, (n, k), work.dtype, picture, lower=lower,
                       sign=sign, rank=k, **(dict(packed=True) if packed else {})):
            if k:
                modify_device(queue, work.base_data, work.offset // work.dtype.itemsize, n,
                              n, v_, lower=lower, sign=sign, method=method, info=flags,
                              packed=packed, region=region and region(n))
            code = read_status(flags)
            if code:
                raise _failure(code, sign)

    check_v = check_finite
    result, _ = factor_in_place(c, queue, run, overwrite_a=overwrite_c,
                                check_finite=check_finite, validate=validated)
    return result


# ---- public API ---------------------------------------------------------------------------

@driver_errors
def cholesky_update(c, v, *, sign: int = 1, lower: bool = False, overwrite_c: bool = False,
                    check_finite: bool = True, method: str = "blocked", queue=None):
    """The Cholesky factor of A + sign·V·Vᵀ from the factor of A.

    Parameters
    ----------
    c : (n, n) array_like or pyopencl array (any view), float32/float64
        The factor of A as :func:`oclla.cholesky` or :func:`oclla.cho_factor`
        return it: upper R with A = Rᵀ·R (``lower=False``), or lower L with
        A = L·Lᵀ.  Only that triangle is read (as :func:`oclla.cho_solve`).
    v : (n,) or (n, k) array_like or pyopencl array (any view)
        The columns of V.  A host v is converted to c's dtype where that is
        exact (numpy's "safe" rule: bool, integers that fit, float32 into
        float64); otherwise a TypeError names the ``astype`` to use.  A device
        v must have c's dtype.  Never written.
    sign : +1 (update, A + V·Vᵀ, the default) or -1 (downdate, A − V·Vᵀ)
    lower : the layout of ``c``; the result keeps it
    overwrite_c : allow the result to be written into ``c`` (a permission, as
        in scipy): a C-contiguous device ``c`` is modified in place, a device
        view in its gathered copy, then scattered into the view's own
        entries; a writable C-ordered numpy ``c`` of the working dtype gets
        the result copied in.  A factor kept on the device and updated call
        after call is fastest so: no copy and no new buffer a call (on an
        H200 a rank-1 update of order 16384 runs about 5 % slower in a
        buffer made for the call)
    check_finite : reject NaN/Inf anywhere in ``c`` or ``v`` (ValueError)
    method : "blocked" (default: panels of rotations, or on GPUs the product
        form for updates of rank <= 128), "pivot" (per row, recorded step by
        step) or "product" (updates only: the product form of
        :mod:`oclla.update_product` at any rank, no chain of rotations over
        the rows; ValueError for ``sign=-1`` or a packed factor).  A host
        ``c`` larger than one device buffer (or than the device's memory) is
        streamed through the device panel by panel whatever the method
        (:func:`oclla.update_stream.stream_update`; device memory
        O(n·(k + PANEL)))
    queue : pyopencl.CommandQueue, optional
        The queue to run on, with profiling enabled (default: the queue of the
        default device, :func:`oclla.get_queue`)

    Returns
    -------
    (n, n) array: the modified factor in the triangle ``lower`` names; the
    other triangle is c's, unchanged (zero for :func:`oclla.cholesky`'s
    output).  A device array for a device ``c``.  For k = 0 (or n = 0) a copy
    of ``c`` (``c`` itself where ``overwrite_c`` allows).

    Raises
    ------
    numpy.linalg.LinAlgError
        "downdated matrix is not positive definite: leading minor of order j"
        when A − V·Vᵀ is not positive definite (j as ``potrf``'s info), or
        for a factor with a zero diagonal entry.  The caller's ``c`` is then
        unchanged, except a C-contiguous device ``c`` with
        ``overwrite_c=True``, which is modified in place and left partly
        rotated: the rows of R (columns of L) before the failing row
        (``method="pivot"``) or before the panel of :data:`PANEL` rows that
        holds it (``"blocked"``) are those of the downdated matrix's partial
        factor, the rest is neither A's factor nor any other; after the
        product form (a zero diagonal entry in an update) no row is; keep a
        copy to recover.
    ValueError, TypeError
        Shapes, dtypes, NaN/Inf, ``sign`` or ``method`` out of range.
    MemoryError
        A host ``c`` beyond the device (streamed panel by panel) whose updated
        factor, a new host array, would not fit the host's available memory;
        ``overwrite_c`` updates a writable C-contiguous ``c`` in place.
    """
    from .update_stream import stream_update, streams
    queue = resolve_queue(queue)
    if streams(c, queue):
        return stream_update(c, v, sign=checked_method(method, sign), lower=bool(lower),
                             check_finite=check_finite, queue=queue, overwrite_c=overwrite_c)
    return modify(c, v, validate=lambda a, q, check_finite: as_matrix(
        a, q, name="c", check_finite=check_finite), order=_order, sign=sign, lower=lower,
        overwrite_c=overwrite_c, check_finite=check_finite, method=method, queue=queue,
        name="cholesky_update")


def _order(c) -> int:
    return c.shape[0]

