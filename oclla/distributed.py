"""Tile Cholesky and LU as Dask task graphs: tiles on Dask workers, each worker with its own device.

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
scheduler's per-task cost (some hundreds of µs to a few ms).  Measured by
``benchmarks/dask_overhead.py`` on PoCL (a 2-core CPU shared by both workers and
by other work, load average ~9, so the times are rough), float64, tile 256, one
warm ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``, best of
three, the same factor everywhere (backward error < 0.002, the two Dask runs
equal bit for bit)::

    n (tiles)      in-process tiled    Dask, this process    Dask, 2 workers
    512  (2 x 2)   0.031 s             0.058 s               0.36 s
    1024 (4 x 4)   0.121 s             0.178 s               0.61 s
    2048 (8 x 8)   0.88 s              1.20 s                4.5 s

The graph itself costs little (this process: +40-90 %, mostly the per-task copies
to and from the device); two worker processes add serialisation, the transfers
of tiles between them and the scheduler's round trips (0.3-3.7 s here), and on
two shared cores they compete with each other's PoCL threads, so the cluster
cannot be faster than one process here: the measure is the overhead, not a
speed-up.

:func:`lu_factor` does the same for LU with partial pivoting, one task per block
column and step (the panel's factorization down the whole column, then its
interchanges, TRSM and GEMM on each other block column).

On a real cluster: one worker per device (``OCLLA_DEVICE=<index> dask worker
<scheduler> --nthreads 1`` on each host, or ``client.register_plugin(
OpenCLDevice(...))``), tiles large enough (thousands) that each task's flops
(2·tile³ for gemm) dwarf the scheduler's overhead and the tile's transfer.
"""

from __future__ import annotations

import sys
import threading
import time

import warnings

import numpy as np
import pyopencl.array as cl_array

from . import tile_tasks
from ._device import driver_errors, get_queue
from ._programs import int_zeros
from ._validate import check_dtype, check_fp64, is_device_array
from .blas import gemm, laswp, trsm, view_of
from .tiled import check_finite_rows
from .tiled_lu import factor_panel
from .tile_graph import KINDS, TaskRun, TileTask, task_flops, task_graph

try:                                    # the plugin's base class, where Dask is installed
    from distributed.diagnostics.plugin import WorkerPlugin as _PluginBase
except ImportError:
    _PluginBase = object

#: Name of the worker plugin that holds each worker's queue.
PLUGIN = "oclla-device"


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
    """(Dask graph, name of the output tiles' keys ``(name, i, j)``) of the tile
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
    return dsk, out


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

    def __init__(self):
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


@driver_errors
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
        Unused for a dask array (compute the result where you like).
    check_finite : bool
        Scan a numpy input for NaN/Inf before any task (the whole matrix).  The
        tile tasks reject NaN/Inf in every tile they read whatever this says (for
        a dask array, that is the check).
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
        dsk, out = _graph(lambda i, j: (source.name, i, j), t, n, tile, dtype, token)
        graph = HighLevelGraph.from_collections(f"oclla-cholesky-{token}", dsk,
                                                dependencies=[source])
        factor = da.Array(graph, out, chunks, dtype=dtype)
        return factor if lower else factor.T
    host = np.ascontiguousarray(arr)
    blocks = {(i, j): host[i * tile:(i + 1) * tile, j * tile:(j + 1) * tile]
              for i in range(t) for j in range(i + 1)}
    if client is not None and blocks:
        futures = dict(zip(blocks, client.scatter(list(blocks.values()), hash=False)))
        dsk, out = _graph(lambda i, j: futures[(i, j)], t, n, tile, dtype, token)
    else:
        dsk, out = _graph(lambda i, j: (f"oclla-a-{token}", i, j), t, n, tile, dtype,
                             token)
        dsk.update({(f"oclla-a-{token}", i, j): b for (i, j), b in blocks.items()})
    keys = [(out, i, j) for i in range(t) for j in range(i + 1)]
    if client is not None:
        from distributed import get_task_stream
        with get_task_stream(client) as stream:
            tiles = client.get(dsk, keys)
        records = stream.data
    else:
        timer = _Timer()
        with timer.callback:
            tiles = dask.get(dsk, keys)
        records = timer.records
    if runs is not None:
        runs.extend(_runs(records, token))
    factor = np.zeros((n, n), dtype)
    for (_, i, j), block in zip(keys, tiles):
        factor[i * tile:i * tile + block.shape[0], j * tile:j * tile + block.shape[1]] = block
    return factor if lower else np.ascontiguousarray(factor.T)


# ---- LU with partial pivoting: block-column tasks -----------------------------------------

def _panel_lu(column, k0):
    """Task: P·A = L·U of rows k0.. of the block column ``column`` (n x w, m = n − k0
    ≥ w rows) on the worker's device, by the blocked LU's panel kernels.  Returns
    (column with those rows factored, pivots 0-based relative to row k0)."""
    queue = worker_queue()
    check_fp64(queue, column.dtype)
    rows = np.ascontiguousarray(column[k0:])
    m, w = rows.shape
    dev = cl_array.to_device(queue, rows)
    piv = cl_array.to_device(queue, np.arange(w, dtype=np.int32))
    factor_panel(queue, dev.base_data, m, w, piv, int_zeros(queue), column.dtype)
    out = np.array(column)
    out[k0:] = dev.get()
    return out, piv.get()


def _lu_apply(column, panel, k0, update):
    """Task: the row interchanges of step k (rows k0..) applied to the block column
    ``column``; with ``update`` (a column right of the panel) also
    U = L_kk⁻¹·C[k0:k0+w] (unit lower TRSM) and C[k0+w:] −= L[k0+w:, k]·U (GEMM), on
    the worker's device."""
    queue = worker_queue()
    factored, piv = panel
    rows = np.ascontiguousarray(column[k0:])
    m, wj = rows.shape
    w = piv.size
    dev = cl_array.to_device(queue, rows)
    dpiv = cl_array.to_device(queue, piv)
    laswp(queue, view_of(dev), 0, wj, dpiv.data, 0, w, dtype=rows.dtype)
    if update:
        lk = cl_array.to_device(queue, np.ascontiguousarray(factored[k0:]))
        trsm(queue, w, wj, view_of(lk), view_of(dev), dtype=rows.dtype, left=True,
             lower=True, unit=True)
        if m > w:
            gemm(queue, m - w, wj, w, -1.0, view_of(lk).at(w, 0), view_of(dev), 1.0,
                 view_of(dev).at(w, 0), dtype=rows.dtype)
    out = np.array(column)
    out[k0:] = dev.get()
    return out


