"""``oclla tune``: measure the best kernel parameters on this device and store them.

Usage::

    oclla tune [--device SPEC] [--dtype float32,float64] [--quick]
               [--families gemm,pivot,crout,window,lu,chol] [--output FILE] [--ship]

Search space and metric, in one place (:data:`SPACE`, :data:`METRIC`):

* ``gemm``: the kernel shape (tiled: tile, depth, work per item, vector width;
  direct: rows, vector width, vectors per row, work-group).  Metric: GFLOP/s
  of C = A·B at n = ``GEMM_N`` (device-resident, best of 3).  Then, for a
  tiled shape, ``PER_SHAPE`` (the time of AB, AᵀB and ABᵀ together) and
  ``TN_COPY_K`` (the time of a SYRK AᵀA of rank ``TN_COPY_RANK``), each both
  ways.
* ``chol``: block width, diagonal leaf order, leaf kind (one item per row or
  entries spread over a work-group), work-group, the triangular solves'
  method of the blocked Cholesky and the packed one's T2 parts
  (``RFP_T2_DEPTH``), by coordinate descent.
  Metric: time of the blocked Cholesky in full plus in packed (RFP) storage
  at n = ``LU_N`` (best of 3 each).  ``SMALL_N`` is the largest order in
  ``CHOL_SMALL_SIZES`` at which single-leaf block columns with inverted
  panels beat those parameters (full storage).
* ``pivot``: the per-pivot kernel shape (tuned first: the blocked LU's
  panels may use the same kernels).  Metric: time of the per-pivot LU at
  n = ``PIVOT_N``.
* ``crout``: the shape of the per-pivot LU in Crout order (its row and
  column parts).  Metric: its time at n = ``PIVOT_N``.
* ``window``: the window (pivots between trailing updates) and work-group of
  the per-pivot LU with delayed updates.  Metric: its time at n = ``PIVOT_N``.
* ``trsm``, ``laswp``, ``lu``, ``gemm_thin``: searched one parameter at a time
  (coordinate descent, in the order of :func:`_lu_axes`), each candidate with
  the others at their best so far.  Metric: time of the blocked LU at n =
  ``LU_N`` (best of 3).
  ``SMALL_N`` is the largest order in ``SMALL_SIZES`` at which factoring the
  whole matrix with the leaf kernel beats the blocked path.

Every candidate is first checked against a reference and dropped if it is
wrong (or fails to build): GEMM shapes on awkward sizes (tile ± 1, primes) for
every transpose and a triangle, against float64 products
(:func:`oclla.accuracy.product_error`); LU parameters by the backward error
and pivots of a factorization against SciPy's.

The result is stored per (device name, driver version, dtype) in the user's
cache file (:func:`oclla._params.user_file`: ``OCLLA_TUNED_FILE`` if set, else
``tuned.json`` in the platform's user cache directory), where
:func:`oclla._params.params` finds it; ``--ship`` writes it into the package's
``oclla/data/tuned.json`` instead (for devices whose defaults ship with
oclla).  A run of some families keeps the others as stored or shipped for the
device (:func:`store`).  ``OCLLA_TUNED=0`` makes oclla ignore every stored
entry (parameters derived from the device's limits only).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import sys
import time

import numpy as np

from . import _knobs, _params
from ._bench import best_of
from .accuracy import THRESHOLD, lu_backward_error, product_error

GEMM_N = {"GPU": 4096, "CPU": 1024}
LU_N = {"GPU": 8192, "CPU": 1024}
PIVOT_N = {"GPU": 4096, "CPU": 1024}
SMALL_SIZES = (32, 64, 96, 128, 192, 256, 384, 512)
CHOL_SMALL_SIZES = {"GPU": (1024, 2048, 4096, 8192, 12288), "CPU": (256, 512, 1024)}


def _grid(family: str, gpu_step: int, cpu_step: int):
    """The search space of ``family``: the grid of its knobs' tuned values
    (:func:`oclla._knobs.space`); with ``quick``, every ``gpu_step``-th (GPUs) or
    ``cpu_step``-th (CPUs) candidate."""
    def space(kind: str, native: int, quick: bool) -> list[dict]:
        gpu = kind == "GPU"
        candidates = _knobs.space(family, "GPU" if gpu else "CPU", native)
        return candidates[::gpu_step if gpu else cpu_step] if quick else candidates
    return space


#: The order of the coordinate descent over the blocked LU's families (the values of
#: each knob: :func:`oclla._knobs.tuned_values`); ``quick`` keeps the first 11 and the last
#: three (the look-ahead, and the grid panel's work-groups and its register rows for tall
#: panels, which pay only with it).
LU_ORDER = (("lu", "PANEL"), ("lu", "REG_SLOTS"), ("lu", "NB"), ("lu", "PANEL_SPLIT"),
            ("lu", "PANEL_RB"), ("lu", "PANEL_WY"), ("lu", "LEAF_W"), ("lu", "PANEL_WG"),
            ("lu", "GRID_RPI"), ("lu", "GRID_WY"), ("lu", "LEAF_UNR"), ("lu", "REG_SLOTS"),
            ("lu", "FLAT_N"), ("lu", "LEAF_SCAN"), ("lu", "LEAF_WG"), ("lu", "LEAF_STAGE"),
            ("lu", "FLAT_AHEAD"), ("lu", "GRID_PER_CU"), ("trsm", "TRSM_NB"),
            ("trsm", "INVERSE"), ("trsm", "REGISTER"), ("trsm", "DOUBLING"), ("laswp", "WG"),
            ("laswp", "CHUNK"), ("gemm_thin", "MAX_K"), ("gemm_thin", "TILE_M"),
            ("gemm_thin", "TILE_N"),
            ("lu", "INVERT_ONCE"), ("lu", "FAR_COLS"), ("lu", "LOOKAHEAD"),
            ("lu", "GRID_FEWEST"), ("lu", "GRID_TALL"))
#: The same for the blocked Cholesky; ``quick`` keeps the first 3.
CHOL_ORDER = tuple(("chol", key) for key in ("NB", "LEAF", "TRSM_INVERSE", "RFP_TRSM_INVERSE",
                                             "ROW_LEAF", "FUSE_LEAF", "RFP_T2_DEPTH", "WG"))


def _axes(order, kind: str) -> list[tuple[str, str, tuple]]:
    kind = "GPU" if kind == "GPU" else "CPU"
    return [(fam, key, _knobs.tuned_values(fam, key, kind)) for fam, key in order]


def _lu_axes(kind: str, quick: bool) -> list[tuple[str, str, tuple]]:
    """(family, key, values) searched in order by coordinate descent."""
    axes = _axes(LU_ORDER, kind)
    return axes[:11] + axes[-3:] if quick else axes


def _chol_axes(kind: str, quick: bool) -> list[tuple[str, str, tuple]]:
    """(family, key, values) of the blocked Cholesky, searched in order."""
    axes = _axes(CHOL_ORDER, kind)
    return axes[:3] if quick else axes


SPACE = {"gemm": _grid("gemm", 2, 3), "lu": _lu_axes, "chol": _chol_axes,
         "pivot": _grid("pivot", 2, 2), "crout": _grid("crout", 3, 3),
         "window": _grid("window", 2, 2)}
METRIC = {
    "gemm": "GFLOP/s of C = A·B, n = GEMM_N, device arrays, best of 3",
    "lu": "seconds of the blocked LU, n = LU_N, best of 3 (lower is better)",
    "chol": "seconds of the blocked Cholesky in full plus in packed (RFP) storage, n = LU_N, "
            "best of 3 each (lower is better)",
    "pivot": "seconds of the per-pivot LU, n = PIVOT_N, best of 3 (lower is better)",
    "crout": "seconds of the per-pivot LU in Crout order, n = PIVOT_N, best of 3 "
             "(lower is better)",
    "window": "seconds of the per-pivot LU with delayed updates, n = PIVOT_N, best of 3 "
              "(lower is better)",
}


# ---- checks ---------------------------------------------------------------------------

def check_gemm(queue, p: dict, dtype) -> str | None:
    """None if the gemm parameter set ``p`` computes correct products, else what failed."""
    import pyopencl.array as cl_array
    from .blas import gemm, view_of
    rng = np.random.default_rng(7)
    tm = p.get("TILE_M", p.get("RM", 1))
    tn = p.get("TILE_N", p.get("VW", 1) * p.get("NV", 1))
    tk = p.get("TILE_K", 4)
    cases = [(tm + 1, tn - 1 if tn > 1 else 1, 2 * tk + 1, ta, tb, None)
             for ta, tb in itertools.product((False, True), repeat=2)]
    cases.append((37, 37, 13, False, True, "lower"))
    for m, n, k, ta, tb, tri in cases:
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
        c0 = rng.standard_normal((m, n)).astype(dtype)
        da, db, dc = (cl_array.to_device(queue, x) for x in (a, b, c0))
        gemm(queue, m, n, k, 0.5, view_of(da), view_of(db), 2.0, view_of(dc), dtype=dtype,
             trans_a=ta, trans_b=tb, triangle=tri, tile=p)
        opa, opb = (a.T if ta else a), (b.T if tb else b)
        problem = _product_problem(dc.get(), c0, opa, opb, tri)
        if problem is not None:
            return f"{problem} at {m}x{n}x{k} trans_a={ta} trans_b={tb} {tri or ''}"
    return None


def _product_problem(c, c0, opa, opb, triangle: str | None) -> str | None:
    """None if ``c`` is 0.5·opa·opb + 2·c0 on the ``triangle`` ("lower", "upper" or None:
    all) within :data:`~oclla.accuracy.THRESHOLD` and ``c0`` elsewhere, else what is
    wrong."""
    if triangle is not None:
        keep = (np.tril if triangle == "lower" else np.triu)(np.ones(c.shape, bool))
        if not np.array_equal(c[~keep], c0[~keep]):
            return f"wrote outside the {triangle} triangle"
        c = np.where(keep, c, 0.5 * (opa @ opb) + 2.0 * c0)
    err = product_error(c, opa, opb, alpha=0.5, beta=2.0, c0=c0)
    return None if err < THRESHOLD else f"error {err:.3g}"


def check_lu(queue, dtype, method: str = "blocked", variant: str | None = None) -> str | None:
    """None if LU with the current parameters matches SciPy's pivots and passes, else why."""
    import scipy.linalg as sl
    from .lu import lu_factor
    for n in (1, 37, 97, 200):
        a = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
        lu, piv = lu_factor(a, method=method, variant=variant, queue=queue)
        err = lu_backward_error(a, lu, piv)
        if not err < THRESHOLD:
            return f"backward error {err:.3g} at n={n}"
        if not np.array_equal(piv, sl.lu_factor(a)[1]):
            return f"pivots differ from SciPy's at n={n}"
    return None


