"""The trace: what each algorithm did, step by step, with kernel timings.

Usage::

    with oclla.record(snapshots=True) as rec:
        oclla.lu_factor(a, method="pivot")
    rec.runs[0].steps[3].region       # (row0, row1, col0, col1), half-open
    rec.save("lu.oclrec")             # npz + JSON metadata, replays anywhere
    rec.to_chrome_trace("lu.json")    # chrome://tracing / ui.perfetto.dev

Model: a :class:`Recording` holds :class:`Run` objects (one per algorithm
call); a run holds :class:`Step` objects; a step holds the
:class:`KernelRecord` of every OpenCL command it enqueued, with the profiling
times queued <= submit <= start <= end in nanoseconds.  Snapshots (host copies
of the matrix after each step) are taken only with ``snapshots=True``.

With no recorder active the algorithms pay one ``is None`` test per kernel.
"""

from __future__ import annotations

import io
import json
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field, asdict

import numpy as np
import pyopencl as cl

from . import _trace_hooks

FORMAT_NAME = "oclla-recording"
FORMAT_VERSION = 1


class RecordingError(ValueError):
    """A recording file that cannot be read (corrupt, truncated, too new)."""


@dataclass
class KernelRecord:
    """One enqueued OpenCL command and its profiling times (ns)."""

    name: str
    queued: int = 0
    submit: int = 0
    start: int = 0
    end: int = 0
    global_size: tuple | None = None
    local_size: tuple | None = None
    step: int = -1                 # index of the step within its run

    @property
    def duration_ns(self) -> int:
        return self.end - self.start

    @property
    def launch_ns(self) -> int:
        """Time from queued to start: host and driver overhead."""
        return self.start - self.queued


@dataclass
class Step:
    """One step of an algorithm: a pivot, a panel, a trailing update, ..."""

    algorithm: str
    index: int
    phase: str
    region: tuple                  # (row0, row1, col0, col1), half-open
    pivot: tuple | None = None     # (row, col) of the pivot, if any
    flops: float = 0.0
    bytes: float = 0.0
    info: dict = field(default_factory=dict)
    kernels: list = field(default_factory=list)     # KernelRecord
    snapshot: int | None = None    # index into Run.snapshots

    @property
    def device_ns(self) -> int:
        """Sum of the kernels' device times."""
        return sum(k.duration_ns for k in self.kernels)


@dataclass
class Run:
    """One algorithm call."""

    algorithm: str
    variant: str
    shape: tuple
    dtype: str
    device: str
    params: dict = field(default_factory=dict)
    steps: list = field(default_factory=list)
    initial: np.ndarray | None = None
    snapshots: list = field(default_factory=list)
    result: np.ndarray | None = None
    error: str | None = None
    metrics: dict = field(default_factory=dict)   # e.g. backward_error, gflops

    @property
    def kernels(self) -> list:
        return [k for s in self.steps for k in s.kernels]

    @property
    def flops(self) -> float:
        return float(sum(s.flops for s in self.steps))

    @property
    def device_ns(self) -> int:
        return sum(s.device_ns for s in self.steps)

    @property
    def wall_ns(self) -> int:
        """First kernel queued to last kernel end."""
        ks = self.kernels
        if not ks:
            return 0
        return max(k.end for k in ks) - min(k.queued for k in ks)

    def snapshot_at(self, step_index: int) -> np.ndarray | None:
        """The matrix after step ``step_index`` (-1: the initial matrix)."""
        if step_index < 0:
            return self.initial
        snap = self.steps[step_index].snapshot
        return None if snap is None else self.snapshots[snap]

    def phase_totals(self) -> dict:
        """phase -> (number of steps, kernels, device ns, flops)."""
        totals: dict = {}
        for s in self.steps:
            n, k, ns, fl = totals.get(s.phase, (0, 0, 0, 0.0))
            totals[s.phase] = (n + 1, k + len(s.kernels), ns + s.device_ns, fl + s.flops)
        return totals