def _factored(panel):
    """The block column of a panel task's (column, pivots)."""
    return panel[0]


def _lu_graph(inputs, t: int, tile: int, token: str):
    """(graph, panel keys, final column keys) of the block-column LU; ``inputs(j)`` is
    the key (or Future) of block column j."""
    def col(k, j):                       # column j after the steps < k
        if k == 0:
            return inputs(j)
        if j == k - 1:                   # the panel of step k − 1
            return (f"oclla-panel-{token}", j)
        return (f"oclla-lu-{token}", k - 1, j)

    dsk = {}
    for k in range(t):
        panel = (f"oclla-getrf-{token}", k)
        dsk[panel] = (_panel_lu, col(k, k), k * tile)
        dsk[(f"oclla-panel-{token}", k)] = (_factored, panel)
        for j in range(t):
            if j != k:
                dsk[(f"oclla-lu-{token}", k, j)] = (_lu_apply, col(k, j), panel, k * tile,
                                                    j > k)
    finals = [col(t, j) for j in range(t)]
    return dsk, [(f"oclla-getrf-{token}", k) for k in range(t)], finals


@driver_errors
def lu_factor(a, *, tile: int = 256, client=None, check_finite: bool = True):
    """LU factorization P·A = L·U with partial pivoting, by block-column tasks on Dask.

    For each block column k (columns k0 .. k0 + w): one task factors its rows k0..
    (the panel, on the worker's device, pivots chosen down the whole column), then one
    task per other block column applies the panel's interchanges and, right of the
    panel, the TRSM with its unit lower triangle and the GEMM update below it
    (LAPACK's right-looking blocked getrf with each block column a task).

    Parameters
    ----------
    a : (n, n) numpy array of float32 or float64
        Never written.
    tile : int
        Width of the block columns.
    client : distributed.Client, optional
        Run on its cluster (each worker on its device, :class:`OpenCLDevice`); None:
        Dask's synchronous scheduler in this process.
    check_finite : bool
        Reject NaN/Inf before any task.

    Returns
    -------
    lu : numpy.ndarray
        U on and above the diagonal, L's multipliers below (scipy's layout).
    piv : numpy.ndarray of int32
        Row i was interchanged with row piv[i] (0-based), in the order i = 0 .. n−1.

    Raises
    ------
    ValueError
        Not square, NaN/Inf, a tile that is not a positive integer.
    TypeError
        A dtype other than float32/float64, a pyopencl or dask array.
    oclla.DeviceError
        float64 on a worker's device without ``cl_khr_fp64``.
    ImportError
        Dask is not installed (``pip install oclla[dask]``).

    A U with an exactly zero diagonal entry warns (scipy's LinAlgWarning, naming
    LAPACK's info) as :func:`oclla.lu_factor` does.
    """
    arr, n, dtype, tile, lazy = _validated(a, tile, check_finite)
    if lazy:
        raise TypeError("lu_factor takes a numpy array (its block columns are scattered "
                        "to the workers); compute the dask array first")
    try:
        import dask
        from dask.base import tokenize
    except ImportError as err:
        raise ImportError("oclla.distributed needs Dask: pip install 'oclla[dask]'") from err
    t = -(-n // tile)
    host = np.ascontiguousarray(arr)
    columns = [host[:, j * tile:(j + 1) * tile] for j in range(t)]
    token = tokenize(id(arr), n, tile, dtype.str, time.time_ns())
    if client is not None and columns:
        scattered = client.scatter(columns, hash=False)
        dsk, panels, finals = _lu_graph(lambda j: scattered[j], t, tile, token)
        results = client.get(dsk, finals + panels)
    else:
        dsk, panels, finals = _lu_graph(lambda j: (f"oclla-a-{token}", j), t, tile, token)
        dsk.update({(f"oclla-a-{token}", j): c for j, c in enumerate(columns)})
        results = dask.get(dsk, finals + panels)
    lu = np.concatenate(results[:t], axis=1) if t else np.zeros((0, 0), dtype)
    piv = np.concatenate([k * tile + p for k, (_, p) in enumerate(results[t:])]) \
        if t else np.zeros(0, np.int32)
    zeros = np.flatnonzero(np.diagonal(lu) == 0)
    if zeros.size:
        from scipy.linalg import LinAlgWarning
        warnings.warn(f"Diagonal number {int(zeros[0]) + 1} is exactly zero. Singular "
                      f"matrix.", LinAlgWarning, stacklevel=2)
    return lu, piv.astype(np.int32)