def check_chol(queue, dtype) -> str | None:
    """None if Cholesky with the current parameters passes on awkward sizes, else why."""
    from .accuracy import cholesky_backward_error
    from .cholesky import cholesky
    for n in (1, 37, 97, 200):
        x = np.random.default_rng(n).standard_normal((n, n))
        a = (x @ x.T / n + np.eye(n)).astype(dtype)
        for lower in (False, True):
            err = cholesky_backward_error(a, cholesky(a, lower=lower, queue=queue), lower)
            if not err < THRESHOLD:
                return f"backward error {err:.3g} at n={n}, lower={lower}"
    return None


# ---- timing ---------------------------------------------------------------------------

def _best_time(queue, fn, repeat: int = 3) -> float:
    """:func:`oclla._bench.best_of` of ``fn`` with the queue drained after each run."""
    def run():
        fn()
        queue.finish()
    return best_of(run, repeat)


def _safe(fn):
    """fn() or None when the device rejects the candidate (build or launch failure)."""
    import pyopencl as cl
    from ._device import DeviceError
    try:
        return fn()
    except (DeviceError, cl.Error) as exc:
        return exc


def tune_gemm(queue, dtype, quick: bool, log) -> dict | None:
    import pyopencl.array as cl_array
    from ._device import device_info
    from .blas import gemm, view_of
    info = device_info(queue)
    itemsize = np.dtype(dtype).itemsize
    native = _params._native_width(queue, device_info(queue), itemsize)
    n = GEMM_N["GPU" if info.kind == "GPU" else "CPU"]
    a = cl_array.to_device(queue, np.random.default_rng(1).standard_normal((n, n)).astype(dtype))
    c = cl_array.empty_like(a)
    best, best_rate = None, 0.0
    for p in SPACE["gemm"](info.kind, native, quick):
        if _params.check("gemm", p, info, itemsize) is not None:
            continue
        problem = _safe(lambda: check_gemm(queue, p, dtype))
        if problem is not None:
            log(f"  gemm {p}: rejected ({problem})")
            continue
        seconds = _safe(lambda: _best_time(queue, lambda: gemm(
            queue, n, n, n, 1.0, view_of(a), view_of(a), 0.0, view_of(c), dtype=dtype, tile=p)))
        if not isinstance(seconds, float):
            log(f"  gemm {p}: failed ({seconds})")
            continue
        rate = 2.0 * n ** 3 / seconds / 1e9
        log(f"  gemm {p}: {rate:.1f} GFLOP/s")
        if rate > best_rate:
            best, best_rate = p, rate
    log(f"gemm best: {best} at {best_rate:.1f} GFLOP/s (n={n})")
    if best is not None and best["KERNEL"] == "tiled":
        best = _product_shapes(queue, best, dtype, n, a, c, log)
    return best


