"""Build every program the library uses on a device once, before the first real call.

A program is built once per process for each (context, source, options); its options
depend on the dtype, the device's parameters and the variant of an algorithm (which
triangle, which transpose), and on the sizes of the data only through a few classes:
the divisibility of the order by a vector width (the per-pivot LU kernels), the route a
blocked method takes (one leaf, several blocks, above its SMALL_N), and 64-bit indices
for operands of 2³¹ elements or more; the rank-k update's programs follow k's class
(the next power of two, up to its KF knob) and its route (rotations, reflectors or
the product form).
:func:`warmup` calls each public routine in each of its variants at a few orders
chosen from the device's block sizes, so that every code path (a single leaf, several
block columns, above each SMALL_N) has run once, and the updates at every rank class:
afterwards a call at any order and rank builds nothing in this process, and the
driver's own binary cache (PoCL's and NVIDIA's cache source builds themselves;
elsewhere pyopencl keeps the binaries) holds the programs for the next process.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from . import _programs
from ._device import device_info, driver_errors, resolve_queue
from ._params import params

_log = logging.getLogger("oclla")


class Warmup(NamedTuple):
    """What :func:`warmup` did: the dtypes it covered, the orders it called the
    routines at, and the programs it built (how many, in how many seconds)."""

    dtypes: tuple
    orders: tuple
    programs: int
    seconds: float


#: The families whose routes change past each method's SMALL_N (the order above which
#: its blocked factorization takes blocks instead of leaves): only they are called one
#: past it, the largest warm-up orders, whose operands cost the most to make.
PAST_SMALL_N = {"lu": ("lu",), "chol": ("cholesky", "inverse", "rfp")}


def warmup_orders(queue, dtype, family: str | None = None) -> tuple:
    """The orders :func:`warmup` calls the routines of ``family`` (default: of every
    family) at: 1, 2, 3, 4, 8 and 16 (every divisibility class of a vector width up to
    16: a per-pivot kernel's width follows the order), one above the Cholesky's leaf,
    one spanning a few blocks of each blocked method and of the TRSM, and one past each
    method's SMALL_N (the order above which the blocked methods change their route)
    for the families that route follows (:data:`PAST_SMALL_N`)."""
    lu, chol = params(queue, "lu", dtype), params(queue, "chol", dtype)
    trsm = params(queue, "trsm", dtype)
    orders = {1, 2, 3, 4, 8, 16, chol["LEAF"] + 1, 2 * chol["NB"] + 3, 2 * lu["NB"] + 3,
              4 * trsm["TRSM_NB"] + 3}
    for method, p in (("lu", lu), ("chol", chol)):
        if family is None or family in PAST_SMALL_N[method]:
            orders.add(p["SMALL_N"] + 1)
    return tuple(sorted(orders))


def update_ranks(queue, dtype) -> tuple:
    """The ranks k :func:`warmup` updates at: 1, 2, 4, ... up to the ``update`` family's
    KF knob, one of each class the update's programs depend on (k's next power of two
    up to KF; past KF every rank takes the program of KF's class).  Each rank runs as an
    update, a downdate and an update whose W passes the product form's GUARD, so the
    product form (updates of rank up to PRODUCT), the rotations and the reflector route
    (updates of rank REFLECT..KF the product form does not take) all build."""
    most = params(queue, "update", dtype)["KF"]
    ranks, k = [], 1
    while k <= most:
        ranks.append(k)
        k *= 2
    return tuple(ranks)


def _spd(n: int, dtype, rng) -> np.ndarray:
    """A symmetric matrix with entries in (-1, 1) off the diagonal and n + 1 on it:
    strictly diagonally dominant, so positive definite (eigenvalues in (2, 2n + 1));
    made in O(n²), as the warm-up's largest orders need."""
    x = rng.uniform(-1.0, 1.0, (n, n))
    a = np.triu(x, 1)
    a += a.T
    a[np.diag_indices(n)] = n + 1.0
    return a.astype(dtype)


#: The per-pivot (teaching) methods run at orders up to this only: their programs follow
#: the order's small divisibility classes alone, and their host loops take a launch per
#: pivot.
TEACHING_ORDERS = 200


#: The routine families :func:`call_every_routine` can be limited to (the parallel
#: warm-up gives each worker process one family of one dtype).
FAMILIES = ("lu", "cholesky", "inverse", "update", "rfp", "ad2at")


def call_every_routine(queue, dtype, n: int, rng, *, teaching: bool = True,
                       triangles: tuple = (True, False), ranks: tuple = (2,),
                       families: tuple = FAMILIES) -> None:
    """Every public routine of the ``families`` at order n in each of its variants: both
    transposes, full and packed storage, the ``triangles`` (lower: True, upper: False)
    of the symmetric ones, the updates and downdates at each of the ``ranks``; the
    per-pivot (teaching) methods too if ``teaching``."""
    from . import rfp
    from .ad2at import assemble_ad2at
    from .cholesky import cho_solve, cholesky
    from .inverse import cho_inverse, cho_logdet, inv_spd, trtri
    from .update import cholesky_update
    from .update_product import GUARD
    from .lu import VARIANTS, lu, lu_factor, lu_solve
    a = rng.standard_normal((n, n)).astype(dtype) + n * np.eye(n, dtype=dtype)
    b = rng.standard_normal((n, 2)).astype(dtype)
    spd = _spd(n, dtype, rng)
    methods = ("pivot", "blocked") if teaching else ("blocked",)
    if "lu" in families:
        for method in methods:             # the blocked factor last: the solves use it
            for variant in VARIANTS[method]:
                factor = lu_factor(a, method=method, variant=variant,
                                   pivoting="none" if variant == "faithful" else "partial",
                                   queue=queue)
        for trans in (0, 1):
            lu_solve(factor, b, trans=trans, queue=queue)
        lu(a, queue=queue)
    for lower in triangles:
        c = None
        if "cholesky" in families:
            for method in methods:         # the blocked factor last: the others use it
                c = cholesky(spd, lower=lower, method=method, queue=queue)
        if c is None and {"inverse", "update"} & set(families):
            c = cholesky(spd, lower=lower, queue=queue)
        if "cholesky" in families:
            cho_solve((c, lower), b, queue=queue)
        if "inverse" in families:
            cho_inverse((c, lower), queue=queue)
            cho_logdet((c, lower), queue=queue)
            trtri(c, lower=lower, queue=queue)
            inv_spd(spd, lower=lower, queue=queue)
        if {"rfp", "update"} & set(families):
            arf = rfp.pack(spd, lower=lower, queue=queue)
            factor = rfp.cholesky(arf, n, lower=lower, queue=queue)
        if "rfp" in families and teaching:
            _recorded(lambda: rfp.cholesky(arf, n, lower=lower, queue=queue))
        if "update" in families:
            for k in ranks:
                v = rng.standard_normal((n, k))
                v = (v / (2 * np.linalg.norm(v))).astype(dtype)   # ‖V·Vᵀ‖ <= 1/4 < λmin
                for sign in (1, -1):
                    cholesky_update(c, v, sign=sign, lower=lower, queue=queue)
                    rfp.cholesky_update(factor, n, v, sign=sign, lower=lower, queue=queue)
                # W(0, 0) = V(0, 0) / c(0, 0) past the product form's GUARD: an update the
                # blocked method leaves to the rotations (on GPUs it takes the product form)
                v[0, 0] = 10 * GUARD * np.sqrt(spd[0, 0])
                cholesky_update(c, v, lower=lower, queue=queue)
        if "rfp" in families:
            rfp.cho_solve((factor, lower), b, queue=queue)
            rfp.unpack(factor, n, lower=lower, queue=queue)
        if "ad2at" in families:
            wide = rng.standard_normal((n, n + 2)).astype(dtype)
            d2 = rng.uniform(0.5, 2.0, n + 2).astype(dtype)
            for method in methods:
                for packed in (False, True):
                    assemble_ad2at(wide, d2, packed=packed, lower=lower, method=method,
                                   queue=queue)


def _recorded(call) -> None:
    """``call()`` in a recording, which the packed Cholesky factors on a route of its own
    (in place, its steps boxes of the packed array: :func:`oclla.rfp._factor_t2`), so that
    a recorded run after the warm-up builds nothing either."""
    from . import _trace_hooks, trace
    if _trace_hooks.active() is not None:
        call()
        return
    with trace.record():
        call()


def _dtypes(queue, dtype) -> tuple:
    """The dtypes a warm-up covers (see :func:`warmup`)."""
    if dtype is None:
        return (np.dtype(np.float32),) + ((np.dtype(np.float64),)
                                          if device_info(queue).fp64 else ())
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dt}")
    return (dt,)


