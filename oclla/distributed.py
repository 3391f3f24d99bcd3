"""Tile Cholesky as a Dask task graph: tiles on Dask workers, each worker with its own device.

A matrix of order n in t x t tiles of order ``tile`` (the last row and column of
tiles narrower) is factored A = L·Lᵀ by the tasks of :mod:`oclla.tile_tasks`,
right-looking::

    for k = 0 .. t-1:
        potrf (k, k, k):  L[k][k] = chol(A[k][k])                   depends on syrk (k-1, k, k)
        trsm  (k, i, k):  L[i][k] = A[i][k]·L[k][k]⁻ᵀ      i > k     potrf k, gemm (k-1, i, k)
        syrk  (k, i, i):  A[i][i] −= L[i][k]·L[i][k]ᵀ      i > k     trsm (k, i), syrk (k-1, i)
        gemm  (k, i, j):  A[i][j] −= L[i][k]·L[j][k]ᵀ      i > j > k trsm (k, i), trsm (k, j),
                                                                     gemm (k-1, i, j)

:func:`task_graph` gives this DAG symbolically (the viewer draws it, no Dask
needed); :func:`cholesky` hands it to Dask as a graph of numpy tiles, so the
scheduler, the transfers between workers and the spilling of tiles are Dask's
(``dask.distributed``); nothing here schedules or moves data.  Every task runs its
arithmetic in OpenCL kernels on the worker's device: :class:`OpenCLDevice` (a
worker plugin) chooses it, else the worker makes its queue on first use from
``OCLLA_DEVICE`` (:func:`oclla.get_queue`).  Without a client the same graph runs
in this process on Dask's synchronous scheduler.

Each task copies its tiles to the device and its result back (numpy in, numpy
out: what a worker can hold, spill and send), so against the in-process tiled
factorization (:mod:`oclla.tiled`, whose panels stay on the device) a Dask run
pays per-task host transfers, serialisation between processes and the
scheduler's per-task cost (some hundreds of µs to a few ms).  Measured on PoCL
(a 2-core CPU shared by both workers and by other work: load average ~11, so
the times are rough), float64, tile 256, one warm ``LocalCluster(n_workers=2,
threads_per_worker=1, processes=True)``, best of three, the same factor
everywhere (backward error < 0.002)::

    n (tiles)      in-process tiled    Dask, this process    Dask, 2 workers
    512  (2 x 2)   0.12 s              0.22 s                0.34 s
    1024 (4 x 4)   0.45 s              1.01 s                1.41 s
    2048 (8 x 8)   3.5 s               2.6 s                 14.2 s

Two worker processes on two cores compete with each other's PoCL threads for
the same cores, so the cluster cannot be faster than one process here; the
measure is the overhead (tasks, transfers, serialisation), not a speed-up.

On a real cluster: one worker per device (``OCLLA_DEVICE=<index> dask worker
<scheduler> --nthreads 1`` on each host, or ``client.register_plugin(
OpenCLDevice(...))``), tiles large enough (thousands) that each task's flops
(2·tile³ for gemm) dwarf the scheduler's overhead and the tile's transfer.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import NamedTuple

import numpy as np

from . import tile_tasks
from ._device import get_queue
from ._validate import check_dtype, is_device_array
from .tiled import check_finite_rows

#: The task kinds in the order one step runs them.
KINDS = ("potrf", "trsm", "syrk", "gemm")

try:                                    # the plugin's base class, where Dask is installed
    from distributed.diagnostics.plugin import WorkerPlugin as _PluginBase
except ImportError:
    _PluginBase = object

#: Name of the worker plugin that holds each worker's queue.
PLUGIN = "oclla-device"


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


# ---- the device of each worker ------------------------------------------------------------

_queues: dict = {}
_lock = threading.Lock()


class OpenCLDevice(_PluginBase):
    """Dask worker plugin: the OpenCL queue of the worker's device, made at set-up.

    ``devices``: a device spec as :func:`oclla.get_queue` takes (index or name), or a
    list of them from which worker number w (its name in a ``LocalCluster``, where
    names are 0, 1, ...) takes entry w mod len; None: ``OCLLA_DEVICE`` or the default
    device.  Register with ``client.register_plugin(OpenCLDevice([0, 1]))``; a
    worker without it makes its queue from ``OCLLA_DEVICE`` on its first task.
    """

    name = PLUGIN
    idempotent = False

    def __init__(self, devices=None):
        self.devices = devices

    def setup(self, worker) -> None:
        spec = self.devices
        if isinstance(spec, (list, tuple)):
            if not spec:
                raise ValueError("devices must not be an empty list")
            name = worker.name
            number = name if isinstance(name, int) else abs(hash(str(name)))
            spec = spec[number % len(spec)]
        with _lock:
            _queues[worker.address] = get_queue(spec)

    def teardown(self, worker) -> None:
        with _lock:
            _queues.pop(worker.address, None)


def worker_queue():
    """The queue of the device of the Dask worker running the calling task (or of the
    default device outside a worker)."""
    try:
        from distributed import get_worker
        address = get_worker().address
    except (ImportError, ValueError):
        return get_queue()
    with _lock:
        queue = _queues.get(address)
        if queue is None:
            queue = _queues[address] = get_queue()
        return queue


def _potrf(a, base):
    return tile_tasks.potrf_tile(a, base=base, queue=worker_queue())


def _trsm(l_kk, a_ik):
    return tile_tasks.trsm_tile(l_kk, a_ik, queue=worker_queue())


def _syrk(l_ik, a_ii):
    return tile_tasks.syrk_tile(l_ik, a_ii, queue=worker_queue())


def _gemm(l_ik, l_jk, a_ij):
    return tile_tasks.gemm_tile(l_ik, l_jk, a_ij, queue=worker_queue())


def _zeros(h, w, dtype):
    return np.zeros((h, w), dtype)


# ---- the Dask graph -------------------------------------------------------------------------

def _graph(inputs, t: int, n: int, tile: int, dtype, token: str):
    """(Dask graph, key of each task, output tile keys ``(name, i, j)``) of the tile
    Cholesky; ``inputs(i, j)`` is the key (or Future) of input tile (i, j), i ≥ j."""
    def key(task):
        return (f"oclla-{task.kind}-{token}",) + task[1:]

    def current(i, j, k):               # tile (i, j) after the updates of steps < k
        if k == 0:
            return inputs(i, j)
        return key(TileTask("syrk" if i == j else "gemm", k - 1, i, j))

    dsk = {}
    for task in task_graph(t):
        kind, k, i, j = task
        if kind == "potrf":
            dsk[key(task)] = (_potrf, current(k, k, k), k * tile)
        elif kind == "trsm":
            dsk[key(task)] = (_trsm, key(TileTask("potrf", k, k, k)), current(i, k, k))
        elif kind == "syrk":
            dsk[key(task)] = (_syrk, key(TileTask("trsm", k, i, k)), current(i, i, k))
        else:
            dsk[key(task)] = (_gemm, key(TileTask("trsm", k, i, k)),
                              key(TileTask("trsm", k, j, k)), current(i, j, k))
    out = f"oclla-cholesky-{token}"
    for i in range(t):
        for j in range(t):
            if i == j:
                dsk[(out, i, j)] = key(TileTask("potrf", i, i, i))
            elif i > j:
                dsk[(out, i, j)] = key(TileTask("trsm", j, i, j))
            else:
                dsk[(out, i, j)] = (_zeros, min(tile, n - i * tile), min(tile, n - j * tile),
                                    np.dtype(dtype).str)
    return dsk, key, out


def _runs(records, token: str) -> list:
    """TaskRun of each record of Dask's task stream whose key is a task of ``token``."""
    runs = []
    for rec in records:
        key = rec.get("key")
        if not (isinstance(key, tuple) and isinstance(key[0], str)
                and key[0].endswith("-" + token) and key[0].startswith("oclla-")):
            continue
        kind = key[0].split("-")[1]
        if kind not in KINDS:
            continue
        for ss in rec.get("startstops", ()):
            if ss.get("action") == "compute":
                runs.append(TaskRun(TileTask(kind, *key[1:]), rec["worker"], ss["start"],
                                    ss["stop"]))
    return sorted(runs, key=lambda r: r.start)