#: The rank of the SYRK AᵀA whose two routes the tuner times for TN_COPY_K (the blocked
#: Cholesky's trailing updates on GPUs: its NB), and the TN_COPY_K it stores where the
#: transposed copy is the faster route.
TN_COPY_RANK = 128
TN_COPY_LIMIT = 256


def _products_seconds(queue, p: dict, a, c, n: int, dtype) -> float:
    """Seconds of the products AB, AᵀB and ABᵀ of order n with the gemm set p, added
    (each the best of 3)."""
    from .blas import gemm, view_of
    return sum(_best_time(queue, lambda ta=ta, tb=tb: gemm(
        queue, n, n, n, 1.0, view_of(a), view_of(a), 0.0, view_of(c), dtype=dtype,
        trans_a=ta, trans_b=tb, tile=p)) for ta, tb in ((False, False), (True, False),
                                                        (False, True)))


def _syrk_seconds(queue, p: dict, a, c, n: int, dtype) -> float:
    """Seconds of C -= AᵀA on C's upper triangle (A: TN_COPY_RANK x n, at most n rows, the
    first rows of ``a``) with the gemm set p, best of 3."""
    from .blas import View, syrk
    return _best_time(queue, lambda: syrk(
        queue, n, min(TN_COPY_RANK, n), -1.0, View(a.data, 0, n), 1.0, View(c.data, 0, n),
        dtype=dtype, lower=False, trans=True, tile=p))