#: The update's rank classes are warmed up at the largest warm-up order up to this
#: (their programs do not depend on the order; the host's operands do).
SWEEP_ORDER = 1024


def _warm(queue, dt, rng, families: tuple = FAMILIES, ranks: tuple | None = None) -> tuple:
    """Every routine of the families at each of its warm-up orders of dtype dt
    (:func:`warmup_orders`); all the orders.  The
    updates run at rank 2 and, at the largest order up to :data:`SWEEP_ORDER`, at every
    rank class (:func:`update_ranks`); with ``ranks``, at those ranks at every order."""
    orders = warmup_orders(queue, dt)
    own = {f: warmup_orders(queue, dt, f) for f in families}
    sweep = update_ranks(queue, dt)
    sweep_at = max([n for n in orders if n <= SWEEP_ORDER] or orders[:1])
    for n in orders:
        at = ranks or (sweep if n == sweep_at else (2,))
        called = tuple(f for f in families if n in own[f])
        if called:
            call_every_routine(queue, dt, n, rng, teaching=n <= TEACHING_ORDERS, ranks=at,
                               families=called)
    return orders


def _device_index(queue) -> int:
    """The queue's device as an index into :func:`oclla.devices` (for a worker process)."""
    from ._device import _all_cl_devices
    return _all_cl_devices().index(queue.device)