class _Timer:
    """Dask local-scheduler callback that records each task's start and stop."""

    def __init__(self, token: str):
        from dask.callbacks import Callback
        self.records, starts = [], {}

        def pretask(key, dsk, state):
            starts[key] = time.time()

        def posttask(key, result, dsk, state, worker_id):
            self.records.append({"key": key, "worker": "local", "startstops": (
                {"action": "compute", "start": starts.pop(key), "stop": time.time()},)})
        self.callback = Callback(pretask=pretask, posttask=posttask)


def _validated(a, tile, check_finite: bool):
    """(array, n, dtype, tile) after the checks of :func:`cholesky`."""
    if isinstance(tile, bool) or not isinstance(tile, (int, np.integer)) or tile < 1:
        raise ValueError(f"tile must be a positive integer, got {tile!r}")
    if is_device_array(a):
        raise TypeError("a must be a numpy array or a dask array (tiles travel through "
                        "host memory between workers), got a pyopencl array")
    lazy = _is_dask_array(a)
    arr = a if lazy else np.asarray(a)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"a must be square, got shape {arr.shape}")
    if any(np.isnan(s) for s in arr.shape):
        raise ValueError("a dask array of unknown shape; call compute_chunk_sizes() first")
    dtype = check_dtype(arr.dtype)
    if check_finite and not lazy:
        check_finite_rows(arr)
    return arr, int(arr.shape[0]), dtype, int(tile), lazy