def check_syrk(queue, p: dict, dtype) -> str | None:
    """None if SYRK AᵀA with the gemm set ``p`` (either route of TN_COPY_K) computes the
    upper triangle right and leaves the lower alone, else what failed."""
    import pyopencl.array as cl_array
    from .blas import syrk, view_of
    rng = np.random.default_rng(8)
    for n, k in ((37, 13), (p["TILE_N"] + 1, 2 * p["TILE_K"] + 1)):
        a = rng.standard_normal((k, n)).astype(dtype)
        c0 = rng.standard_normal((n, n)).astype(dtype)
        da, dc = cl_array.to_device(queue, a), cl_array.to_device(queue, c0)
        syrk(queue, n, k, 0.5, view_of(da), 2.0, view_of(dc), dtype=dtype, lower=False,
             trans=True, tile=p)
        problem = _product_problem(dc.get(), c0, a.T, a, "upper")
        if problem is not None:
            return f"{problem} at n={n}, k={k}"
    return None


def _product_shapes(queue, p: dict, dtype, n: int, a, c, log) -> dict:
    """The tiled set p with PER_SHAPE and TN_COPY_K measured: gemm.cl built per product
    shape (1) where AB, AᵀB and ABᵀ of order n take less time together that way (and its
    products are right), and SYRK AᵀA of rank TN_COPY_RANK through a transposed copy
    (TN_COPY_K = TN_COPY_LIMIT) where that is faster (and right)."""
    for key, values, measure, check in (
            ("PER_SHAPE", (0, 1), lambda t: _products_seconds(queue, t, a, c, n, dtype),
             lambda t: check_gemm(queue, t, dtype)),
            ("TN_COPY_K", (0, TN_COPY_LIMIT), lambda t: _syrk_seconds(queue, t, a, c, n, dtype),
             lambda t: check_syrk(queue, t, dtype))):
        times = {}
        for value in values:
            trial = dict(p, **{key: value})
            problem = _safe(lambda: check(trial))
            seconds = _safe(lambda: measure(trial)) if problem is None else problem
            if isinstance(seconds, float):
                times[value] = seconds
                log(f"  gemm {key}={value}: {1e3 * seconds:.2f} ms")
            else:
                log(f"  gemm {key}={value}: rejected ({seconds})")
        if times:
            p = dict(p, **{key: min(times, key=times.get)})
        log(f"gemm {key} -> {p.get(key, _knobs.GEMM_LATER[key])}")
    return p


