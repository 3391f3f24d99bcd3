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

With no recorder active the algorithms pay one context-variable lookup per
kernel.  A recorder belongs to the thread (or asyncio task) that opened it.
"""

from __future__ import annotations

import json
import lzma
import math
import os
import stat
import struct
import zipfile
import zlib
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, asdict
from typing import TYPE_CHECKING

import numpy as np

from . import _trace_hooks

if TYPE_CHECKING:     # pyopencl only where a recording is made: a replay needs none
    import pyopencl as cl

FORMAT_NAME = "oclla-recording"
HOST = "host"
"""The ``device`` of a :class:`KernelRecord` that times host work (:func:`host_work`)."""

_device_labels: ContextVar = ContextVar("oclla_device_labels", default={})


@contextmanager
def device_labels(labels):
    """Within the block, the kernels enqueued on each device of ``labels`` (pairs of a
    pyopencl.Device and its label) are recorded under that label instead of the
    device's name: devices of one name (two GPUs of a kind, sub-devices, one device
    through two queues) then get a lane each on the timeline.  Kernels enqueued after
    the block carry their device's name again."""
    token = _device_labels.set({**_device_labels.get(),
                                **{device.int_ptr: str(label) for device, label in labels}})
    try:
        yield
    finally:
        _device_labels.reset(token)


FORMAT_VERSION = 1