class Recording:
    """Runs captured by :func:`record`, or loaded by :func:`load_recording`."""

    def __init__(self, snapshots: bool = False):
        self.snapshots = snapshots
        self.runs: list[Run] = []
        self._pending: list = []      # (KernelRecord, cl.Event)
        self._run: Run | None = None
        self._step: Step | None = None
        self._snapshot_fn = None

    # ---- producer side (called by algorithms through module helpers) ----
    def begin_run(self, run: Run, snapshot_fn=None) -> Run:
        self.runs.append(run)
        self._run, self._snapshot_fn = run, snapshot_fn
        if self.snapshots and snapshot_fn is not None:
            run.initial = np.array(snapshot_fn(), copy=True)
        return run

    def end_run(self, error: BaseException | None = None, result=None) -> None:
        run = self._run
        if run is not None:
            if error is not None:
                run.error = f"{type(error).__name__}: {error}"
            if result is not None and self.snapshots:
                run.result = np.array(result, copy=True)
        self._run, self._step, self._snapshot_fn = None, None, None

    def begin_step(self, phase: str, region, pivot=None, flops=0.0, nbytes=0.0,
                   **info) -> Step:
        run = self._run
        if run is None:       # a kernel enqueued outside any algorithm call
            run = Run("other", "", (), "", "")
            self.runs.append(run)
            self._run = run
        step = Step(run.algorithm, len(run.steps), phase, tuple(int(x) for x in region),
                    None if pivot is None else tuple(int(x) for x in pivot),
                    float(flops), float(nbytes), dict(info))
        run.steps.append(step)
        self._step = step
        return step

    def end_step(self) -> None:
        step, run = self._step, self._run
        if step is not None and run is not None and self.snapshots \
                and self._snapshot_fn is not None:
            run.snapshots.append(np.array(self._snapshot_fn(), copy=True))
            step.snapshot = len(run.snapshots) - 1
        self._step = None

    def add_kernel(self, name: str, event: cl.Event, global_size, local_size) -> None:
        step = self._step
        if step is None:        # a kernel outside any step gets a step of its own
            step = self.begin_step("other", (0, 0, 0, 0))
            self._step = None
        rec = KernelRecord(name, global_size=None if global_size is None else tuple(global_size),
                           local_size=None if local_size is None else tuple(local_size),
                           step=step.index)
        step.kernels.append(rec)
        self._pending.append((rec, event))

    def resolve(self) -> None:
        """Wait for the recorded events and read their profiling times."""
        pending, self._pending = self._pending, []
        for rec, event in pending:
            event.wait()
            prof = event.profile
            rec.queued, rec.submit = int(prof.queued), int(prof.submit)
            rec.start, rec.end = int(prof.start), int(prof.end)

    # ---- consumer side ----
    @property
    def steps(self) -> list:
        return [s for r in self.runs for s in r.steps]

    @property
    def kernels(self) -> list:
        return [k for r in self.runs for k in r.kernels]

    def save(self, path) -> None:
        """Write one portable ``.npz`` file (arrays + JSON metadata)."""
        self.resolve()
        arrays = {}
        runs_meta = []
        for i, run in enumerate(self.runs):
            meta = {k: v for k, v in asdict(run).items()
                    if k not in ("initial", "snapshots", "result", "steps")}
            meta["steps"] = [_step_to_json(s) for s in run.steps]
            meta["has_initial"] = run.initial is not None
            meta["has_result"] = run.result is not None
            meta["n_snapshots"] = len(run.snapshots)
            runs_meta.append(meta)
            if run.initial is not None:
                arrays[f"run{i}_initial"] = run.initial
            if run.result is not None:
                arrays[f"run{i}_result"] = run.result
            for j, snap in enumerate(run.snapshots):
                arrays[f"run{i}_snap{j}"] = snap
        header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "runs": runs_meta}
        arrays["meta"] = np.frombuffer(json.dumps(header, default=_json_default)
                                       .encode("utf-8"), dtype=np.uint8)
        with open(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    def to_chrome_trace(self, path=None) -> dict:
        """Chrome/Perfetto trace JSON: one process per run, kernels as slices."""
        self.resolve()
        events = []
        t0 = min((k.queued for k in self.kernels), default=0)
        for pid, run in enumerate(self.runs):
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": f"{run.algorithm} {run.variant} "
                                            f"{'x'.join(map(str, run.shape))} {run.dtype}"}})
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": 0,
                           "args": {"name": run.device or "device"}})
            for step in run.steps:
                for k in step.kernels:
                    events.append({
                        "name": k.name, "cat": step.phase, "ph": "X", "pid": pid, "tid": 0,
                        "ts": (k.start - t0) / 1e3, "dur": max(k.end - k.start, 0) / 1e3,
                        "args": {"step": step.index, "phase": step.phase,
                                 "region": list(step.region),
                                 "launch_us": (k.start - k.queued) / 1e3,
                                 "global_size": k.global_size, "local_size": k.local_size}})
        doc = {"traceEvents": events, "displayTimeUnit": "ms"}
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(doc, fh, default=_json_default)
        return doc

    # ---- context manager ----
    def __enter__(self) -> "Recording":
        if _trace_hooks.active is not None:
            raise RuntimeError("oclla.record() blocks cannot be nested")
        _trace_hooks.active = self
        return self

    def __exit__(self, *exc) -> None:
        _trace_hooks.active = None
        self._run = self._step = None
        self.resolve()