def _lu_time(queue, a, method: str, variant: str | None = None) -> float | Exception:
    from .lu import lu_factor
    return _safe(lambda: _best_time(queue, lambda: lu_factor(a, method=method, variant=variant,
                                                             check_finite=False,
                                                             queue=queue)))


def _descend(queue, dtype, axes, current: dict, measure, check, log, n: int) -> None:
    """Coordinate descent: each (family, key, values) axis in turn, each value
    with the others at their best so far; ``current`` ({family: params}, set
    as overrides) is updated in place.  ``measure()`` -> seconds or the
    exception; ``check()`` -> None or why the candidate is wrong."""
    from ._device import device_info
    info = device_info(queue)
    for fam, p in current.items():
        _params.override(fam, p)
    best_time = measure()
    if not isinstance(best_time, float):
        raise best_time
    for fam, key, values in axes:
        for value in values:
            if value == current[fam].get(key):
                continue
            trial = dict(current[fam], **{key: value})
            if _params.check(fam, trial, info, np.dtype(dtype).itemsize) is not None:
                continue
            _params.override(fam, trial)
            problem = _safe(check)
            seconds = measure() if problem is None else problem
            if not isinstance(seconds, float):
                log(f"  {fam} {key}={value}: rejected ({seconds})")
            else:
                log(f"  {fam} {key}={value}: {1e3 * seconds:.1f} ms")
            if isinstance(seconds, float) and seconds < best_time:
                best_time, current[fam] = seconds, trial
            _params.override(fam, current[fam])
        log(f"{fam} {key} -> {current[fam].get(key)} ({1e3 * best_time:.1f} ms at n={n})")


