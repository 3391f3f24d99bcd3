"""A tiled factorization as tasks (no Qt): what the tile-task view draws.

A tile Cholesky of order n in tiles of order ``tile`` is the DAG of
:func:`oclla.tile_graph.task_graph` (potrf, trsm, syrk, gemm tasks, each
writing tile (i, j) at step k).  A :class:`TileRun` is that DAG with each task's
run: the lane it ran on (a Dask worker, i.e. a device, or ``"local"``) and its
start and stop in seconds from the first task's start.  From it:

* :meth:`TileRun.tile_state` — at a time, each tile's last finished task (kind
  and step) and the tasks running then: the tile grid's colours;
* :func:`dag_layout` — each task's column (its depth: the longest chain of
  tasks before it) and row within the column: the DAG drawing;
* :meth:`TileRun.lanes` — the lanes and, per lane, its tasks in time: the
  StarVZ-style chart (one lane per device, the step k on colour).

:func:`local_run` factors a seeded SPD matrix by :func:`oclla.distributed.cholesky`
in this process (Dask's synchronous scheduler, one lane) and returns its run;
:func:`from_runs` takes the :class:`oclla.tile_graph.TaskRun` list any run
gives (a cluster's, with one lane per worker).

:func:`from_trace` reads the same from a recorded run of the library's own tiled
code (``oclla.cholesky`` or ``oclla.lu_factor`` on a :class:`oclla.TiledMatrix`,
:func:`oclla.multi_device.cholesky`, :func:`oclla.multi_device_lu.lu_factor`):
each traced step with kernels is a task of the kind of its phase, covering the
tiles of its region; its lane is the device that ran most of its kernel time
(one lane per device, :func:`oclla.trace.device_labels`), its start and stop its
kernels' first start and last end; its step k is that of the diagonal
factorization ("panel" step) last begun (the updates a right-looking step
applies share its k; a left-looking panel's updates come before it, with k − 1);
the task graph is the recorded order: a task needs the last earlier task that
wrote any of its tiles and, unless it is the panel itself, any tile of step k's
panel (block column k from the diagonal down) — the trace names the tiles a
step writes, not those it reads, and every step of these algorithms reads the
panel of its k, save a left-looking update by an earlier panel than k's.  A recording is untrusted:
:func:`tile_run` checks the tile size, the order and every region against them
before anything is allocated, and raises :class:`oclla.RecordingError`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oclla.tile_graph import KINDS, TaskRun, TileTask, task_graph
from oclla.trace import HOST, MAX_ORDER, KernelRecord, RecordingError, Run, Step

#: Code of "no task has written this tile yet" in :meth:`TileRun.tile_state`.
UNTOUCHED = -1

PASSIVE = ("send", "zero", "laswp")
"""Traced phases that copy, clear or swap entries without arithmetic: a tile keeps the
colour of its last arithmetic task (they still order the task graph)."""


@dataclass(frozen=True)
class TileRun:
    """The tasks of one tile Cholesky with their lanes and times (module docstring).

    ``tasks`` follow :func:`oclla.tile_graph.task_graph`'s order; ``lane``,
    ``start`` and ``stop`` are per task (times in seconds from the first start).
    A run read from a trace (:func:`from_trace`) also has ``kinds`` (its phases),
    ``cover`` ((tasks, 4) int64: the tiles i0:i1, j0:j1 each task writes),
    ``edges`` ((from, to) task pairs) and ``steps`` (each task's step index).
    """

    n: int
    tile: int
    tasks: tuple
    lane: tuple
    start: np.ndarray
    stop: np.ndarray
    kinds: tuple = KINDS
    cover: np.ndarray | None = None
    edges: tuple | None = None
    steps: np.ndarray | None = None

    @property
    def t(self) -> int:
        """Tiles per side."""
        return -(-self.n // self.tile)

    @property
    def duration(self) -> float:
        return float(self.stop.max()) if self.tasks else 0.0

    def lanes(self) -> dict:
        """``{lane: [task index, ...]}`` in order of first use, each list by start time."""
        out: dict = {}
        for idx in np.argsort(self.start, kind="stable"):
            out.setdefault(self.lane[idx], []).append(int(idx))
        return out

    def tile_state(self, time: float) -> tuple[np.ndarray, np.ndarray, list]:
        """(kind, step, running) at ``time``: t x t int arrays, each tile's last task
        (not one of :data:`PASSIVE`) finished by then (index into ``kinds``, or
        :data:`UNTOUCHED`) and that task's step k (-1 where none); the indices of the
        tasks running at ``time`` (started, not finished)."""
        kind = np.full((self.t, self.t), UNTOUCHED, np.int64)
        step = np.full((self.t, self.t), -1, np.int64)
        done = np.flatnonzero(self.stop <= time)
        for idx in done[np.argsort(self.stop[done], kind="stable")]:
            task = self.tasks[idx]
            if task.kind in PASSIVE:
                continue
            i0, i1, j0, j1 = (self.cover[idx] if self.cover is not None
                              else (task.i, task.i + 1, task.j, task.j + 1))
            kind[i0:i1, j0:j1] = self.kinds.index(task.kind)
            step[i0:i1, j0:j1] = task.k
        running = np.flatnonzero((self.start <= time) & (self.stop > time)).tolist()
        return kind, step, running

    def graph(self) -> tuple[list, np.ndarray, np.ndarray, list]:
        """:func:`dag_layout` of this run: its own edges for a traced run, else the
        tile Cholesky's DAG."""
        if self.edges is None:
            return dag_layout(self.t)
        return list(self.tasks), *_layout(len(self.tasks), list(self.edges))

    def time_at(self, position: int) -> float:
        """Time when the tasks of the first ``position`` steps of a traced run have all
        stopped (0 before any; the end for a run without steps)."""
        if self.steps is None:
            return self.duration
        before = self.steps < position
        return float(self.stop[before].max()) if before.any() else 0.0


def from_runs(n: int, tile: int, runs) -> TileRun:
    """The :class:`TileRun` of the :class:`~oclla.tile_graph.TaskRun` list of a tile
    Cholesky of order n in tiles of ``tile``; ValueError unless it holds every task
    of the DAG exactly once with stop ≥ start."""
    if n < 0 or tile < 1:
        raise ValueError(f"need n >= 0 and tile >= 1, got n={n}, tile={tile}")
    order = list(task_graph(-(-n // tile)))
    by_task = {}
    for r in runs:
        r = TaskRun(TileTask(*r.task), str(r.lane), float(r.start), float(r.stop))
        if r.task in by_task:
            raise ValueError(f"task {r.task} ran twice")
        if not r.stop >= r.start:
            raise ValueError(f"task {r.task} stops before it starts")
        by_task[r.task] = r
    if set(by_task) != set(order):
        missing = set(order) - set(by_task)
        extra = set(by_task) - set(order)
        raise ValueError(f"the runs are not the tasks of a {n} x {n} matrix in tiles of "
                         f"{tile}: {len(missing)} missing, {len(extra)} not in its DAG")
    t0 = min((r.start for r in by_task.values()), default=0.0)
    return TileRun(n, tile, tuple(order), tuple(by_task[x].lane for x in order),
                   np.array([by_task[x].start - t0 for x in order]),
                   np.array([by_task[x].stop - t0 for x in order]))


def dag_layout(t: int) -> tuple[list, np.ndarray, np.ndarray, list]:
    """(tasks, column, row, edges) of the DAG of t x t tiles: each task's column is
    its depth (1 + the largest column of the tasks it needs, 0 without any), rows
    number the tasks of a column from 0 in DAG order; ``edges`` are (from, to)
    index pairs."""
    graph = task_graph(t)
    tasks = list(graph)
    index = {x: p for p, x in enumerate(tasks)}
    edges = [(index[need], p) for p, task in enumerate(tasks) for need in graph[task]]
    return tasks, *_layout(len(tasks), edges)


def _layout(count: int, edges: list) -> tuple[np.ndarray, np.ndarray, list]:
    """(column, row, edges) of ``count`` tasks whose edges each go to a later task."""
    column = np.zeros(count, np.int64)
    for a, b in sorted(edges, key=lambda e: e[1]):     # every task after those it needs
        column[b] = max(column[b], column[a] + 1)
    row = np.zeros(count, np.int64)
    seen: dict = {}
    for p, c in enumerate(column.tolist()):
        row[p] = seen.get(c, 0)
        seen[c] = row[p] + 1
    return column, row, edges


# ---- runs of the library's tiled code, from a recording --------------------------------

TILED_VARIANTS = ("tiled", "multi_device", "tasks")
"""Trace variants of ``cholesky`` and ``lu`` runs made on tiles ("tasks": a tile-task run
of :mod:`oclla.distributed` kept by :func:`as_trace_run`)."""

DIAGONAL = ("panel", "potrf")
"""The phases of a diagonal factorization: the step k numbers them."""

MAX_TILES = 1024
"""Most tiles per side of a recorded tile run (a t x t grid is allocated)."""


def is_tiled(run) -> bool:
    """The run is a tile Cholesky or LU of the library (:data:`TILED_VARIANTS`)."""
    return run.algorithm in ("cholesky", "lu") and run.variant in TILED_VARIANTS


def _lane_of(step, default: str) -> str:
    busy: dict = {}
    for k in step.kernels:
        if k.device != HOST:
            name = k.device or default
            busy[name] = busy.get(name, 0) + k.duration_ns
    return max(busy, key=busy.get)


def from_trace(run) -> TileRun:
    """The :class:`TileRun` of a recorded tile run (module docstring); RecordingError
    for a tile size, an order or a region that does not fit."""
    tile = run.params.get("tile") if isinstance(run.params, dict) else None
    if type(tile) is not int or not 1 <= tile < MAX_ORDER:
        raise RecordingError(f"tile run: tile must be an integer in [1, {MAX_ORDER}), "
                             f"got {str(tile)[:40]}")
    if len(run.shape) != 2 or run.shape[0] != run.shape[1]:
        raise RecordingError(f"tile run: needs a square shape, got {tuple(run.shape)}")
    n = int(run.shape[0])
    t = -(-n // tile)
    if t > MAX_TILES:
        raise RecordingError(f"tile run: {t} tiles a side, more than {MAX_TILES}")
    tasks, lanes, start, stop, cover, steps = [], [], [], [], [], []
    panels = 0
    for step in run.steps:
        panels += step.phase in DIAGONAL
        k = max(panels - 1, 0)
        if "k" in step.info:                  # a tile-task run's own step
            k = step.info["k"]
            if type(k) is not int or not 0 <= k < t:
                raise RecordingError(f"tile run: step {step.index}'s k must be an integer "
                                     f"in [0, {t})")
        r0, r1, c0, c1 = step.region
        if not (0 <= r0 <= r1 <= n and 0 <= c0 <= c1 <= n):
            raise RecordingError(f"tile run: step {step.index}'s region {step.region} "
                                 f"is outside the {n} x {n} matrix")
        timed = [x for x in step.kernels if x.device != HOST]
        if any(x.end < x.start for x in timed):
            raise RecordingError(f"tile run: a kernel of step {step.index} ends before "
                                 f"it starts")
        if timed:
            box = (r0 // tile, max(-(-r1 // tile), r0 // tile + 1),
                   c0 // tile, max(-(-c1 // tile), c0 // tile + 1))
            tasks.append(TileTask(step.phase, k, min(box[0], t - 1), min(box[2], t - 1)))
            lanes.append(_lane_of(step, run.device or "device"))
            start.append(min(x.start for x in timed))
            stop.append(max(x.end for x in timed))
            cover.append(box)
            steps.append(step.index)
    t0 = min(start, default=0)
    cover_arr = np.array(cover, np.int64).reshape(-1, 4)
    writer = np.full((t, t), -1, np.int64)
    edges = []
    for p, (i0, i1, j0, j1) in enumerate(cover_arr.tolist()):   # symbolic: who wrote last
        k = tasks[p].k
        read = writer[k:, k] if tasks[p].kind not in DIAGONAL and k < t else writer[:0, 0]
        need = np.union1d(writer[i0:i1, j0:j1], read)
        edges += [(int(w), p) for w in need if w >= 0]
        writer[i0:i1, j0:j1] = p
    kinds = tuple(dict.fromkeys(task.kind for task in tasks))
    return TileRun(n, tile, tuple(tasks), tuple(lanes),
                   (np.array(start, np.float64) - t0) * 1e-9,
                   (np.array(stop, np.float64) - t0) * 1e-9,
                   kinds, cover_arr, tuple(edges), np.array(steps, np.int64))


def as_trace_run(run: TileRun, dtype: str = "float64") -> Run:
    """``run`` (a tile-task run, e.g. :func:`from_runs` of a Dask cluster's) as a traced
    Cholesky run that a recording keeps (variant "tasks"): one step per task in order
    of start, its tile as the region, its step k in ``info``, one record on its lane
    for its time; :func:`from_trace` reads it back."""
    steps = []
    for p in np.argsort(run.start, kind="stable").tolist():
        task, tile, n = run.tasks[p], run.tile, run.n
        a, b = (int(round(x * 1e9)) for x in (run.start[p], run.stop[p]))
        steps.append(Step("cholesky", len(steps), task.kind,
                          (task.i * tile, min(n, task.i * tile + tile),
                           task.j * tile, min(n, task.j * tile + tile)),
                          info={"k": int(task.k)},
                          kernels=[KernelRecord(task.kind, a, a, a, b, step=len(steps),
                                                device=run.lane[p])]))
    return Run("cholesky", "tasks", (run.n, run.n), str(np.dtype(dtype)),
               run.lane[0] if run.lane else "", {"lower": True, "tile": run.tile}, steps)


def tile_run(run) -> TileRun | None:
    """A recorded tile run's checked :class:`TileRun` (cached on the run); None for any
    other run.  RecordingError if it does not fit its tiles."""
    if not is_tiled(run):
        return None
    cached = run.__dict__.get("_tile_run")
    if cached is None:
        cached = run.__dict__["_tile_run"] = from_trace(run)
    return cached


def local_run(n: int, tile: int, dtype=np.float64, seed: int = 0,
              warmup: bool = True) -> tuple[TileRun, float]:
    """(run, backward error) of the tile Cholesky of a seeded SPD matrix of order n,
    run in this process on the default device (one lane, ``"local"``); ``warmup``
    first factors its leading 2·tile + 1 rows untimed, so the run's first tasks do
    not include building the kernels."""
    from oclla import accuracy
    from oclla.distributed import cholesky
    x = np.random.default_rng(seed).standard_normal((n, n))
    a = (x @ x.T / max(n, 1) + np.eye(n)).astype(dtype)
    if warmup:
        cholesky(a[:2 * tile + 1, :2 * tile + 1], lower=True, tile=tile)
    runs: list = []
    factor = cholesky(a, lower=True, tile=tile, runs=runs)
    return from_runs(n, tile, runs), accuracy.cholesky_backward_error(a, factor, True)
