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
"""

from __future__ import annotations

import importlib
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
    ``seed``.  ``needs`` lists the ``"module:function"`` names the calls use;
    :meth:`missing` checks them, so an entry for a function this build lacks
    is shown disabled instead of failing.
    """

    key: str
    label: str
    variants: tuple
    call: Callable
    needs: tuple = ()
    prepare: Callable | None = None
    family: str = "random"      # default matrix family
    spd: bool = False           # needs a symmetric positive definite matrix
    inputs: Callable | None = None   # (a, options) -> {name: array}: operands to show

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


def _ad2at_inputs(a, options) -> dict:
    """A and the diagonal of D², shown beside C (trace steps name them in ``info["matrix"]``)."""
    return {"A": a, "d2": _ad2at_weights(a, options).reshape(-1, 1)}


LU = "oclla.lu:lu_factor"
CHOLESKY = "oclla.cholesky:cholesky"
RFP_PACK = "oclla.rfp:pack"
RFP_CHOLESKY = "oclla.rfp:cholesky"
AD2AT = "oclla.ad2at:assemble_ad2at"

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
    """As :func:`_pivot_finished`, but a "panel" step finishes its whole width, and so
    does a step that factors a diagonal block beside its main work (its info's
    ``leaf`` region: the blocked Cholesky's update that also factors the next block)."""
    if step.phase == "panel":
        return step.region[3]
    if "leaf" in step.info:
        return step.info["leaf"][3]
    return _pivot_finished(step)


@dataclass(frozen=True)
class Display:
    """How to read a run's working array (see the module docstring)."""

    storage: str = "full"                 # "lu", "lower", "upper", "triangle", "full"
    finished: Callable = _pivot_finished  # step -> columns final after it
    growth: bool = False                  # the growth factor means something
    backward_error: str | None = None     # "lu" or "cholesky"
    positive_pivots: bool = False         # a pivot <= 0 is a failure (Cholesky)
    title: str = ""                       # how people name it ("" : the trace name)
    variants: dict = field(default_factory=dict)   # trace variant -> how people name it


_CHOLESKY_VARIANTS = {"pivot": "per pivot", "blocked": "blocked"}

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
    "rfp_pack": Display(title="packing into RFP storage"),
    "lu_solve": Display(title="LU solve"),
    "cho_solve": Display(title="Cholesky solve"),
}
"""Trace algorithm name -> Display; ``"triangle"`` reads the side from the run."""

DEFAULT_DISPLAY = Display()


def display(algorithm_name: str) -> Display:
    """The Display of a trace algorithm name (the default for unknown names)."""
    return DISPLAYS.get(algorithm_name, DEFAULT_DISPLAY)


PIVOTING_NAMES = {"partial": "partial pivoting", "none": "no pivoting",
                  "complete": "complete pivoting", "diagonal": "diagonal pivots",
                  "click": "by clicking"}


def run_title(run) -> str:
    """How people name a run: "LU, per pivot, in place, partial pivoting"."""
    disp = display(run.algorithm)
    parts = [disp.title or run.algorithm.replace("_", " ")]
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
    out = {"algorithm": disp.title or run.algorithm.replace("_", " "),
           "variant": disp.variants.get(run.variant, run.variant.replace("_", " "))}
    if run.params.get("pivoting"):
        p = str(run.params["pivoting"])
        out["pivoting"] = PIVOTING_NAMES.get(p, f"pivoting {p}")
    if run.params.get("block"):
        out["block"] = f"block {run.params['block']}"
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