def tune_lu(queue, dtype, quick: bool, log) -> dict:
    """Coordinate descent over the blocked LU's families; returns {family: params}."""
    import pyopencl.array as cl_array
    from ._device import device_info
    from .lu import lu_factor
    kind = "GPU" if device_info(queue).kind == "GPU" else "CPU"
    n = LU_N[kind]
    a = cl_array.to_device(queue, np.random.default_rng(2).standard_normal((n, n)).astype(dtype))
    current = {fam: _params.params(queue, fam, dtype)
               for fam in ("lu", "trsm", "laswp", "gemm_thin")}
    current["lu"]["SMALL_N"] = 0

    def check():
        shape = _params.thin_gemm(_params.params(queue, "gemm_thin", dtype))
        return (check_gemm(queue, shape, dtype) if shape else None) or check_lu(queue, dtype)
    _descend(queue, dtype, SPACE["lu"](kind, quick), current,
             lambda: _lu_time(queue, a, "blocked"), check, log, n)
    current["lu"]["SMALL_N"] = _crossover(
        "lu", current["lu"], SMALL_SIZES,
        lambda m: cl_array.to_device(queue, np.random.default_rng(m).standard_normal((m, m))
                                     .astype(dtype)),
        lambda b: lu_factor(b, method="blocked", check_finite=False, queue=queue),
        lambda: check_lu(queue, dtype), queue, log)
    return current


def tune_chol(queue, dtype, quick: bool, log) -> dict:
    """Coordinate descent over the blocked Cholesky's parameters; returns {"chol": params}."""
    import pyopencl.array as cl_array
    from ._device import device_info
    from .cholesky import cho_factor
    from .rfp import cholesky as packed_cholesky, pack
    kind = "GPU" if device_info(queue).kind == "GPU" else "CPU"
    n = LU_N[kind]
    x = np.random.default_rng(4).standard_normal((n, n))
    a = cl_array.to_device(queue, (x @ x.T / n + np.eye(n)).astype(dtype))
    arf = pack(a, queue=queue)
    current = {"chol": dict(_params.params(queue, "chol", dtype), SMALL_N=0)}

    def measure():
        full = _safe(lambda: _best_time(queue, lambda: cho_factor(
            a, check_finite=False, queue=queue)))
        packed = _safe(lambda: _best_time(queue, lambda: packed_cholesky(
            arf, n, check_finite=False, queue=queue)))
        return full + packed if isinstance(full, float) and isinstance(packed, float) \
            else (full if not isinstance(full, float) else packed)
    _descend(queue, dtype, SPACE["chol"](kind, quick), current, measure,
             lambda: check_chol(queue, dtype), log, n)

    def spd(m):
        x = np.random.default_rng(m).standard_normal((m, m))
        return cl_array.to_device(queue, (x @ x.T / m + np.eye(m)).astype(dtype))
    current["chol"]["SMALL_N"] = _crossover(
        "chol", current["chol"], CHOL_SMALL_SIZES[kind], spd,
        lambda b: cho_factor(b, check_finite=False, queue=queue),
        lambda: check_chol(queue, dtype), queue, log)
    return current


def _crossover(family: str, base: dict, sizes, matrix, factor, check, queue, log) -> int:
    """SMALL_N of ``family``: the largest order n in ``sizes`` where the small-n
    path (SMALL_N = n) factors ``matrix(n)`` faster than ``base`` (SMALL_N = 0),
    0 if none or if ``check()`` finds that path wrong; left set as override."""
    best = 0
    for n in sizes:
        a = matrix(n)
        times = {}
        for small in (0, n):
            _params.override(family, dict(base, SMALL_N=small))
            times[small] = _safe(lambda: _best_time(queue, lambda: factor(a)))
        ok = all(isinstance(t, float) for t in times.values())
        log(f"  n={n}: {1e3 * times[0]:.3f} ms, small-n path {1e3 * times[n]:.3f} ms"
            if ok else f"  n={n}: failed")
        if ok and times[n] < times[0]:
            best = n
    _params.override(family, dict(base, SMALL_N=best))
    problem = check()
    if problem is not None:
        log(f"  small-n path rejected ({problem})")
        best = 0
        _params.override(family, dict(base, SMALL_N=0))
    log(f"{family} SMALL_N -> {best}")
    return best


