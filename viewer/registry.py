"""What the viewer knows about each algorithm: how to run it and how to draw its trace.

Two tables, one entry per algorithm:

* :data:`ALGORITHMS` lists what the Run dialog and the command line can run:
  the variants, the oclla call, the matrix family that suits it.  An entry
  whose oclla function does not exist in this build is listed but disabled
  (:meth:`Algorithm.missing` says why).
* :data:`DISPLAYS` says, per trace algorithm name, how to read a run's
  working array ("lu": L below the diagonal and U on and above it; "lower" /
  "upper": one triangle is the factor, the other unused; "full": no
  structure).  Packed (RFP) buffers are recognised from their shape, so a
  recording of an algorithm unknown here still replays with the defaults.

Adding an algorithm to the viewer is one :class:`Algorithm` entry (to run it)
and, for a structured result, one :class:`Display` entry; colours for new
phases come from :mod:`viewer.theme` (a default colour when none is listed).

Beyond the factorizations: the rank-k update and downdate of a Cholesky factor
(V, n × k, shown beside the factor as the operand it consumes), the triangular
and Cholesky inverses (which blocks each step reads, which it writes), the
log-determinant (the diagonal it reduces, and the value), and the hybrid
Cholesky whose diagonal blocks the host's LAPACK factors (a "host" lane on the
timeline).
"""

from __future__ import annotations

import importlib
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .packed import order_from_size


@dataclass(frozen=True)
class Variant:
    """One way to run an algorithm; ``kwargs`` go to the oclla call."""

    key: str
    label: str
    kwargs: dict = field(default_factory=dict)
    pivoting: tuple = ()        # allowed values, default first; () = not applicable
    blocked: bool = False       # takes a block size


@dataclass(frozen=True)
class Algorithm:
    """A runnable algorithm.

    ``call(a, variant, options, queue)`` runs it on ``a`` (the (n, n) matrix
    in the working dtype, or what ``prepare`` made of it) while the recorder
    is on; ``prepare(a, options, queue)``, if given, runs before recording
    (e.g. packing the input).  ``options`` holds ``pivoting``, ``block`` and
    ``seed`` (and ``rank``, ``fail`` for the entries that take them).  ``needs``
    lists the ``"module:function"`` names the calls use; :meth:`missing` checks
    them, so an entry for a function this build lacks is shown disabled instead
    of failing.  ``inputs(a, options, prepared)`` gives the operands shown beside
    the working array; ``finish(run, prepared, result)`` completes the recorded
    run with what the call returned (the log-determinant's value).  ``rank``:
    the run takes k (columns of V); ``failing``: the label of the choice that
    makes the run fail on purpose ("" where there is none).
    """

    key: str
    label: str
    variants: tuple
    call: Callable
    needs: tuple = ()
    prepare: Callable | None = None
    family: str = "random"      # default matrix family
    spd: bool = False           # needs a symmetric positive definite matrix
    inputs: Callable | None = None   # (a, options, prepared) -> {name: array}: operands
    finish: Callable | None = None   # (run, prepared, result) -> None
    rank: bool = False               # takes k, the columns of V
    failing: str = ""                # label of the option that makes it fail on purpose
    traced: str = ""                 # the trace's algorithm name, where not ``key``
    make_matrix: Callable | None = None   # (family, n, seed) -> its own matrix (sparse)
    families: dict = field(default_factory=dict)   # its own matrix families (key -> label)
    orderings: tuple = ()            # fill-reducing orderings it takes, default first

    @property
    def trace_name(self) -> str:
        """The algorithm name its runs carry in a recording (a :data:`DISPLAYS` key)."""
        return self.traced or self.key

    def variant(self, key: str) -> Variant:
        for v in self.variants:
            if v.key == key:
                return v
        raise KeyError(f"{self.key} has variants {', '.join(v.key for v in self.variants)}; "
                       f"got {key!r}")

    def missing(self) -> str | None:
        """None when runnable, else a sentence saying what this build lacks."""
        for name in self.needs:
            try:
                function(name)
            except (ImportError, AttributeError):
                return f"{name.replace(':', '.')} is not available in this build of oclla"
        return None


def function(name: str):
    """The function ``"package.module:attr"`` (ImportError/AttributeError if absent).

    Resolved through the module, not the package's exports, so a package
    attribute that shadows a module (``oclla.cholesky``) cannot confuse it.
    """
    module, attr = name.split(":")
    return getattr(importlib.import_module(module), attr)


