"""Run an algorithm under a recorder and hand back the recording (no Qt).

The window calls :func:`execute` from a worker thread (:mod:`viewer.worker`),
the headless command line calls it directly.  Progress and cancellation
ride on the trace itself: :class:`ProgressRecording` is an
:class:`oclla.Recording` that reports each new step and, once cancelled,
refuses to start the next one, so the algorithm stops at a step boundary.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field

import numpy as np
from numpy.linalg import LinAlgError

import oclla

from . import matrices, registry

DTYPES = ("float64", "float32")


class RunCancelled(Exception):
    """The user cancelled the run."""


@dataclass
class RunRequest:
    """Everything needed to reproduce a run."""

    algorithm: str = "lu"
    variant: str = "pivot"
    n: int = 16
    dtype: str = "float64"
    family: str = "random"
    seed: int = 0
    kappa: float = 1e3
    pivoting: str | None = None
    block: int | None = None
    device: str | None = None           # oclla.get_queue's spec; None = default
    matrix: np.ndarray | None = None    # typed-in or file matrix (family "typed"/"file")
    source_name: str = ""               # file name for family "file"
    snapshots: bool = True
    warmup: bool = True                 # one untimed run first (kernel builds, device warm-up)
    solve: bool = False                 # LU: then solve A·x = b, substitution steps shown
    rank: int | None = None             # update/downdate: k, the columns of V
    fail: bool = False                  # downdate: V chosen to break positive definiteness
    ordering: str | None = None         # sparse: the fill-reducing ordering
    large: float | None = None          # sparse: flops from which a supernode takes BLAS-3

    def describe(self) -> dict:
        """Where the matrix came from (stored with the run so a replay can say it)."""
        d = {"family": self.family, "seed": int(self.seed), "n": int(self.n)}
        if self.family == "cond":
            d["kappa"] = float(self.kappa)
        if self.source_name:
            d["file"] = self.source_name
        if self.rank:
            d["rank"] = int(self.rank)
        if self.fail:
            d["fail"] = True
        if self.ordering:
            d["ordering"] = str(self.ordering)
        if self.large:
            d["large"] = float(self.large)
        return d


@dataclass
class RunOutcome:
    """The result of :func:`execute`.

    ``recording`` holds whatever was recorded (also for a failed run);
    ``error`` is a message for the user or None; ``math_error`` says the
    failure is mathematical (zero pivot, not positive definite), so the
    recording shows where it happened; ``warnings`` collects warnings.
    """

    recording: object | None = None
    error: str | None = None
    math_error: bool = False
    cancelled: bool = False
    warnings: list = field(default_factory=list)

    @property
    def showable(self) -> bool:
        """The recording has steps to show (a finished run or a mathematical failure)."""
        from .analysis import viewable_runs
        return (self.recording is not None and not self.cancelled
                and (self.error is None or self.math_error)
                and bool(viewable_runs(self.recording)))


class ProgressRecording(oclla.Recording):
    """A recorder that reports steps and can be cancelled between them."""

    def __init__(self, snapshots=False, on_step=None, cancel: threading.Event | None = None):
        super().__init__(snapshots=snapshots)
        self._on_step = on_step
        self._cancel = cancel

    def begin_step(self, *args, **kwargs):
        if self._cancel is not None and self._cancel.is_set():
            raise RunCancelled("cancelled")
        step = super().begin_step(*args, **kwargs)
        if self._on_step is not None:
            self._on_step(step.index + 1)
        return step


def build_matrix(request: RunRequest) -> np.ndarray:
    """The request's matrix in its working dtype (MatrixError for a bad one); a
    scipy.sparse matrix for an algorithm that makes its own (``make_matrix``)."""
    if request.dtype not in DTYPES:
        raise matrices.MatrixError(f"dtype must be one of {DTYPES}, got {request.dtype!r}")
    spec = registry.algorithm(request.algorithm)
    if spec.make_matrix is not None:
        if request.family not in spec.families:
            raise matrices.MatrixError(f"{spec.label} takes the matrices "
                                       f"{', '.join(spec.families)}, not {request.family!r}")
        if not 1 <= int(request.n) <= MAX_SPARSE_N:
            raise matrices.MatrixError(f"n must be between 1 and {MAX_SPARSE_N}")
        return spec.make_matrix(request.family, int(request.n),
                                int(request.seed)).astype(request.dtype)
    if request.family in ("typed", "file"):
        if request.matrix is None:
            raise matrices.MatrixError("no matrix was given (type values or choose a file)")
        a = np.asarray(request.matrix, dtype=np.float64)
    else:
        a = matrices.generate(request.family, request.n, request.seed, request.kappa,
                              symmetric=spec.spd)
    return np.ascontiguousarray(a, dtype=request.dtype)


MAX_SPARSE_N = 200_000
"""Largest order of a generated sparse matrix."""


def expected_steps(request: RunRequest) -> int:
    """How many steps a per-pivot run takes (0 when not known in advance)."""
    if request.variant in ("pivot", "faithful"):
        n = request.matrix.shape[0] if request.matrix is not None else request.n
        if request.algorithm in ("cholesky_update", "cholesky_downdate"):
            return max(2 * n - 1, 0)         # compute and apply per row, the last no apply
        return max(n - 1, 0) if request.algorithm == "lu" else n
    return 0


def execute(request: RunRequest, on_step=None, cancel=None) -> RunOutcome:
    """Run the request under a recorder; never raises for a failing run.

    ``on_step(k)`` is called as step k starts (from the running thread);
    setting ``cancel`` (a threading.Event) stops the run at the next step.
    """
    try:
        spec = registry.algorithm(request.algorithm)
        variant = spec.variant(request.variant)
    except KeyError as exc:
        return RunOutcome(error=str(exc.args[0]))
    missing = spec.missing()
    if missing:
        return RunOutcome(error=f"{spec.label} cannot run: {missing}")
    if request.ordering is not None and request.ordering not in spec.orderings:
        return RunOutcome(error=f"{spec.key} takes the orderings "
                                f"{', '.join(spec.orderings) or '(none)'}, "
                                f"not {request.ordering!r}")
    if variant.pivoting and request.pivoting not in (None, *variant.pivoting):
        return RunOutcome(error=f"{spec.key} {variant.key} allows pivoting "
                                f"{' or '.join(variant.pivoting)}, not {request.pivoting!r}")
    try:
        a = build_matrix(request)
    except matrices.MatrixError as exc:
        return RunOutcome(error=str(exc))
    options = {"pivoting": request.pivoting, "block": request.block, "seed": request.seed,
               "rank": request.rank, "fail": request.fail and bool(spec.failing),
               "ordering": request.ordering, "large": request.large}
    outcome = RunOutcome()
    prepared = result = None
    rec = ProgressRecording(snapshots=request.snapshots, on_step=on_step, cancel=cancel)
    try:
        queue = oclla.get_queue(request.device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if request.warmup:
                _warm_up(spec, variant, a, options, queue)
            if spec.prepare is not None:
                a = spec.prepare(a, options, queue)
            prepared = a
            solving = request.solve and spec.key == "lu"
            with rec:
                result = spec.call(a, variant, options, queue)
                if solving:      # recorded: its kernels are the "lu_solve" run
                    b = rhs(a, request.seed)
                    x = np.asarray(oclla.lu_solve(result, b, queue=queue))
            if solving:
                _add_substitution(rec, result, b, x, queue)
        outcome.warnings = [str(w.message) for w in caught]
    except RunCancelled:
        outcome.cancelled = True
        outcome.error = "run cancelled"
    except LinAlgError as exc:
        outcome.error, outcome.math_error = f"{spec.label} stopped: {exc}", True
    except oclla.DeviceError as exc:
        outcome.error = f"device problem: {exc}"
    except (ValueError, TypeError, MemoryError) as exc:
        outcome.error = f"{spec.label} refused the input: {exc}"
    except Exception as exc:   # a driver failing mid-run: report it, keep the app alive
        outcome.error = f"the run failed: {type(exc).__name__}: {exc}"
    outcome.recording = rec
    for run in rec.runs:
        run.metrics.setdefault("source", request.describe())
    if spec.inputs is not None and request.snapshots and rec.runs:
        shown = spec.inputs(build_matrix(request), options, prepared)
        if shown:
            rec.runs[-1].metrics["inputs"] = {k: np.asarray(v).tolist()
                                              for k, v in shown.items()}
    if spec.finish is not None and result is not None and rec.runs:
        spec.finish(rec.runs[-1], prepared, result)
    if outcome.math_error and rec.runs and rec.runs[-1].error is None:
        rec.runs[-1].error = f"LinAlgError: {exc_text(outcome.error)}"
    return outcome


def rhs(a, seed: int) -> np.ndarray:
    """The right-hand side b of a solve: seeded, uniform in [−1, 1), in a's dtype."""
    return np.random.default_rng(seed).uniform(-1.0, 1.0, a.shape[0]).astype(a.dtype)


