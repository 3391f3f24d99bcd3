"""The task graph of a tile Cholesky (no scheduler): its tasks, their dependencies and flops.

A matrix of order n in t x t tiles of order ``tile``; step k runs POTRF of the
diagonal tile (k, k), TRSM of the tiles (i, k) below it, SYRK of the diagonal
tiles (i, i) and GEMM of the tiles (i, j), k < j < i, after it.  Used by
:mod:`oclla.distributed` (which runs it on Dask) and by the viewer's tile-task
view; it imports no scheduler.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["KINDS", "TileTask", "TaskRun", "task_graph", "task_flops"]

#: The task kinds in the order one step runs them.
KINDS = ("potrf", "trsm", "syrk", "gemm")


class TileTask(NamedTuple):
    """One task of the tile Cholesky: step ``k`` writes tile (i, j) (module docstring)."""

    kind: str
    k: int
    i: int
    j: int


class TaskRun(NamedTuple):
    """A task as it ran: where (``lane``, a worker's address or ``"local"``) and when
    (``start``, ``stop`` in seconds of the host's clock)."""

    task: TileTask
    lane: str
    start: float
    stop: float


def task_graph(t: int) -> dict:
    """The DAG of a tile Cholesky of t x t tiles: ``{TileTask: [TileTask it needs]}``,
    tasks in an order that respects the dependencies (step by step)."""
    if t < 0:
        raise ValueError(f"the tile count must be non-negative, got {t}")
    graph = {}
    for k in range(t):
        graph[TileTask("potrf", k, k, k)] = [TileTask("syrk", k - 1, k, k)] if k else []
        for i in range(k + 1, t):
            graph[TileTask("trsm", k, i, k)] = [TileTask("potrf", k, k, k)] + (
                [TileTask("gemm", k - 1, i, k)] if k else [])
        for i in range(k + 1, t):
            graph[TileTask("syrk", k, i, i)] = [TileTask("trsm", k, i, k)] + (
                [TileTask("syrk", k - 1, i, i)] if k else [])
            for j in range(k + 1, i):
                graph[TileTask("gemm", k, i, j)] = [
                    TileTask("trsm", k, i, k), TileTask("trsm", k, j, k)] + (
                    [TileTask("gemm", k - 1, i, j)] if k else [])
    return graph


def task_flops(task: TileTask, n: int, tile: int) -> float:
    """Flops of one task of the tile Cholesky of order n in tiles of order ``tile``."""
    def width(p):
        return min(tile, n - p * tile)
    m, kb = width(task.i), width(task.k)
    if task.kind == "potrf":
        return m ** 3 / 3.0 + m ** 2 / 2.0 + m / 6.0
    if task.kind == "trsm":
        return float(m) * kb * kb
    if task.kind == "syrk":
        return float(kb) * m * (m + 1)
    return 2.0 * m * width(task.j) * kb