def _kwargs(variant, options) -> dict:
    kwargs = dict(variant.kwargs)
    if variant.pivoting:
        kwargs["pivoting"] = options.get("pivoting") or variant.pivoting[0]
    if variant.blocked and options.get("block"):
        kwargs["block"] = int(options["block"])
    return kwargs


def _lu(a, variant, options, queue):
    return function(LU)(a, queue=queue, **_kwargs(variant, options))


def _cholesky(a, variant, options, queue):
    return function(CHOLESKY)(a, lower=True, queue=queue, **_kwargs(variant, options))


def _rfp_pack(a, options, queue):
    return function(RFP_PACK)(a, lower=True, queue=queue)


def _rfp_cholesky(arf, variant, options, queue):
    return function(RFP_CHOLESKY)(arf, order_from_size(arf.size), lower=True, queue=queue,
                                  **_kwargs(variant, options))


def _ad2at_weights(a, options) -> np.ndarray:
    """The seeded weights d2 ∈ [0.5, 2) of an AD²Aᵀ run, one per column of A."""
    return np.random.default_rng(options.get("seed", 0)).uniform(0.5, 2.0, a.shape[1]) \
        .astype(a.dtype)


def _ad2at(a, variant, options, queue):
    """C = A·D²·Aᵀ for the chosen matrix A and seeded weights d2 ∈ [0.5, 2)."""
    return function(AD2AT)(a, _ad2at_weights(a, options), lower=True, queue=queue,
                           **_kwargs(variant, options))


def _ad2at_inputs(a, options, prepared=None) -> dict:
    """A and the diagonal of D², shown beside C (trace steps name them in ``info["matrix"]``)."""
    return {"A": a, "d2": _ad2at_weights(a, options).reshape(-1, 1)}


# ---- update and downdate ----

DEFAULT_RANK = 2
"""k, the columns of V, when the options do not say."""

V_NORM = 0.6
"""‖L⁻¹V‖₂ of a generated V: A − V·Vᵀ = L·(I − WWᵀ)·Lᵀ stays positive definite."""

FAIL_ROW_NORM = 1.25
"""The row of W that makes a downdate fail: ‖W[:j]‖₂ ≥ 1.25 > 1 at order j."""


def fail_order(n: int) -> int:
    """The order j at which a downdate asked to fail loses positive definiteness."""
    return n // 2 + 1


def update_operand(factor: np.ndarray, options) -> np.ndarray:
    """V = L·W (n × k, k = ``options["rank"]``), W seeded with ‖W‖₂ = :data:`V_NORM`.

    A ± V·Vᵀ = L·(I ± W·Wᵀ)·Lᵀ: positive definite for both signs.  With
    ``options["fail"]`` row j − 1 of W (j = :func:`fail_order`) is replaced by
    :data:`FAIL_ROW_NORM`·e₁, so the leading minor of order j of A − V·Vᵀ, and
    no smaller one, is indefinite (the leading j × j block of I − W·Wᵀ is).
    """
    n = factor.shape[0]
    k = max(int(options.get("rank") or DEFAULT_RANK), 1)
    g = np.random.default_rng(options.get("seed", 0)).standard_normal((n, k))
    norm = np.linalg.norm(g, 2) if n else 1.0
    w = g * (V_NORM / norm) if norm > 0 else g
    if options.get("fail") and n:
        j = fail_order(n)
        w[j - 1] = 0.0
        w[j - 1, 0] = FAIL_ROW_NORM
    low = np.tril(np.asarray(factor, dtype=np.float64))
    return np.ascontiguousarray(low @ w, dtype=factor.dtype)


def _factor_and_v(a, options, queue):
    """(L, V): the lower Cholesky factor of ``a`` (on the device, unrecorded) and V."""
    factor = np.asarray(function(CHOLESKY)(a, lower=True, queue=queue))
    return factor, update_operand(factor, options)


def _modify(sign: int):
    def call(prepared, variant, options, queue):
        factor, v = prepared
        return function(UPDATE)(factor, v, sign=sign, lower=True, queue=queue,
                                **_kwargs(variant, options))
    return call


def _v_input(a, options, prepared=None) -> dict:
    return {} if prepared is None else {"V": prepared[1]}