def record(snapshots: bool = False) -> Recording:
    """Start recording: ``with oclla.record(snapshots=False) as rec: ...``."""
    return Recording(snapshots=snapshots)


# ---- helpers the algorithms call -------------------------------------------------

class _NullContext:
    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NULL = _NullContext()


@contextmanager
def _run_ctx(rec: Recording, run: Run, snapshot_fn):
    rec.begin_run(run, snapshot_fn)
    try:
        yield run
    except BaseException as exc:
        rec.end_run(error=exc)
        raise
    rec.end_run(result=snapshot_fn() if (snapshot_fn and rec.snapshots) else None)


def run(algorithm: str, variant: str, queue, shape, dtype, snapshot_fn=None, **params):
    """Context for one algorithm call; a no-op unless a recorder is active.

    ``snapshot_fn()`` returns a host copy of the matrix as it is now; it is
    called only when the recorder keeps snapshots.
    """
    rec = _trace_hooks.active
    if rec is None:
        return _NULL
    from ._device import device_info
    r = Run(algorithm, variant, tuple(int(s) for s in shape), np.dtype(dtype).name,
            device_info(queue).name if queue is not None else "", dict(params))
    return _run_ctx(rec, r, snapshot_fn)


@contextmanager
def _step_ctx(rec: Recording, phase, region, pivot, flops, nbytes, info):
    rec.begin_step(phase, region, pivot, flops, nbytes, **info)
    try:
        yield
    finally:
        rec.end_step()


def step(phase: str, region, pivot=None, flops=0.0, nbytes=0.0, **info):
    """Context for one step; a no-op unless a recorder is active."""
    rec = _trace_hooks.active
    if rec is None:
        return _NULL
    return _step_ctx(rec, phase, region, pivot, flops, nbytes, info)


def fail_last_run(error: BaseException) -> None:
    """Mark the latest run as failed when its failure is found after it ended (LU's info)."""
    rec = _trace_hooks.active
    if rec is not None and rec.runs:
        rec.runs[-1].error = f"{type(error).__name__}: {error}"


def recording() -> bool:
    """True while a recorder is active (to skip building step metadata)."""
    return _trace_hooks.active is not None


# ---- loading ---------------------------------------------------------------------

def _step_to_json(step: Step) -> dict:
    d = asdict(step)
    d["kernels"] = [asdict(k) for k in step.kernels]
    return d


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, tuple):
        return list(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in a recording")


def _tuple_or_none(value):
    return None if value is None else tuple(value)


def load_recording(path) -> Recording:
    """Read a file written by :meth:`Recording.save`.

    Raises :class:`RecordingError` for a file that is not a recording, is
    truncated or corrupt, or comes from a newer format version.
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise RecordingError(f"cannot read recording {path}: {exc}") from exc
    try:
        npz = np.load(io.BytesIO(data), allow_pickle=False)
        header = json.loads(bytes(npz["meta"]).decode("utf-8"))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError) as exc:
        raise RecordingError(f"{path} is not an oclla recording or is damaged "
                             f"({type(exc).__name__}: {exc})") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise RecordingError(f"{path} is not an oclla recording")
    version = header.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise RecordingError(f"{path} has recording format version {version}, newer than "
                             f"this oclla reads ({FORMAT_VERSION}); upgrade oclla")
    rec = Recording(snapshots=False)
    try:
        for i, meta in enumerate(header["runs"]):
            steps = []
            for s in meta["steps"]:
                kernels = [KernelRecord(k["name"], k["queued"], k["submit"], k["start"],
                                        k["end"], _tuple_or_none(k["global_size"]),
                                        _tuple_or_none(k["local_size"]), k["step"])
                           for k in s["kernels"]]
                steps.append(Step(s["algorithm"], s["index"], s["phase"], tuple(s["region"]),
                                  _tuple_or_none(s["pivot"]), s["flops"], s["bytes"],
                                  s["info"], kernels, s["snapshot"]))
            run = Run(meta["algorithm"], meta["variant"], tuple(meta["shape"]), meta["dtype"],
                      meta["device"], meta["params"], steps, error=meta["error"],
                      metrics=meta["metrics"])
            if meta["has_initial"]:
                run.initial = npz[f"run{i}_initial"]
            if meta["has_result"]:
                run.result = npz[f"run{i}_result"]
            run.snapshots = [npz[f"run{i}_snap{j}"] for j in range(meta["n_snapshots"])]
            rec.runs.append(run)
    except (KeyError, TypeError, ValueError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise RecordingError(f"{path} is damaged: {type(exc).__name__}: {exc}") from exc
    rec.snapshots = any(r.snapshots for r in rec.runs)
    return rec
