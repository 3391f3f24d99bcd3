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

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import oclla


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
    """A runnable algorithm: ``call(a, variant, options, queue)`` factors ``a``.

    ``a`` is the (n, n) matrix in the working dtype; ``options`` holds
    ``pivoting``, ``block`` and ``seed``; the call returns whatever oclla
    returns (the viewer uses only the recording).
    """

    key: str
    label: str
    variants: tuple
    call: Callable
    needs: tuple = ()           # attribute paths of oclla this entry calls
    family: str = "random"      # default matrix family
    spd: bool = False           # needs a symmetric positive definite matrix

    def variant(self, key: str) -> Variant:
        for v in self.variants:
            if v.key == key:
                return v
        raise KeyError(f"{self.key} has variants {', '.join(v.key for v in self.variants)}; "
                       f"got {key!r}")

    def missing(self) -> str | None:
        """None when runnable, else a sentence saying what this build lacks."""
        for path in self.needs:
            obj = oclla
            for part in path.split("."):
                obj = getattr(obj, part, None)
                if obj is None:
                    return f"oclla.{path} is not available in this build of oclla"
        return None


def _lu(a, variant, options, queue):
    kwargs = dict(variant.kwargs)
    if variant.pivoting:
        kwargs["pivoting"] = options.get("pivoting") or variant.pivoting[0]
    if variant.blocked and options.get("block"):
        kwargs["block"] = int(options["block"])
    return oclla.lu_factor(a, queue=queue, **kwargs)


def _cholesky(a, variant, options, queue):
    return oclla.cholesky(a, lower=True, queue=queue, **variant.kwargs)


def _rfp_cholesky(a, variant, options, queue):
    arf = oclla.rfp.pack(a, lower=True)
    return oclla.rfp.cholesky(arf, a.shape[0], lower=True, queue=queue, **variant.kwargs)


def _ad2at(a, variant, options, queue):
    d2 = np.random.default_rng(options.get("seed", 0)).uniform(0.5, 2.0, a.shape[1])
    return oclla.assemble_ad2at(a, d2.astype(a.dtype), lower=True, queue=queue,
                                **variant.kwargs)


ALGORITHMS: tuple = (
    Algorithm("lu", "LU factorization", (
        Variant("pivot", "per-pivot, in place (improved)",
                {"method": "pivot", "variant": "inplace"}, ("partial", "none")),
        Variant("faithful", "per-pivot, faithful to the SYCL post",
                {"method": "pivot", "variant": "faithful"}, ("none",)),
        Variant("blocked", "blocked (panel, TRSM, GEMM)",
                {"method": "blocked"}, ("partial", "none"), blocked=True),
    ), _lu, needs=("lu_factor",)),
    Algorithm("cholesky", "Cholesky factorization", (
        Variant("pivot", "per-pivot, full storage (sqrt, normalize, outer product)",
                {"method": "pivot"}),
        Variant("blocked", "blocked (panel, TRSM, SYRK)", {"method": "blocked"}, blocked=True),
    ), _cholesky, needs=("cholesky",), family="spd", spd=True),
    Algorithm("rfp_cholesky", "Cholesky, packed (RFP) storage", (
        Variant("pivot", "per-pivot on the RFP buffer"),
    ), _rfp_cholesky, needs=("rfp.pack", "rfp.cholesky"), family="spd", spd=True),
    Algorithm("ad2at", "AD²Aᵀ assembly", (
        Variant("full", "one triangle, full storage", {"packed": False}),
        Variant("packed", "one triangle, packed (RFP) storage", {"packed": True}),
    ), _ad2at, needs=("assemble_ad2at",)),
)


def algorithm(key: str) -> Algorithm:
    """The :data:`ALGORITHMS` entry named ``key`` (KeyError listing the names)."""
    for a in ALGORITHMS:
        if a.key == key:
            return a
    raise KeyError(f"unknown algorithm {key!r}; choose one of "
                   f"{', '.join(a.key for a in ALGORITHMS)}")


# ---- how to draw a run ------------------------------------------------------------------

def _lu_finished(step) -> int:
    """Columns of L final after this step (eliminate: the pivot's; panel: its width)."""
    if step.phase == "panel":
        return step.region[3]
    if step.pivot is not None:
        return step.pivot[1] + 1
    return 0


def _pivot_finished(step) -> int:
    return step.pivot[1] + 1 if step.pivot is not None else 0


@dataclass(frozen=True)
class Display:
    """How to read a run's working array (see the module docstring)."""

    storage: str = "full"                 # "lu", "lower", "upper", "triangle", "full"
    finished: Callable = _pivot_finished  # step -> columns final after it
    growth: bool = False                  # the growth factor means something
    backward_error: str | None = None     # "lu" or "cholesky"


DISPLAYS: dict = {
    "lu": Display("lu", _lu_finished, growth=True, backward_error="lu"),
    "cholesky": Display("triangle", backward_error="cholesky"),
    "rfp_cholesky": Display("triangle", backward_error="cholesky"),
    "ad2at": Display("triangle"),
}
"""Trace algorithm name -> Display; ``"triangle"`` reads the side from the run."""

DEFAULT_DISPLAY = Display()


def display(algorithm_name: str) -> Display:
    """The Display of a trace algorithm name (the default for unknown names)."""
    return DISPLAYS.get(algorithm_name, DEFAULT_DISPLAY)