class RecordingError(ValueError):
    """A recording file that cannot be read: raised by :func:`load_recording`.

    For a file that is not a regular file, not a recording, truncated or
    corrupt, of a newer format version, with metadata of the wrong types or
    out of range, or with arrays beyond the size limits.  A subclass of
    :class:`ValueError`.
    """


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
    device: str = ""               # who ran it: "" the run's device, another device's
                                   # name, or "host" (host work, see host_work)

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
        """Sum of the kernels' device times (host work not included)."""
        return sum(k.duration_ns for k in self.kernels if k.device != HOST)


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
    """Runs captured by :func:`record`, or loaded by :func:`load_recording`.

    Use it as a context manager (``with oclla.record() as rec:``): every oclla
    call made in this thread inside the block adds a :class:`Run` to
    ``rec.runs``; the profiling times are read when the block ends.

    Parameters
    ----------
    snapshots : bool, default False
        Keep a host copy of the matrix after every step (see :func:`record`
        for what that costs).

    Attributes
    ----------
    runs : list of Run
        One per algorithm call, in call order.  A run has the algorithm,
        variant, order, dtype and device, its ``steps`` (each with phase,
        pivot, active region ``(row0, row1, col0, col1)``, flops, bytes and
        the :class:`KernelRecord` of each OpenCL command with its profiling
        times in ns), and, with snapshots, ``initial``, ``snapshots`` and
        ``result``.
    snapshots : bool
        Whether snapshots are taken.

    Methods
    -------
    save(path)
        Write one portable ``.npz`` file (arrays and JSON metadata) that
        :func:`load_recording` and the viewer read, with no OpenCL needed.
    to_chrome_trace(path=None)
        Chrome/Perfetto trace JSON of every kernel (a dict; written to
        ``path`` when given).

    Raises
    ------
    RuntimeError
        On entering a block while another recorder is open in this thread,
        or one already open in another thread.
    """

    def __init__(self, snapshots: bool = False):
        self.snapshots = snapshots
        self.runs: list[Run] = []
        self._pending: list = []      # (KernelRecord, event(s), run's device, labels)
        self._run: Run | None = None
        self._step: Step | None = None
        self._snapshot_fn = None
        self._stray: Run | None = None     # the "other" run of kernels outside any call
        self._outer_runs: list = []        # (run, step, snapshot_fn, depth) of enclosing calls
        self._outer_steps: list = []       # the enclosing steps of the current step
        self._token = None            # set while open (see __enter__)

    # ---- producer side (called by algorithms through module helpers) ----
    # Calls and steps nest: an algorithm that calls another records the inner call as a
    # run of its own and goes on in its own run when the inner one ends; a step opened
    # inside another is a step of its own (after it in the run's list), and the kernels
    # enqueued after it ends belong to the outer step again.
    def begin_run(self, run: Run, snapshot_fn=None) -> Run:
        outer = None if self._run is self._stray and self._step is None else self._run
        self._outer_runs.append((outer, self._step, self._snapshot_fn,
                                 len(self._outer_steps)))
        self.runs.append(run)
        self._run, self._step, self._snapshot_fn = run, None, snapshot_fn
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
        if self._outer_runs:
            self._run, self._step, self._snapshot_fn, depth = self._outer_runs.pop()
            del self._outer_steps[depth:]
        else:
            self._run, self._step, self._snapshot_fn = None, None, None

    def _new_step(self, phase: str, region, pivot=None, flops=0.0, nbytes=0.0,
                  info=None) -> Step:
        run = self._run
        if run is None:       # a kernel enqueued outside any algorithm call
            run = self._stray = self._run = Run("other", "", (), "", "")
            self.runs.append(run)
        step = Step(run.algorithm, len(run.steps), phase, tuple(int(x) for x in region),
                    None if pivot is None else tuple(int(x) for x in pivot),
                    float(flops), float(nbytes), dict(info or {}))
        run.steps.append(step)
        return step

    def begin_step(self, phase: str, region, pivot=None, flops=0.0, nbytes=0.0,
                   **info) -> Step:
        step = self._new_step(phase, region, pivot, flops, nbytes, info)
        self._outer_steps.append(self._step)
        self._step = step
        return step

    def end_step(self) -> None:
        step, run = self._step, self._run
        if step is not None and run is not None and self.snapshots \
                and self._snapshot_fn is not None:
            run.snapshots.append(np.array(self._snapshot_fn(), copy=True))
            step.snapshot = len(run.snapshots) - 1
        self._step = self._outer_steps.pop() if self._outer_steps else None

    def add_kernel(self, name: str, event: cl.Event, global_size, local_size) -> None:
        step = self._step
        if step is None:        # a kernel outside any step gets a step of its own
            step = self._new_step("other", (0, 0, 0, 0))
        rec = KernelRecord(name, global_size=None if global_size is None else tuple(global_size),
                           local_size=None if local_size is None else tuple(local_size),
                           step=step.index)
        step.kernels.append(rec)
        self._pending.append((rec, event, self._run.device if self._run else "",
                              _device_labels.get()))

    def add_host_work(self, name: str, began: cl.Event, ended: cl.Event) -> None:
        """Record host work of the current step (device "host") between two markers:
        it started when ``began`` was enqueued and ended when ``ended`` was, both
        times on the device's profiling clock (CL_PROFILING_COMMAND_QUEUED)."""
        step = self._step
        if step is None:
            return
        rec = KernelRecord(name, step=step.index, device=HOST)
        step.kernels.append(rec)
        self._pending.append((rec, (began, ended), HOST, {}))

    def resolve(self) -> None:
        """Wait for the recorded events and read their profiling times (and, for a
        command on another device than its run's, that device's name)."""
        from ._device import device_info
        pending, self._pending = self._pending, []
        for rec, event, run_device, labels in pending:
            if isinstance(event, tuple):          # host work between two markers
                for e in event:
                    e.wait()
                rec.queued = rec.submit = rec.start = int(event[0].profile.queued)
                rec.end = max(int(event[1].profile.queued), rec.start)
                continue
            event.wait()
            prof = event.profile
            rec.queued, rec.submit = int(prof.queued), int(prof.submit)
            rec.start, rec.end = int(prof.start), int(prof.end)
            queue = event.command_queue
            name = labels.get(queue.device.int_ptr) or device_info(queue).name
            if name != run_device:
                rec.device = name

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
        """Chrome/Perfetto trace JSON: one process per run, one thread per device that
        ran its commands (the host's work a thread of its own), kernels as slices."""
        self.resolve()
        events = []
        t0 = min((k.queued for k in self.kernels), default=0)
        for pid, run in enumerate(self.runs):
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": f"{run.algorithm} {run.variant} "
                                            f"{'x'.join(map(str, run.shape))} {run.dtype}"}})
            tids = {"": 0}
            for k in run.kernels:
                tids.setdefault(k.device, len(tids))
            for name, tid in tids.items():
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": name or run.device or "device"}})
            for step in run.steps:
                for k in step.kernels:
                    events.append({
                        "name": k.name, "cat": step.phase, "ph": "X", "pid": pid,
                        "tid": tids[k.device],
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
        if _trace_hooks.active() is not None:
            raise RuntimeError("oclla.record() blocks cannot be nested (a recorder is already "
                               "open in this thread)")
        if self._token is not None:
            raise RuntimeError("this recorder is already open (in another thread?); each "
                               "thread opens its own oclla.record()")
        self._token = _trace_hooks.activate(self)
        return self

    def __exit__(self, *exc) -> None:
        token, self._token = self._token, None
        _trace_hooks.restore(token)
        self._run = self._step = self._stray = self._snapshot_fn = None
        self._outer_runs, self._outer_steps = [], []
        self.resolve()


def record(snapshots: bool = False) -> Recording:
    """A recorder of every oclla call in its block: ``with oclla.record() as rec: ...``.

    A recorder belongs to the thread (or asyncio task) that opened it: calls
    made in other threads are not captured, threads started inside the block
    do not inherit it, and each thread may record its own run at the same
    time.  Blocks cannot be nested within one thread.  Without a recorder the
    algorithms pay nothing: no synchronisation, no host copies.

    Parameters
    ----------
    snapshots : bool, default False
        Keep a host copy of the matrix after every step.  Each copy waits for
        the device and transfers the whole matrix: n² entries per step, so
        about n³ entries for an LU of order n (1 GiB of float64 at n = 512,
        where the viewer stops taking them); for teaching sizes only.
        Without snapshots a recording holds the steps and kernel times only.

    Returns
    -------
    Recording
        Not yet open: enter it with ``with``.

    Raises
    ------
    RuntimeError
        When the block is entered while another recorder is open in this
        thread (raised by ``with``, not by this call).
    """
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
    rec = _trace_hooks.active()
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
    rec = _trace_hooks.active()
    if rec is None:
        return _NULL
    return _step_ctx(rec, phase, region, pivot, flops, nbytes, info)


@contextmanager
def _host_ctx(rec: Recording, name: str, queue):
    import pyopencl as cl
    began = cl.enqueue_marker(queue)
    try:
        yield
    finally:
        rec.add_host_work(name, began, cl.enqueue_marker(queue))


def host_work(name: str, queue):
    """Context timing host work inside a step (a no-op unless a recorder is active).

    Recorded as a :class:`KernelRecord` of device ``"host"`` from the enqueue
    time of a marker on ``queue`` before the block to that of one after it, so
    host and device intervals share the device's profiling clock.
    """
    rec = _trace_hooks.active()
    if rec is None:
        return _NULL
    return _host_ctx(rec, name, queue)


def fail_last_run(error: BaseException) -> None:
    """Mark the latest run as failed when its failure is found after it ended (LU's info)."""
    rec = _trace_hooks.active()
    if rec is not None and rec.runs:
        rec.runs[-1].error = f"{type(error).__name__}: {error}"


def recording() -> bool:
    """True while a recorder is active (to skip building step metadata)."""
    return _trace_hooks.active() is not None


# ---- saving ----------------------------------------------------------------------

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


# ---- limits of what load_recording accepts --------------------------------------------
# A recording may come from anywhere: everything is checked against these limits from the
# zip directory and the arrays' .npy headers before anything is decompressed or allocated.

MAX_RECORDING_BYTES = 256 << 20
"""Default cap on a recording's arrays, uncompressed, all together (``max_bytes``)."""

MAX_SNAPSHOT_ORDER = 4096
"""Largest matrix a kept array may hold: at most ``MAX_SNAPSHOT_ORDER**2`` entries."""

MAX_ORDER = 1 << 31
"""Largest matrix dimension a run may declare; regions, pivots and swaps lie within it."""

MAX_META_BYTES = 32 << 20
"""Largest JSON metadata (steps, kernels, parameters) a recording may carry."""

MAX_JSON_DEPTH = 32
"""Deepest nesting of lists and objects in the metadata."""

MAX_NAME_CHARS = 1024
"""Longest name (algorithm, variant, phase, kernel, device, ...) in a recording."""

MAX_TEXT_CHARS = 1 << 18
"""Longest error message of a run (a build log may be part of it)."""

MAX_NS = 2 ** 63 - 1
"""Largest profiling time (ns)."""

_NPY_HEADER_BYTES = 1 << 16
_ARRAY_KINDS = "f"               # floating point: what a matrix snapshot holds
_ARRAY_NAMES = ("initial", "result")


class _Invalid(Exception):
    """One field of a recording's metadata breaks the format (message says which)."""


_READ_ERRORS = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, OSError, EOFError,
                ValueError, KeyError, NotImplementedError, RuntimeError, RecursionError,
                MemoryError, OverflowError, struct.error)
"""What reading a damaged zip, .npy or JSON member can raise (RuntimeError: encrypted)."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _brief(value) -> str:
    """A short description of ``value`` for an error message (never a deep repr)."""
    if isinstance(value, (dict, list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _open_regular(name: str, max_bytes: int):
    """Open ``name`` for reading if it is a regular file of a plausible size.

    Opened without blocking, so a FIFO or a device is refused at once
    instead of waiting for a writer or reading forever.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        raise RecordingError(f"cannot read recording {name}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RecordingError(f"{name} is not a regular file (a FIFO, device or directory "
                                 f"is not a recording)")
        limit = max_bytes + MAX_META_BYTES + (1 << 20)
        if st.st_size > limit:
            raise RecordingError(f"{name} is {st.st_size >> 20} MiB, larger than a recording "
                                 f"within the limit of {max_bytes >> 20} MiB "
                                 f"(load_recording(max_bytes=...))")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def load_recording(path, *, max_bytes: int = MAX_RECORDING_BYTES) -> Recording:
    """Read a file written by :meth:`Recording.save` (no OpenCL needed).

    Parameters
    ----------
    path : str or os.PathLike
        The recording (``.oclrec``, an npz file with JSON metadata).
    max_bytes : int, default MAX_RECORDING_BYTES (256 MiB)
        The most uncompressed array data to accept, in bytes.

    Returns
    -------
    Recording
        Its runs, steps, kernel times and snapshots.  What loads is
        consistent, so a viewer can show it without further checks.

    Raises
    ------
    RecordingError
        For anything that is not a sound recording: not a regular file, not
        a recording, truncated or corrupt, a newer format version, metadata
        of the wrong types or out of range (counts, indices, regions beyond
        :data:`MAX_ORDER`), or arrays beyond the limits (an array above
        :data:`MAX_SNAPSHOT_ORDER` squared entries, more than ``max_bytes``
        uncompressed in all; sizes are taken from the zip directory and the
        .npy headers before anything is decompressed), and a file that
        cannot be opened (no such file, no permission).
    """
    name = os.fspath(path)
    with _open_regular(name, max_bytes) as fh:
        try:
            with zipfile.ZipFile(fh) as zf:
                return _read_recording(zf, name, max_bytes)
        except RecordingError:
            raise
        except _Invalid as exc:
            raise RecordingError(_one_line(f"{name} is damaged: {exc}")) from None
        except _READ_ERRORS as exc:
            raise RecordingError(_one_line(f"{name} is not an oclla recording or is damaged "
                                           f"({type(exc).__name__}: {exc})")) from exc


def _read_recording(zf: zipfile.ZipFile, name: str, max_bytes: int) -> Recording:
    members = {info.filename: info for info in zf.infolist()}
    if len(members) != len(zf.infolist()) or "meta.npy" not in members:
        raise RecordingError(f"{name} is not an oclla recording")
    header = _read_meta(zf, members["meta.npy"])
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise RecordingError(f"{name} is not an oclla recording")
    version = header.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise RecordingError(f"{name} has recording format version {version}, newer than "
                             f"this oclla reads ({FORMAT_VERSION}); upgrade oclla")
    _check_int(version, "the format version", 1, FORMAT_VERSION)
    runs = _runs_from_json(header.get("runs"), len(members))
    arrays = _array_headers(zf, members, runs, max_bytes)
    rec = Recording(snapshots=False)
    for i, (run, flags) in enumerate(runs):
        _attach_arrays(zf, run, flags, i, arrays)
        rec.runs.append(run)
    rec.snapshots = any(r.snapshots for r in rec.runs)
    return rec


# ---- the .npy members ----

def _npy_header(fh, info: zipfile.ZipInfo, kinds: str = _ARRAY_KINDS) -> tuple:
    """(shape, fortran_order, dtype) of an open .npy member, its size checked against its
    header; ``kinds``: the dtype kinds allowed."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, _NPY_HEADER_BYTES)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh, _NPY_HEADER_BYTES)
    else:
        raise _Invalid(f"{info.filename}: unsupported .npy version {version}")
    if dtype.kind not in kinds or dtype.fields is not None or dtype.itemsize > 8 \
            or dtype.subdtype is not None:
        raise _Invalid(f"{info.filename} holds {dtype}, not real floating-point numbers")
    if len(shape) not in (1, 2) or any(d <= 0 for d in shape):
        raise _Invalid(f"{info.filename} has shape {shape}; an array of 1 or 2 non-empty "
                       f"dimensions is needed")
    entries = math.prod(shape)
    if entries > MAX_SNAPSHOT_ORDER ** 2:
        raise _Invalid(f"{info.filename} claims {'x'.join(map(str, shape))} entries, more "
                       f"than a {MAX_SNAPSHOT_ORDER}x{MAX_SNAPSHOT_ORDER} matrix "
                       f"(oclla.trace.MAX_SNAPSHOT_ORDER)")
    if info.file_size != fh.tell() + entries * dtype.itemsize:
        raise _Invalid(f"{info.filename}: the zip directory's size does not match the "
                       f"array's header")
    return shape, fortran, dtype


def _read_npy(zf: zipfile.ZipFile, info: zipfile.ZipInfo,
              kinds: str = _ARRAY_KINDS) -> np.ndarray:
    """The array in one .npy member (header checked again; CRC checked at its end)."""
    with zf.open(info) as fh:
        shape, fortran, dtype = _npy_header(fh, info, kinds)
        flat = np.empty(math.prod(shape), dtype=dtype)
        if fh.readinto(flat.view(np.uint8)) != flat.nbytes or fh.read(1):
            raise _Invalid(f"{info.filename} is truncated")
    return flat.reshape(shape, order="F" if fortran else "C")


def _read_meta(zf: zipfile.ZipFile, info: zipfile.ZipInfo):
    """The JSON header, its size and nesting checked before it is parsed."""
    if info.file_size > MAX_META_BYTES + _NPY_HEADER_BYTES:
        raise _Invalid(f"the metadata is {info.file_size >> 20} MiB, more than "
                       f"{MAX_META_BYTES >> 20} MiB (oclla.trace.MAX_META_BYTES)")
    raw = _read_npy(zf, info, "u")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise _Invalid("the metadata is not a byte string")
    header = json.loads(raw.tobytes().decode("utf-8"))
    _check_depth(header)
    return header


def _check_depth(value) -> None:
    """Refuse lists and objects nested deeper than MAX_JSON_DEPTH (without recursion)."""
    todo = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                raise _Invalid(f"the metadata nests deeper than {MAX_JSON_DEPTH} levels")
            children = item.values() if isinstance(item, dict) else item
            todo.extend((child, depth + 1) for child in children)


def _array_names(i: int, flags: dict) -> list:
    names = [f"run{i}_{what}" for what in _ARRAY_NAMES if flags[f"has_{what}"]]
    return names + [f"run{i}_snap{j}" for j in range(flags["n_snapshots"])]


def _array_headers(zf: zipfile.ZipFile, members: dict, runs: list, max_bytes: int) -> dict:
    """name -> ZipInfo of every array the runs declare, all sizes checked, nothing read yet."""
    wanted = [n for i, (_, flags) in enumerate(runs) for n in _array_names(i, flags)]
    files = {f"{n}.npy": n for n in wanted}
    extra = sorted(set(members) - set(files) - {"meta.npy"})
    missing = [f for f in files if f not in members]
    if missing or extra:
        raise _Invalid(f"the arrays do not match the metadata (missing {missing[:3]}, "
                       f"unexpected {extra[:3]})")
    total = sum(members[f].file_size for f in files)
    if total > max_bytes:
        raise _Invalid(f"the arrays take {total >> 20} MiB uncompressed, more than the limit "
                       f"of {max_bytes >> 20} MiB (load_recording(max_bytes=...))")
    out = {}
    for f, n in files.items():
        with zf.open(members[f]) as fh:
            _npy_header(fh, members[f])
        out[n] = members[f]
    return out


def _attach_arrays(zf: zipfile.ZipFile, run: Run, flags: dict, i: int, arrays: dict) -> None:
    """Read a run's arrays; all of one run share one shape and dtype."""
    read = {n: _read_npy(zf, arrays[n]) for n in _array_names(i, flags)}
    kinds = {(a.shape, a.dtype.str) for a in read.values()}
    if len(kinds) > 1:
        raise _Invalid(f"run {i}: its arrays differ in shape or dtype "
                       f"({', '.join(sorted(str(k[0]) for k in kinds))})")
    run.initial = read.get(f"run{i}_initial")
    run.result = read.get(f"run{i}_result")
    run.snapshots = [read[f"run{i}_snap{j}"] for j in range(flags["n_snapshots"])]


# ---- the JSON metadata ----

def _check_int(value, where: str, lo: int = 0, hi: int = MAX_NS) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _Invalid(f"{where} must be an integer from {lo} to {hi}, not {_brief(value)}")
    return value


def _check_number(value, where: str) -> float:
    """A finite real number >= 0 (flop and byte counts)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value <= 1e300:
        raise _Invalid(f"{where} must be a finite number >= 0, not {_brief(value)}")
    return float(value)


def _check_str(value, where: str, limit: int = MAX_NAME_CHARS) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise _Invalid(f"{where} must be a text of at most {limit} characters, "
                       f"not {_brief(value)}")
    return value


def _check_list(value, where: str, lo: int = 0, hi: int = MAX_NS) -> list:
    if not isinstance(value, list) or not lo <= len(value) <= hi:
        count = f"{lo}" if lo == hi else f"{lo} to {hi}"
        raise _Invalid(f"{where} must be a list of {count} items, not {_brief(value)}")
    return value


def _check_dict(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise _Invalid(f"{where} must be an object, not {_brief(value)}")
    return value


def _field(meta: dict, key: str, where: str):
    if key not in meta:
        raise _Invalid(f"{where} lacks {key!r}")
    return meta[key]


def _ints(value, where: str, length: int, hi: int = MAX_ORDER) -> tuple:
    items = _check_list(value, where, length, length)
    return tuple(_check_int(x, f"{where}[{k}]", 0, hi) for k, x in enumerate(items))


def _region(value, where: str) -> tuple:
    """(row0, row1, col0, col1), half-open, within MAX_ORDER."""
    r0, r1, c0, c1 = _ints(value, where, 4)
    if r1 < r0 or c1 < c0:
        raise _Invalid(f"{where} {[r0, r1, c0, c1]} ends before it starts")
    return r0, r1, c0, c1


def _sizes(value, where: str):
    if value is None:
        return None
    items = _check_list(value, where, 1, 3)
    return tuple(_check_int(x, f"{where}[{k}]") for k, x in enumerate(items))


def _info(value, where: str) -> dict:
    """A step's free-form info; the keys the viewer reads are checked."""
    info = _check_dict(value, where)
    for key in ("logical_region", "leaf"):
        if key in info:
            _region(info[key], f"{where}[{key!r}]")
    if "regions" in info:
        for k, r in enumerate(_check_list(info["regions"], f"{where}['regions']")):
            _region(r, f"{where}['regions'][{k}]")
    if "swaps" in info:
        for k, pair in enumerate(_check_list(info["swaps"], f"{where}['swaps']")):
            _ints(pair, f"{where}['swaps'][{k}]", 2, MAX_ORDER - 1)
    if "matrix" in info:
        _check_str(info["matrix"], f"{where}['matrix']")
    if "v_rows" in info:            # an update's rows of V: (first, end), half-open
        first, end = _ints(info["v_rows"], f"{where}['v_rows']", 2)
        if end < first:
            raise _Invalid(f"{where}['v_rows'] {[first, end]} ends before it starts")
    return info


def _kernel(meta, where: str, step_index: int) -> KernelRecord:
    meta = _check_dict(meta, where)
    f = lambda key: _field(meta, key, where)   # noqa: E731
    times = [_check_int(f(key), f"{where} {key}") for key in ("queued", "submit", "start", "end")]
    if f("step") != step_index:
        raise _Invalid(f"{where} claims step {_brief(f('step'))}, not its own {step_index}")
    return KernelRecord(_check_str(f("name"), f"{where} name"), *times,
                        _sizes(f("global_size"), f"{where} global_size"),
                        _sizes(f("local_size"), f"{where} local_size"), step_index,
                        _check_str(meta.get("device", ""), f"{where} device"))


def _step(meta, where: str, index: int, n_snapshots: int) -> Step:
    meta = _check_dict(meta, where)
    f = lambda key: _field(meta, key, where)   # noqa: E731
    if f("index") != index:
        raise _Invalid(f"{where} claims index {_brief(f('index'))}")
    pivot = None if f("pivot") is None else _ints(f("pivot"), f"{where} pivot", 2,
                                                   MAX_ORDER - 1)
    snapshot = f("snapshot")
    if snapshot is not None:
        _check_int(snapshot, f"{where} snapshot", 0, n_snapshots - 1)
    kernels = [_kernel(k, f"{where} kernel {j}", index)
               for j, k in enumerate(_check_list(f("kernels"), f"{where} kernels"))]
    return Step(_check_str(f("algorithm"), f"{where} algorithm"), index,
                _check_str(f("phase"), f"{where} phase"), _region(f("region"), f"{where} region"),
                pivot, _check_number(f("flops"), f"{where} flops"),
                _check_number(f("bytes"), f"{where} bytes"), _info(f("info"), f"{where} info"),
                kernels, snapshot)


def _metrics(value, where: str) -> dict:
    metrics = _check_dict(value, where)
    if "backward_error" in metrics:
        be = metrics["backward_error"]
        if isinstance(be, bool) or not isinstance(be, (int, float)):
            raise _Invalid(f"{where}['backward_error'] must be a number, not {_brief(be)}")
    if "source" in metrics:
        src = _check_dict(metrics["source"], f"{where}['source']")
        for key in ("family", "file"):
            if key in src:
                _check_str(src[key], f"{where}['source'][{key!r}]")
        if "seed" in src:
            _check_int(src["seed"], f"{where}['source']['seed']", -MAX_NS, MAX_NS)
    return metrics


def _run(meta, i: int, n_members: int) -> tuple:
    """(Run without its arrays, {has_initial, has_result, n_snapshots}) of run ``i``."""
    where = f"run {i}"
    meta = _check_dict(meta, where)
    f = lambda key: _field(meta, key, where)   # noqa: E731
    flags = {key: f(key) for key in ("has_initial", "has_result")}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise _Invalid(f"{where} {key} must be true or false, not {_brief(value)}")
    flags["n_snapshots"] = _check_int(f("n_snapshots"), f"{where} n_snapshots", 0, n_members)
    shape = tuple(_check_int(x, f"{where} shape[{k}]", 0, MAX_ORDER)
                  for k, x in enumerate(_check_list(f("shape"), f"{where} shape", 0, 3)))
    steps = [_step(s, f"{where} step {j}", j, flags["n_snapshots"])
             for j, s in enumerate(_check_list(f("steps"), f"{where} steps"))]
    error = f("error")
    if error is not None:
        _check_str(error, f"{where} error", MAX_TEXT_CHARS)
    run = Run(_check_str(f("algorithm"), f"{where} algorithm"),
              _check_str(f("variant"), f"{where} variant"), shape,
              _check_str(f("dtype"), f"{where} dtype"), _check_str(f("device"), f"{where} device"),
              _check_dict(f("params"), f"{where} params"), steps, error=error,
              metrics=_metrics(f("metrics"), f"{where} metrics"))
    return run, flags


def _runs_from_json(value, n_members: int) -> list:
    return [_run(meta, i, n_members)
            for i, meta in enumerate(_check_list(value, "the list of runs"))]