PER_PIVOT_VARIANT = {"pivot": "inplace", "crout": "crout", "window": "window"}


def tune_per_pivot(queue, dtype, family: str, quick: bool, log) -> dict | None:
    """Exhaustive search of a per-pivot LU's kernel shape (``pivot``, ``crout`` or
    ``window``)."""
    import pyopencl.array as cl_array
    from ._device import device_info
    info = device_info(queue)
    kind = "GPU" if info.kind == "GPU" else "CPU"
    n = PIVOT_N[kind]
    variant = PER_PIVOT_VARIANT[family]
    native = _params._native_width(queue, device_info(queue), np.dtype(dtype).itemsize)
    a = cl_array.to_device(queue, np.random.default_rng(3).standard_normal((n, n)).astype(dtype))
    best, best_time = None, float("inf")
    for p in SPACE[family](kind, native, quick):
        if _params.check(family, p, info, np.dtype(dtype).itemsize) is not None:
            continue
        _params.override(family, p)
        problem = _safe(lambda: check_lu(queue, dtype, method="pivot", variant=variant))
        seconds = _lu_time(queue, a, "pivot", variant) if problem is None else problem
        if not isinstance(seconds, float):
            log(f"  {family} {p}: rejected ({seconds})")
            continue
        log(f"  {family} {p}: {1e3 * seconds:.1f} ms")
        if seconds < best_time:
            best, best_time = p, seconds
    _params.override(family, best)
    log(f"{family} best: {best} ({1e3 * best_time:.1f} ms at n={n})")
    return best


# ---- storage --------------------------------------------------------------------------

def store(path: str, info, dtype_name: str, found: dict, measured: dict) -> None:
    """Store ``found`` for (device, driver, dtype) in the file at ``path``.

    An entry replaces every family for its device (:func:`oclla._params.stored` takes the
    first entry that matches), so a partial run is merged per family: ``found`` over what
    the file already holds for that entry, over what ships for the device
    (:func:`shipped_params`).
    """
    entries = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            entries = _params.read_entries(f.read())
    same = [e for e in entries if (e.get("device"), e.get("driver"), e.get("dtype"))
            == (info.name, info.driver_version, dtype_name)]
    entries = [e for e in entries if e not in same]
    merged = {} if os.path.abspath(path) == shipped_file() else shipped_params(info,
                                                                                  dtype_name)
    merged.update(same[0].get("params", {}) if same else {})
    merged.update(found)
    entries.append(dict(device=info.name, driver=info.driver_version, dtype=dtype_name,
                        date=datetime.date.today().isoformat(), params=merged,
                        measured=measured))
    entries.sort(key=lambda e: (e["device"], e["driver"], e["dtype"]))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(version=_params.DATA_VERSION, entries=entries), f, indent=1)
        f.write("\n")


def shipped_params(info, dtype_name: str) -> dict:
    """The families shipped in ``oclla/data/tuned.json`` for this device and dtype (the
    entry of its driver, else of any driver, as :func:`oclla._params.stored` looks them
    up; {} if none)."""
    with open(shipped_file(), encoding="utf-8") as f:
        entries = _params.read_entries(f.read())
    for need_driver in (True, False):
        for e in entries:
            if (e.get("device") == info.name and e.get("dtype") == dtype_name
                    and (not need_driver or e.get("driver") == info.driver_version)):
                return dict(e.get("params", {}))
    return {}


def shipped_file() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "tuned.json")