def worker_tasks(queue, dtypes: tuple) -> list:
    """The parallel warm-up's tasks, ``dtype:family`` and ``dtype:update:rank`` (one per
    rank class: the update's programs are the most numerous), the updates first."""
    tasks = []
    for dt in dtypes:
        tasks += [f"{dt.name}:update:{k}" for k in reversed(update_ranks(queue, dt))]
    for dt in dtypes:
        tasks += [f"{dt.name}:{family}" for family in FAMILIES if family != "update"]
    return tasks


def _build_in_workers(queue, dtypes: tuple, jobs: int) -> None:
    """Fill the compiler's cache from worker processes, at most ``jobs`` at a time, one
    per task of :func:`worker_tasks`.  A worker's builds reach this process only
    through a cache shared between processes (the driver's own for NVIDIA and PoCL,
    which cache source builds; pyopencl's on-disk cache elsewhere); a worker that fails
    is ignored here (the caller's own warm-up then meets the same error and raises it)."""
    command = [sys.executable, "-m", "oclla._warmup", str(_device_index(queue))]

    def run(task):
        done = subprocess.run(command + [task], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if done.returncode:
            _log.debug("warm-up worker %s failed:\n%s", task, done.stderr[-2000:])

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(run, worker_tasks(queue, dtypes)))


@driver_errors
def warmup(dtype=None, *, queue=None, jobs: int = 1) -> Warmup:
    """Build every program the library uses on the queue's device.

    Parameters
    ----------
    dtype : numpy dtype or None
        float32 or float64; None: both, float64 only where the device has
        ``cl_khr_fp64``.
    queue : pyopencl.CommandQueue, optional
        The device (default :func:`oclla.get_queue`).
    jobs : int
        With more than 1, first build in up to that many worker processes at a
        time, each warming up one routine family of one dtype (:data:`FAMILIES`;
        the updates one rank class each), then warm up this process, whose
        builds then come from the compiler's cache.  Builds from several threads
        of one process overlap little on some drivers (NVIDIA's: 1.3-1.9 times
        faster than one after the other), in separate processes almost wholly.
        The workers select the same device and read the same environment
        (``OCLLA_PROFILE``; a profile set with :func:`oclla.set_profile` is this
        process's alone, so theirs would not help).  Only worthwhile where the
        compiler's cache outlives a process: it does by default for NVIDIA
        (unless ``CUDA_CACHE_DISABLE`` is set), PoCL and devices for which
        pyopencl keeps binaries.

    Returns
    -------
    Warmup
        The dtypes and orders covered, and the programs this process built: afterwards
        a call of any public routine at any order (and an update at any rank) builds
        no program in this process (:func:`oclla._programs.build_count`).  The updates
        run at every rank class (:func:`update_ranks`) at one order only
        (:data:`SWEEP_ORDER`): their programs do not depend on the order.

    Raises
    ------
    TypeError
        A dtype other than float32 or float64, or ``jobs`` not an int.
    ValueError
        ``jobs`` below 1.
    oclla.DeviceError
        float64 asked of a device without ``cl_khr_fp64``, or a kernel family
        that fails to build or run with every parameter set.
    """
    queue = resolve_queue(queue)
    dtypes = _dtypes(queue, dtype)
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)):
        raise TypeError(f"jobs must be an int, got {type(jobs).__name__}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if jobs > 1:
        _build_in_workers(queue, dtypes, int(jobs))
    count, seconds = _programs.build_count(), _programs.build_seconds()
    rng = np.random.default_rng(0)
    orders = ()
    for dt in dtypes:
        orders += _warm(queue, dt, rng)
    return Warmup(tuple(str(d) for d in dtypes), tuple(sorted(set(orders))),
                  _programs.build_count() - count, _programs.build_seconds() - seconds)


def _worker(argv: list) -> int:
    """``python -m oclla._warmup DEVICE_INDEX TASK ...``: a worker of :func:`warmup`'s
    ``jobs`` (tasks as :func:`worker_tasks` writes them)."""
    from ._device import get_queue
    queue = get_queue(int(argv[0]))
    rng = np.random.default_rng(0)
    for task in argv[1:]:
        dt, family, *rank = task.split(":")
        _warm(queue, np.dtype(dt), rng, families=(family,),
              ranks=tuple(int(k) for k in rank) or None)
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