# ---- inverse and log-determinant ----

def _lower_factor(a, options, queue):
    return np.asarray(function(CHOLESKY)(a, lower=True, queue=queue))


@contextmanager
def _diagonal_block(options):
    """The inverse's diagonal block order (the device's TRSM_NB) set to ``options["block"]``
    for the call, so a small matrix shows several block steps."""
    block = options.get("block")
    if not block:
        yield
        return
    from oclla import _params
    _params.override("trsm", {"TRSM_NB": int(block)})
    try:
        yield
    finally:
        _params.override("trsm", None)


def _inverse(name: str, product: bool):
    def call(factor, variant, options, queue):
        kwargs = {k: v for k, v in _kwargs(variant, options).items() if k != "block"}
        with _diagonal_block(options):
            if product:
                return function(name)((factor, True), queue=queue, **kwargs)
            return function(name)(factor, lower=True, queue=queue, **kwargs)
    return call


def _logdet(factor, variant, options, queue):
    return function(LOGDET)((factor, True), queue=queue)


def _logdet_finish(run, factor, value) -> None:
    """The reduction keeps no snapshot (it writes nothing): the factor it reads is the
    run's matrix, and its value a metric."""
    if run.initial is None:
        run.initial = np.array(factor, copy=True)
    run.metrics["logdet"] = float(value)


def _hybrid(a, variant, options, queue):
    kwargs = {"schedule": variant.kwargs["schedule"]}
    if options.get("block"):
        kwargs["block"] = int(options["block"])
    return function(HYBRID)(a, lower=True, queue=queue, **kwargs)


# ---- sparse Cholesky ----

SPARSE_FAMILIES = {"laplace2d": "2-D Laplacian (5-point), grid side √n",
                   "laplace3d": "3-D Laplacian (7-point), grid side ∛n",
                   "sparse_spd": "random sparse SPD (about 5 entries a row)"}
SPARSE_ORDERINGS = ("metis", "amd", "rcm", "natural")


def sparse_matrix(family: str, n: int, seed: int = 0):
    """The scipy.sparse matrix of a sparse family of order about n (a grid's side is the
    rounded root of n, so the order is the nearest square or cube)."""
    from oclla.sparse import gallery
    if family == "laplace2d":
        return gallery.laplacian_2d(max(int(round(n ** 0.5)), 1))
    if family == "laplace3d":
        return gallery.laplacian_3d(max(int(round(n ** (1 / 3))), 1))
    if family == "sparse_spd":
        return gallery.random_spd(n, density=min(1.0, 5.0 / max(n, 1)), seed=seed)
    raise ValueError(f"sparse matrix family must be one of {', '.join(SPARSE_FAMILIES)}, "
                     f"got {family!r}")


def _sparse(a, variant, options, queue):
    """oclla.sparse.cholesky with the chosen ordering and, where given, the flop count
    from which a supernode takes the BLAS-3 route (``options["large"]``)."""
    large = options.get("large")
    return function(SPARSE)(a, ordering=options.get("ordering") or SPARSE_ORDERINGS[0],
                            queue=queue, large=float(large) if large else None,
                            **_kwargs(variant, options))


def _sparse_finish(run, a, factor) -> None:
    """The patterns the sparse view draws (:mod:`viewer.sparse`) and the backward error
    ‖PAPᵀ − LLᵀ‖∞/(n‖A‖∞ε), on the host in float64."""
    import scipy.sparse as sp

    from . import sparse
    low = sp.tril(sp.csc_array(a)).tocsc()
    run.metrics["sparse"] = sparse.structure_metrics(low, factor)
    full = sp.csc_array(a, dtype=np.float64)
    p = factor.P()
    l_factor = sp.csc_array(factor.L(), dtype=np.float64)
    resid = full[p][:, p] - l_factor @ l_factor.T
    norm = lambda m: float(abs(m).sum(axis=1).max()) if m.nnz else 0.0   # noqa: E731
    denom = full.shape[0] * norm(full) * float(np.finfo(factor.dtype).eps)
    run.metrics["backward_error"] = norm(resid) / denom if denom else 0.0


# ---- tiles (the tile-task view, :mod:`viewer.tiles`) ----