def _add_substitution(rec, factors, b, x, queue) -> None:
    """Add the forward and back substitution steps of A·x = b to the LU run
    (:mod:`viewer.substitution`).  y = L⁻¹·P·b comes from the same device solve given
    the factor with U replaced by I (unrecorded)."""
    from oclla import accuracy

    from . import substitution
    lu, piv = (np.asarray(f) for f in factors)
    n = lu.shape[0]
    unit_upper = np.tril(lu, -1) + np.eye(n, dtype=lu.dtype)
    y = np.asarray(oclla.lu_solve((unit_upper, piv), b, queue=queue))
    run = [r for r in rec.runs if r.algorithm == "lu"][-1]
    substitution.append_steps(run, b[accuracy.permutation_from_piv(piv, n)], y, x)


WARMUP_N = 64


def _warm_up(spec, variant, a, options, queue) -> None:
    """Run once, unrecorded, on the leading WARMUP_N × WARMUP_N block of ``a`` (all of a
    sparse ``a``).

    The first call of a kernel includes its build and the device's warm-up;
    the recorded run then shows steady-state times.  The run is recorded (and the
    recording dropped), since a recording may take a route of its own (the packed
    Cholesky's T2 in place).  A mathematical failure here is ignored: the recorded
    run meets it again and reports it.
    """
    m = min(a.shape[0], WARMUP_N)
    # a sparse matrix whole: its large supernodes' BLAS-3 kernels are built too
    small = a if hasattr(a, "tocsc") else np.ascontiguousarray(a[:m, :m])
    try:
        if spec.prepare is not None:
            small = spec.prepare(small, options, queue)
        with oclla.record():
            spec.call(small, variant, options, queue)
    except LinAlgError:
        pass


def exc_text(message: str) -> str:
    """The part of a "label stopped: reason" message after the colon."""
    return message.split(": ", 1)[-1]