def _is_dask_array(a) -> bool:
    """Whether ``a`` is a dask array (never so where dask.array was not imported)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(a, da.Array)


def cholesky(a, *, lower: bool = False, tile: int = 256, client=None,
             check_finite: bool = True, runs: list | None = None):
    """The Cholesky factor of a symmetric positive definite matrix, by tile tasks on Dask.

    Parameters
    ----------
    a : (n, n) numpy array or dask array, float32 or float64
        Only the lower triangle is read (every tile on and below the diagonal).
        Never written.
    lower : bool
        Return L with A = L·Lᵀ (``True``) or U = Lᵀ with A = Uᵀ·U (default, as
        :func:`oclla.cholesky`); the other triangle is zero.
    tile : int
        Tile order (a dask array is rechunked to it).
    client : distributed.Client, optional
        Run on its cluster (each worker on its device: :class:`OpenCLDevice`);
        None: Dask's synchronous scheduler in this process, on the default device.
    check_finite : bool
        Reject NaN/Inf (numpy input: the whole matrix, before any task; dask input:
        each tile as a task reads it).
    runs : list, optional
        Receives a :class:`TaskRun` per task (numpy input only: the run is over
        when this returns).

    Returns
    -------
    numpy.ndarray or dask.array.Array
        For numpy input the factor (computed); for a dask array a dask array of
        the factor in ``tile`` x ``tile`` chunks, not yet computed.

    Raises
    ------
    ValueError
        Not square, NaN/Inf, a tile that is not a positive integer.
    TypeError
        A dtype other than float32/float64, a pyopencl array.
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite" (LAPACK's order), from
        the task that meets it (for a dask array, when computed).
    oclla.DeviceError
        float64 on a worker's device without ``cl_khr_fp64``.
    ImportError
        Dask is not installed (``pip install oclla[dask]``).
    """
    arr, n, dtype, tile, lazy = _validated(a, tile, check_finite)
    try:
        import dask
        from dask.base import tokenize
        from dask.highlevelgraph import HighLevelGraph
    except ImportError as err:
        raise ImportError("oclla.distributed needs Dask: pip install 'oclla[dask]'") from err
    if lazy and runs is not None:
        raise ValueError("runs is recorded only for a numpy input (a dask result is lazy)")
    t = -(-n // tile)
    chunks = (tuple(min(tile, n - p * tile) for p in range(t)),) * 2
    token = tokenize(arr if lazy else id(arr), n, tile, dtype.str, time.time_ns())
    if lazy:
        import dask.array as da
        source = arr.rechunk((tile, tile))
        dsk, _, out = _graph(lambda i, j: (source.name, i, j), t, n, tile, dtype, token)
        graph = HighLevelGraph.from_collections(f"oclla-cholesky-{token}", dsk,
                                                dependencies=[source])
        factor = da.Array(graph, out, chunks, dtype=dtype)
        return factor if lower else factor.T
    host = np.ascontiguousarray(arr)
    blocks = {(i, j): host[i * tile:(i + 1) * tile, j * tile:(j + 1) * tile]
              for i in range(t) for j in range(i + 1)}
    if client is not None and blocks:
        futures = dict(zip(blocks, client.scatter(list(blocks.values()), hash=False)))
        dsk, _, out = _graph(lambda i, j: futures[(i, j)], t, n, tile, dtype, token)
    else:
        dsk, _, out = _graph(lambda i, j: (f"oclla-a-{token}", i, j), t, n, tile, dtype,
                             token)
        dsk.update({(f"oclla-a-{token}", i, j): b for (i, j), b in blocks.items()})
    keys = [(out, i, j) for i in range(t) for j in range(i + 1)]
    if client is not None:
        from distributed import get_task_stream
        with get_task_stream(client) as stream:
            tiles = client.get(dsk, keys)
        records = stream.data
    else:
        timer = _Timer(token)
        with timer.callback:
            tiles = dask.get(dsk, keys)
        records = timer.records
    if runs is not None:
        runs.extend(_runs(records, token))
    factor = np.zeros((n, n), dtype)
    for (_, i, j), block in zip(keys, tiles):
        factor[i * tile:i * tile + block.shape[0], j * tile:j * tile + block.shape[1]] = block
    return factor if lower else np.ascontiguousarray(factor.T)