def tile_of(n: int, options) -> int:
    """The tile order: ``options["block"]``, else about a quarter of n (at least 8), so a
    run shows a few tiles a side."""
    return int(options.get("block") or max(8, -(-n // 4)))


_QUEUE_PAIRS: dict = {}


def device_queues(queue) -> list:
    """Two queues of one context for the multi-device runs: two devices of ``queue``'s
    platform of its type where there are two, else two sub-devices of its device (PoCL's
    CPU), else two queues on it; made once per device (each context builds its kernels)."""
    import pyopencl as cl
    from oclla import multi_device
    key = queue.device.int_ptr
    if key not in _QUEUE_PAIRS:
        device = queue.device
        same = [d for d in device.platform.get_devices(device.type)]
        if len(same) < 2:
            try:
                same = device.create_sub_devices(
                    [cl.device_partition_property.EQUALLY, 1])[:2]
            except (cl.Error, cl.RuntimeError, cl.LogicError):
                same = []
        _QUEUE_PAIRS[key] = multi_device.context_queues(
            same[:2] if len(same) >= 2 else [device, device])
    return _QUEUE_PAIRS[key]


def _tiled(a, variant, options, queue):
    """The tiled Cholesky or LU (``variant.kwargs["lu"]``) of ``a`` in tiles of
    :func:`tile_of`, on one device or (a Cholesky with ``variant.kwargs["devices"]``) on
    two; the factor as a numpy array (with the pivots for LU)."""
    tile = tile_of(a.shape[0], options)
    lu = variant.kwargs.get("lu", False)
    if variant.kwargs.get("devices"):
        return function(MULTI_CHOLESKY)(a, queues=device_queues(queue), tile=tile,
                                        lower=True)
    from oclla import TiledMatrix
    tm = TiledMatrix.from_numpy(a, tile=tile, queue=queue)
    if lu:
        factor, piv = function(LU)(tm)
        return factor.to_numpy(), np.asarray(piv)
    out = function(CHOLESKY)(tm, lower=True)
    return out.to_numpy() if isinstance(out, TiledMatrix) else np.asarray(out)


def _tiled_finish(run, a, result) -> None:
    """The backward error of the tiled factor (the run keeps no snapshots)."""
    from oclla import accuracy
    if isinstance(result, tuple):
        run.metrics["backward_error"] = accuracy.lu_backward_error(a, *result)
    else:
        run.metrics["backward_error"] = accuracy.cholesky_backward_error(
            a, np.tril(result), True)


MULTI_CHOLESKY = "oclla.multi_device:cholesky"
TILE_ALGORITHMS = ("tiled_cholesky", "tiled_lu", "multi_device")
"""The entries whose runs open in the tile-task view; their block size is the tile order."""
SPARSE = "oclla.sparse.factor:cholesky"
LU = "oclla.lu:lu_factor"
CHOLESKY = "oclla.cholesky:cholesky"
RFP_PACK = "oclla.rfp:pack"
RFP_CHOLESKY = "oclla.rfp:cholesky"
AD2AT = "oclla.ad2at:assemble_ad2at"
UPDATE = "oclla.update:cholesky_update"
TRTRI = "oclla.inverse:trtri"
CHO_INVERSE = "oclla.inverse:cho_inverse"
LOGDET = "oclla.inverse:cho_logdet"
HYBRID = "oclla.hybrid:cholesky"

_UPDATE_VARIANTS = (
    Variant("pivot", "per row, teaching (compute the rotations, apply them to the row)",
            {"method": "pivot"}),
    Variant("blocked", "panels of rows (one work-group per panel, then the trailing apply)",
            {"method": "blocked"}),
)
_INVERSE_VARIANTS = (
    Variant("steps", "LAPACK's block loop, one step per operation", {"method": "steps"},
            blocked=True),
    Variant("blocked", "recursive halving on the BLAS-3 layer", {"method": "blocked"},
            blocked=True),
)

ALGORITHMS: tuple = (
    Algorithm("lu", "LU factorization", (
        Variant("pivot", "per-pivot, in place (improved)",
                {"method": "pivot", "variant": "inplace"}, ("partial", "none")),
        Variant("crout", "per-pivot, left-looking (Crout order)",
                {"method": "pivot", "variant": "crout"}, ("partial", "none")),
        Variant("window", "per-pivot, delayed updates (Crout order in windows)",
                {"method": "pivot", "variant": "window"}, ("partial", "none")),
        Variant("faithful", "per-pivot, faithful to the SYCL post",
                {"method": "pivot", "variant": "faithful"}, ("none",)),
        Variant("blocked", "blocked (panel, TRSM, GEMM)",
                {"method": "blocked"}, ("partial", "none"), blocked=True),
    ), _lu, needs=(LU,)),
    Algorithm("cholesky", "Cholesky factorization", (
        Variant("pivot", "per-pivot, full storage (sqrt, normalize, outer product)",
                {"method": "pivot"}),
        Variant("blocked", "blocked (panel, TRSM, SYRK)", {"method": "blocked"}, blocked=True),
    ), _cholesky, needs=(CHOLESKY,), family="spd", spd=True),
    Algorithm("rfp_cholesky", "Cholesky, packed (RFP) storage", (
        Variant("pivot", "per-pivot on the packed buffer", {"method": "pivot"}),
        Variant("blocked", "blocked, ?pftrf's structure", {"method": "blocked"},
                blocked=True),
    ), _rfp_cholesky, needs=(RFP_PACK, RFP_CHOLESKY), prepare=_rfp_pack, family="spd",
        spd=True),
    Algorithm("ad2at", "AD²Aᵀ assembly (one triangle)", (
        Variant("pivot", "per column, full storage (Algorithm 3)",
                {"method": "pivot", "packed": False}),
        Variant("blocked", "scaled copy and triangle GEMM, full storage",
                {"method": "blocked", "packed": False}),
        Variant("pivot-packed", "per column, packed (RFP) storage",
                {"method": "pivot", "packed": True}),
        Variant("blocked-packed", "scaled copy and GEMMs into the RFP blocks",
                {"method": "blocked", "packed": True}),
    ), _ad2at, needs=(AD2AT,), inputs=_ad2at_inputs),
    Algorithm("cholesky_update", "Cholesky update (factor of A + V·Vᵀ)", _UPDATE_VARIANTS,
              _modify(+1), needs=(CHOLESKY, UPDATE), prepare=_factor_and_v, family="spd",
              spd=True, inputs=_v_input, rank=True),
    Algorithm("cholesky_downdate", "Cholesky downdate (factor of A − V·Vᵀ)", _UPDATE_VARIANTS,
              _modify(-1), needs=(CHOLESKY, UPDATE), prepare=_factor_and_v, family="spd",
              spd=True, inputs=_v_input, rank=True, traced="cholesky_update",
              failing="make it fail: V beyond positive definiteness at order n/2 + 1"),
    Algorithm("trtri", "Triangular inverse (trtri)", _INVERSE_VARIANTS,
              _inverse(TRTRI, False), needs=(CHOLESKY, TRTRI), prepare=_lower_factor,
              family="spd", spd=True),
    Algorithm("cho_inverse", "Cholesky inverse (potri = trtri + lauum)", _INVERSE_VARIANTS,
              _inverse(CHO_INVERSE, True), needs=(CHOLESKY, CHO_INVERSE),
              prepare=_lower_factor, family="spd", spd=True),
    Algorithm("cho_logdet", "log-determinant (2 Σ log lᵢᵢ, reduced on the device)", (
        Variant("reduce", "two-stage compensated reduction"),
    ), _logdet, needs=(CHOLESKY, LOGDET), prepare=_lower_factor, family="spd", spd=True,
        finish=_logdet_finish),
    Algorithm("hybrid", "Cholesky, hybrid (diagonal blocks on the host's LAPACK)", (
        Variant("static", "one block width", {"schedule": "static"}, blocked=True),
        Variant("dynamic", "the thesis's widths: halving towards the centre, then doubling",
                {"schedule": "dynamic"}, blocked=True),
    ), _hybrid, needs=(HYBRID,), family="spd", spd=True, traced="cholesky"),
    Algorithm("tiled_cholesky", "Cholesky on tiles (tile-task view)", (
        Variant("tiled", "left-looking by block columns, one buffer a panel", blocked=True),
    ), _tiled, needs=(CHOLESKY,), family="spd", spd=True, finish=_tiled_finish,
        traced="cholesky"),
    Algorithm("tiled_lu", "LU on tiles (tile-task view)", (
        Variant("tiled", "partial pivoting, panel then row swaps, TRSM and GEMM per tile",
                {"lu": True}, blocked=True),
    ), _tiled, needs=(LU,), finish=_tiled_finish, traced="lu"),
    Algorithm("multi_device", "Cholesky on several devices (tile-task view)", (
        Variant("multi_device", "block columns dealt round-robin to two devices",
                {"devices": 2}, blocked=True),
    ), _tiled, needs=(MULTI_CHOLESKY,), family="spd", spd=True,
        finish=_tiled_finish, traced="cholesky"),
    Algorithm("sparse_cholesky", "Sparse Cholesky (supernodal, right-looking)", (
        Variant("rl", "RL: each supernode's update matrix by one SYRK, then assembled",
                {"method": "rl"}),
        Variant("rlb", "RLB: blocks updated straight into L (no working storage)",
                {"method": "rlb"}),
    ), _sparse, needs=(SPARSE,), family="laplace2d", spd=True, finish=_sparse_finish,
        make_matrix=sparse_matrix, families=SPARSE_FAMILIES, orderings=SPARSE_ORDERINGS),
)


def algorithm(key: str) -> Algorithm:
    """The :data:`ALGORITHMS` entry named ``key`` (KeyError listing the names)."""
    for a in ALGORITHMS:
        if a.key == key:
            return a
    raise KeyError(f"unknown algorithm {key!r}; choose one of "
                   f"{', '.join(a.key for a in ALGORITHMS)}")


# ---- how to draw a run ------------------------------------------------------------------

def _pivot_finished(step) -> int:
    """Columns of the factor final after this step: up to the pivot's (none without one)."""
    return step.pivot[1] + 1 if step.pivot is not None else 0


def _panel_finished(step) -> int:
    """As :func:`_pivot_finished`, but a "panel" step (or the hybrid's "potf2" of a
    diagonal block) finishes its whole width, and so
    does a step that factors a diagonal block beside its main work (its info's
    ``leaf`` region: the blocked Cholesky's update that also factors the next block)."""
    if step.phase in ("panel", "potf2"):
        return step.region[3]
    if "leaf" in step.info:
        return step.info["leaf"][3]
    return _pivot_finished(step)


def _row_finished(step) -> int:
    """An update's rows of the factor final after the step: those whose rotations were
    applied to the rest of them (``apply``); a step that forms rotations finishes none
    beyond the rows before it."""
    r0, r1, c0, c1 = step.region
    return min(r1, c1) if step.phase == "apply" else min(r0, c0)


def _nothing_finished(step) -> int:
    return 0


_ORDER = re.compile(r"order (\d{1,10})\b")


def error_order(run) -> int | None:
    """The order j named by a run's error ("... leading minor of order j"), or None."""
    m = _ORDER.search(run.error or "")
    return int(m.group(1)) if m else None


def _order_failure(run):
    """(position, cell) of the step that formed row j − 1's rotations, j the order the
    error names (the factor's diagonal cell (j − 1, j − 1)); None when not found."""
    j = error_order(run)
    if j is None:
        return None
    i = j - 1
    for s in run.steps:
        r0, r1, c0, c1 = s.region
        if s.pivot is not None and r0 <= i < r1 and c0 <= i < c1:
            return s.index + 1, (i, i)
    return None


def _downdate_failure_text(run) -> str:
    j = error_order(run)
    what = "downdate" if run.params.get("sign", 1) == -1 else "update"
    return f"FAILED: {what} loses positive definiteness at order {j}"


def _update_title(run) -> str:
    return "Cholesky downdate" if run.params.get("sign", 1) == -1 else "Cholesky update"


def _square(r0, r1) -> tuple:
    return r0, r1, r0, r1


def _inverse_reads(run, step) -> list:
    """The blocks a step of ``trtri``/``cho_inverse`` reads besides the one it writes
    (its region), from the structure of LAPACK's loops (``steps``) or of the recursive
    halving (``blocked``), in the stored triangle's coordinates."""
    lower = bool(run.params.get("lower", True))
    r0, r1, c0, c1 = step.region
    n = max(run.shape) if run.shape else max(r1, c1)
    steps = run.variant == "steps"
    lauum = any(s.phase == "lauu2" for s in run.steps[:step.index + 1])
    if step.phase == "trsm":                          # the diagonal block T_jj
        return [_square(c0, c1)]
    if step.phase == "trmm" and not lauum:            # trtri: X11 (and X22, recursive)
        return [_square(r0, r1)] if steps else [_square(r0, r1), _square(c0, c1)]
    if step.phase == "trmm":                          # lauum: the diagonal block below
        return [_square(r0, r1) if lower else _square(c0, c1)]
    if step.phase == "gemm":                          # the block column below X_ii
        return [(r1, n, r0, r1), (r1, n, c0, c1)] if lower else \
            [(c0, c1, c1, n), (r0, r1, c1, n)]
    if step.phase == "syrk":
        if not steps:                                 # X21 (X12): the next trmm's block
            nxt = run.steps[step.index + 1] if step.index + 1 < len(run.steps) else None
            return [nxt.region] if nxt is not None and nxt.phase == "trmm" else []
        return [(r1, n, r0, r1)] if lower else [(r0, r1, r1, n)]
    return []


MAX_CELLS = 4096
"""Most single cells a step outlines (a longer diagonal is drawn as its region)."""


def _diagonal_cells(run, step) -> list:
    """The log-determinant's reduction reads the diagonal (of the order its region says)."""
    r0, r1, c0, c1 = step.region
    n = min(r1 - r0, c1 - c0)
    if step.phase != "reduce" or n > MAX_CELLS:
        return []
    return [(r0 + i, c0 + i) for i in range(n)]


def _rows_of_v(run, step) -> tuple | None:
    """The rows of V a step of an update reads: ``info["v_rows"]`` (compute, panel), the
    rows below the panel for ``apply``."""
    if "v_rows" in step.info:
        return tuple(step.info["v_rows"])
    r0, r1, c0, c1 = step.region
    if step.phase == "apply":
        return (r0, r1) if bool(run.params.get("lower", True)) else (c0, c1)
    return None


@dataclass(frozen=True)
class Display:
    """How to read a run's working array (see the module docstring)."""

    storage: str = "full"                 # "lu", "lower", "upper", "triangle", "full"
    finished: Callable = _pivot_finished  # step -> columns final after it
    growth: bool = False                  # the growth factor means something
    backward_error: str | None = None     # "lu", "cholesky", "update", "inverse"
    positive_pivots: bool = False         # a pivot <= 0 is a failure (Cholesky)
    title: str = ""                       # how people name it ("" : the trace name)
    variants: dict = field(default_factory=dict)   # trace variant -> how people name it
    multipliers: bool = True              # a pivot step's column below it is its output
    reads: Callable | None = None         # (run, step) -> regions read besides the region
    cells: Callable | None = None         # (run, step) -> cells to outline (a diagonal)
    failure: Callable | None = None       # run -> (position, cell) where it failed, or None
    failure_text: Callable | None = None  # run -> the title's "FAILED: ..." words
    title_of: Callable | None = None      # run -> its name, when it depends on the run
    operand_rows: Callable | None = None  # (run, step) -> rows of the operand V it reads


_CHOLESKY_VARIANTS = {"pivot": "per pivot", "blocked": "blocked",
                      "hybrid-static": "hybrid (host POTRF), static blocks",
                      "hybrid-dynamic": "hybrid (host POTRF), the thesis's dynamic blocks"}
_INVERSE_NAMES = {"steps": "LAPACK's block loop", "blocked": "recursive"}

DISPLAYS: dict = {
    "lu": Display("lu", _panel_finished, growth=True, backward_error="lu", title="LU",
                  variants={"inplace": "per pivot, in place", "crout": "per pivot, Crout order",
                            "window": "per pivot, delayed updates",
                            "faithful": "per pivot, as in the SYCL post",
                            "blocked": "blocked", "pick": "pivots picked step by step"}),
    "cholesky": Display("triangle", _panel_finished, backward_error="cholesky",
                        positive_pivots=True, title="Cholesky", variants=_CHOLESKY_VARIANTS),
    "rfp_cholesky": Display("triangle", backward_error="cholesky", positive_pivots=True,
                            title="Cholesky, packed (RFP) storage",
                            variants=_CHOLESKY_VARIANTS),
    "ad2at": Display("triangle", title="AD²Aᵀ assembly",
                     variants={"pivot": "per column", "blocked": "blocked"}),
    "cholesky_update": Display("triangle", _row_finished, backward_error="update",
                               title="Cholesky update", multipliers=False,
                               failure=_order_failure, failure_text=_downdate_failure_text,
                               title_of=_update_title, operand_rows=_rows_of_v,
                               variants={"pivot": "per row", "blocked": "panels of rows",
                                         "streamed": "streamed panels"}),
    "trtri": Display("triangle", _nothing_finished, backward_error="inverse",
                     title="Triangular inverse (trtri)", multipliers=False,
                     reads=_inverse_reads, variants=_INVERSE_NAMES),
    "cho_inverse": Display("triangle", _nothing_finished, backward_error="inverse",
                           title="Cholesky inverse (trtri + lauum)", multipliers=False,
                           reads=_inverse_reads, variants=_INVERSE_NAMES),
    "cho_logdet": Display("triangle", _nothing_finished, title="log-determinant",
                          multipliers=False, cells=_diagonal_cells,
                          variants={"full": "", "packed": "packed"}),
    "rfp_pack": Display(title="packing into RFP storage"),
    "lu_solve": Display(title="LU solve"),
    "cho_solve": Display(title="Cholesky solve"),
    "sparse_cholesky": Display(title="Sparse Cholesky", multipliers=False,
                               variants={"rl": "RL", "rlb": "RLB"}),
}
"""Trace algorithm name -> Display; ``"triangle"`` reads the side from the run."""

DEFAULT_DISPLAY = Display()


def display(algorithm_name: str) -> Display:
    """The Display of a trace algorithm name (the default for unknown names)."""
    return DISPLAYS.get(algorithm_name, DEFAULT_DISPLAY)


PIVOTING_NAMES = {"partial": "partial pivoting", "none": "no pivoting",
                  "complete": "complete pivoting", "diagonal": "diagonal pivots",
                  "click": "by clicking"}


def _name(run, disp) -> str:
    if disp.title_of is not None:
        return disp.title_of(run)
    return disp.title or run.algorithm.replace("_", " ")


def run_title(run) -> str:
    """How people name a run: "LU, per pivot, in place, partial pivoting"."""
    disp = display(run.algorithm)
    parts = [_name(run, disp)]
    variant = disp.variants.get(run.variant, run.variant.replace("_", " "))
    if variant:
        parts.append(variant)
    pivoting = run.params.get("pivoting")
    if pivoting:
        parts.append(PIVOTING_NAMES.get(str(pivoting), f"pivoting {pivoting}"))
    return ", ".join(parts)


def run_attributes(run) -> dict:
    """What tells two runs apart, as words: algorithm, variant, pivoting, block, dtype,
    order, device, matrix."""
    disp = display(run.algorithm)
    out = {"algorithm": _name(run, disp),
           "variant": disp.variants.get(run.variant, run.variant.replace("_", " "))}
    if run.params.get("pivoting"):
        p = str(run.params["pivoting"])
        out["pivoting"] = PIVOTING_NAMES.get(p, f"pivoting {p}")
    if run.params.get("block"):
        out["block"] = f"block {run.params['block']}"
    if run.params.get("rank"):
        out["rank"] = f"k = {run.params['rank']}"
    sparse = run.metrics.get("sparse") if isinstance(run.metrics, dict) else None
    if isinstance(sparse, dict) and isinstance(sparse.get("ordering"), str):
        out["ordering"] = f"{sparse['ordering']} ordering"
    out["dtype"] = str(run.dtype)
    out["order"] = f"n = {run.shape[0]}" if run.shape else ""
    out["device"] = run.device or ""
    src = run.metrics.get("source") if isinstance(run.metrics, dict) else None
    if isinstance(src, dict):
        out["matrix"] = " ".join(str(src[k]) for k in ("family", "seed", "file") if k in src)
    return out


def difference_titles(a, b) -> tuple[str, str]:
    """Titles of two compared runs that name what differs ("partial pivoting" against
    "no pivoting"); the full titles when nothing recorded differs."""
    ta, tb = run_attributes(a), run_attributes(b)
    keys = [k for k in dict.fromkeys([*ta, *tb]) if ta.get(k, "") != tb.get(k, "")]
    if not keys:
        return run_title(a), run_title(b) + " (again)"
    return (", ".join(ta.get(k) or f"no {k}" for k in keys),
            ", ".join(tb.get(k) or f"no {k}" for k in keys))


def phase_name(phase: str) -> str:
    """A phase as words ("outer_product" -> "outer product")."""
    return phase.replace("_", " ")
