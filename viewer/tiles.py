"""A tiled factorization as tasks (no Qt): what the tile-task view draws.

A tile Cholesky of order n in tiles of order ``tile`` is the DAG of
:func:`oclla.distributed.task_graph` (potrf, trsm, syrk, gemm tasks, each
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
:func:`from_runs` takes the :class:`oclla.distributed.TaskRun` list any run
gives (a cluster's, with one lane per worker).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oclla.distributed import KINDS, TaskRun, TileTask, task_graph

#: Code of "no task has written this tile yet" in :meth:`TileRun.tile_state`.
UNTOUCHED = -1


@dataclass(frozen=True)
class TileRun:
    """The tasks of one tile Cholesky with their lanes and times (module docstring).

    ``tasks`` follow :func:`oclla.distributed.task_graph`'s order; ``lane``,
    ``start`` and ``stop`` are per task (times in seconds from the first start).
    """

    n: int
    tile: int
    tasks: tuple
    lane: tuple
    start: np.ndarray
    stop: np.ndarray

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
        finished by then (index into :data:`oclla.distributed.KINDS`, or
        :data:`UNTOUCHED`) and that task's step k (-1 where none); the indices of the
        tasks running at ``time`` (started, not finished)."""
        kind = np.full((self.t, self.t), UNTOUCHED, np.int64)
        step = np.full((self.t, self.t), -1, np.int64)
        done = np.flatnonzero(self.stop <= time)
        for idx in done[np.argsort(self.stop[done], kind="stable")]:
            task = self.tasks[idx]
            kind[task.i, task.j] = KINDS.index(task.kind)
            step[task.i, task.j] = task.k
        running = np.flatnonzero((self.start <= time) & (self.stop > time)).tolist()
        return kind, step, running


def from_runs(n: int, tile: int, runs) -> TileRun:
    """The :class:`TileRun` of the :class:`~oclla.distributed.TaskRun` list of a tile
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
    column = np.zeros(len(tasks), np.int64)
    edges = []
    for p, task in enumerate(tasks):          # every task after those it needs
        for need in graph[task]:
            edges.append((index[need], p))
            column[p] = max(column[p], column[index[need]] + 1)
    row = np.zeros(len(tasks), np.int64)
    seen: dict = {}
    for p, c in enumerate(column.tolist()):
        row[p] = seen.get(c, 0)
        seen[c] = row[p] + 1
    return tasks, column, row, edges


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