def tune(queue, dtype, families, quick: bool = False, log=print, save=None) -> dict:
    """Search the given families on ``queue``'s device; returns {family: params}.

    ``save(found)`` is called after each family, so an interrupted run keeps
    what it finished.
    """
    found = {}
    save = save or (lambda found: None)
    for fam in _params.FAMILIES:
        _params.override(fam, None)
    _params.reload()
    if "gemm" in families:
        best = tune_gemm(queue, dtype, quick, log)
        if best is not None:
            found["gemm"] = best
            _params.override("gemm", best)
            save(found)
    for family in ("pivot", "crout", "window"):     # pivot before lu: its panels may use these kernels
        if family in families:
            best = tune_per_pivot(queue, dtype, family, quick, log)
            if best is not None:
                found[family] = best
                _params.override(family, best)
                save(found)
    if "lu" in families:
        found.update(tune_lu(queue, dtype, quick, log))
        save(found)
    if "chol" in families:
        found.update(tune_chol(queue, dtype, quick, log))
        save(found)
    return found


def metric_text(family: str, kind: str) -> str:
    """:data:`METRIC` of ``family`` with the orders of a ``kind`` ("GPU"/"CPU") device."""
    text = METRIC[family]
    for name, sizes in (("GEMM_N", GEMM_N), ("LU_N", LU_N), ("PIVOT_N", PIVOT_N)):
        text = text.replace(name, str(sizes["GPU" if kind == "GPU" else "CPU"]))
    return text


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``oclla tune``."""
    from .cli import add_device_option, version_text
    ap = argparse.ArgumentParser(
        prog="oclla tune",
        description="Measure the best kernel parameters on this device and store them "
                    "(each candidate checked against a reference before it is timed).")
    ap.add_argument("--version", action="version", version=version_text("oclla tune"))
    add_device_option(ap)
    ap.add_argument("--dtype", default="float32",
                    help="float32, float64 or both comma-separated (default float32)")
    ap.add_argument("--families", default="gemm,lu,chol,pivot,crout,window",
                    help="comma-separated subset of " + ", ".join(sorted(SPACE))
                         + " (default: all); the families not searched keep the "
                           "parameters stored or shipped for the device")
    ap.add_argument("--quick", action="store_true",
                    help="a thinner search (default: the full search space)")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--output", default=None, metavar="FILE",
                       help="file to store into (default: the user cache, "
                            "OCLLA_TUNED_FILE if set)")
    where.add_argument("--ship", action="store_true",
                       help="store into the package's oclla/data/tuned.json")
    return ap


def main(argv=None) -> int:
    """Entry point of ``oclla tune``; returns the process exit status."""
    ap = parser()
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    families = {f.strip() for f in args.families.split(",") if f.strip()}
    unknown = families - set(SPACE)
    if unknown or not families:
        ap.error(f"unknown families: {', '.join(sorted(unknown)) or '(none given)'}; "
                 f"choose from {', '.join(sorted(SPACE))}")
    args.families = families
    args.dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    if not args.dtypes or not set(args.dtypes) <= {"float32", "float64"}:
        ap.error(f"--dtype must be float32 and/or float64, got {args.dtype!r}")
    from .cli import report_errors
    return report_errors("oclla tune", _run, args)


def _run(args) -> int:
    from . import get_queue, device_info
    from .cli import check_writable
    path = shipped_file() if args.ship else (args.output or _params.user_file())
    check_writable(path, "--output")
    queue = get_queue(args.device)
    info = device_info(queue)
    print(f"tuning {info.name} (driver {info.driver_version}); search space and metric:")
    for fam in sorted(args.families):
        print(f"  {fam}: {metric_text(fam, info.kind)}")
    try:
        for dtype_name in args.dtypes:
            if dtype_name == "float64" and not info.fp64:
                print(f"{info.name} has no float64: skipped")
                continue
            t0 = time.perf_counter()

            def save(found, dtype_name=dtype_name):
                store(path, info, dtype_name, found,
                      dict(seconds=round(time.perf_counter() - t0, 1)))

            found = tune(queue, np.dtype(dtype_name), args.families, args.quick, save=save)
            print(f"{dtype_name}: stored {json.dumps(found)} in {path}", flush=True)
    finally:
        for fam in _params.FAMILIES:
            _params.override(fam, None)
        _params.reload()
    return 0


if __name__ == "__main__":
    sys.exit(main())
