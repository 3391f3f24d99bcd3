"""Tile tasks: the four kernels of a tile Cholesky, one tile at a time.

A tile algorithm (PLASMA's, or a task graph run by an external scheduler)
factors A = L·Lᵀ of a matrix held as b x b tiles A[i][j] with four tasks::

    for k in range(T):
        L[k][k] = potrf_tile(A[k][k])                    A[k][k] = L[k][k]·L[k][k]ᵀ
        for i > k:  L[i][k] = trsm_tile(L[k][k], A[i][k])         A[i][k]·L[k][k]⁻ᵀ
        for i > k:  A[i][i] = syrk_tile(L[i][k], A[i][i])         A[i][i] − L[i][k]·L[i][k]ᵀ
        for i > j > k:  A[i][j] = gemm_tile(L[i][k], L[j][k], A[i][j])
                                                  A[i][j] − L[i][k]·L[j][k]ᵀ

Each task runs on the device in the OpenCL kernels of :mod:`oclla.cholesky`
and :mod:`oclla.blas`.  Operands are numpy arrays (copied to the device, the
result returned as a new numpy array; inputs are never written) or C-contiguous
2-D ``pyopencl.array.Array`` tiles of one context (the result overwrites the
device tile that the formula above assigns, which is also returned, and stays
on the device; the call only enqueues, except :func:`potrf_tile`, which
reads the device's info flag).  Tiles need not be square where the formula
allows (the last row or column of tiles).  ``queue`` defaults to the device
tile's own queue, else :func:`oclla.get_queue`.

Raises ValueError (shapes that do not conform, not 2-D, NaN/Inf in a host
tile), TypeError (dtypes other than one of float32/float64, mixed dtypes,
mixed host and device tiles), numpy.linalg.LinAlgError (potrf_tile: "leading
minor of order k is not positive definite", k counted from ``base`` + 1),
oclla.DeviceError (float64 without ``cl_khr_fp64``).
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from ._device import driver_errors, resolve_queue
from ._programs import int_zeros
from ._validate import NONFINITE, all_finite, check_dtype, check_fp64, is_device_array
from .blas import gemm, trsm, view_of
from .cholesky import factor_blocked, not_positive_definite
from .cholesky import zero_other_triangle

__all__ = ["potrf_tile", "trsm_tile", "syrk_tile", "gemm_tile"]


def _operands(names: tuple, tiles: tuple, queue):
    """(queue, dtype, on_device) of the tiles after the checks every task makes."""
    device = [is_device_array(t) for t in tiles]
    if any(device) and not all(device):
        raise TypeError(f"{', '.join(names)} must be all numpy arrays or all pyopencl "
                        f"arrays, got a mix")
    on_device = all(device)
    if on_device:
        queue = resolve_queue(queue if queue is not None else tiles[0].queue)
    else:
        queue = resolve_queue(queue)
    dtypes = set()
    for name, t in zip(names, tiles):
        if t.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {t.shape}")
        dtypes.add(check_dtype(t.dtype, name))
        if on_device:
            if t.context != queue.context:
                raise ValueError(f"{name} lives on another OpenCL context than the queue")
            if not t.flags.c_contiguous:
                raise ValueError(f"{name} must be a C-contiguous device array")
        elif not all_finite(t):
            raise ValueError(f"{name}: {NONFINITE}")
    if len(dtypes) > 1:
        raise TypeError(f"{', '.join(names)} must share one dtype, got "
                        f"{sorted(d.name for d in dtypes)}")
    dtype = dtypes.pop()
    check_fp64(queue, dtype)
    return queue, dtype, on_device


def _host(tiles: tuple):
    """The numpy tiles as C-contiguous arrays (no copy where they already are)."""
    return tuple(np.ascontiguousarray(np.asarray(t)) for t in tiles)


def _views(queue, arrays, on_device: bool):
    """Device arrays and their views: the given device tiles, or uploads of the host
    tiles."""
    devs = list(arrays) if on_device else [cl_array.to_device(queue, a) for a in arrays]
    return devs, [view_of(d) for d in devs]


def _result(queue, dev, on_device: bool):
    return dev if on_device else dev.get(queue=queue)


@driver_errors
def potrf_tile(a, *, base: int = 0, queue=None):
    """L with A = L·Lᵀ for one SPD tile (the POTRF task).

    Parameters
    ----------
    a : (b, b) numpy.ndarray or pyopencl.array.Array of float32/float64
        The tile; its lower triangle is read.  A device tile is overwritten by L.
    base : int, default 0
        The tile's first row in the whole matrix: a failing pivot at order k of
        the tile is reported as order ``base + k``.
    queue : pyopencl.CommandQueue, optional
        Default: a device tile's own queue, else :func:`oclla.get_queue`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        L, its strict upper triangle zero (a new numpy array, or ``a`` itself).

    Raises
    ------
    numpy.linalg.LinAlgError
        "leading minor of order k is not positive definite" (a device tile is
        then partly factored).
    ValueError
        Not square, not 2-D, NaN/Inf in a host tile, another context.
    TypeError
        A dtype other than float32/float64.
    oclla.DeviceError
        float64 without ``cl_khr_fp64``.
    """
    queue, dtype, on_device = _operands(("a",), (a,), queue)
    n = a.shape[0]
    if a.shape[1] != n:
        raise ValueError(f"a must be square, got shape {a.shape}")
    (dev,), (va,) = _views(queue, (a,) if on_device else _host((a,)), on_device)
    if n:
        info = int_zeros(queue)
        factor_blocked(queue, va, n, lower=True, dtype=dtype, info=info, base=int(base))
        zero_other_triangle(queue, va, n, lower=True, dtype=dtype)
        failed = int(info.get(queue=queue)[0])
        if failed:
            raise not_positive_definite(failed)
    return _result(queue, dev, on_device)


@driver_errors
def trsm_tile(l, b, *, queue=None):
    """B·L⁻ᵀ for a lower-triangular tile L (the TRSM task of the tile Cholesky).

    Parameters
    ----------
    l : (k, k) numpy.ndarray or pyopencl.array.Array of float32/float64
        L; its upper triangle is not read.
    b : (m, k) array of l's kind and dtype
        The tile below; a device tile is overwritten.
    queue : pyopencl.CommandQueue, optional
        Default: the device tiles' queue, else :func:`oclla.get_queue`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        B·L⁻ᵀ (a new numpy array, or ``b`` itself).

    Raises
    ------
    ValueError
        Shapes that do not conform, not 2-D, NaN/Inf in a host tile, another context.
    TypeError
        Dtypes other than one of float32/float64, host and device tiles mixed.
    oclla.DeviceError
        float64 without ``cl_khr_fp64``.
    """
    queue, dtype, on_device = _operands(("l", "b"), (l, b), queue)
    k = l.shape[0]
    if l.shape[1] != k or b.shape[1] != k:
        raise ValueError(f"l must be square and b have as many columns, got {l.shape} "
                         f"and {b.shape}")
    (_, dev), (vl, vb) = _views(queue, (l, b) if on_device else _host((l, b)), on_device)
    trsm(queue, k, b.shape[0], vl, vb, dtype=dtype, left=False, lower=True, trans=True)
    return _result(queue, dev, on_device)


@driver_errors
def syrk_tile(a, c, *, queue=None):
    """C − A·Aᵀ in the lower triangle of a diagonal tile (the SYRK task).

    Parameters
    ----------
    a : (n, k) numpy.ndarray or pyopencl.array.Array of float32/float64
        A tile of the finished panel.
    c : (n, n) array of a's kind and dtype
        The diagonal tile; its strict upper triangle is neither read nor
        written (kept as is).  A device tile is overwritten.
    queue : pyopencl.CommandQueue, optional
        Default: the device tiles' queue, else :func:`oclla.get_queue`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        The updated C (a new numpy array, or ``c`` itself).

    Raises
    ------
    ValueError
        Shapes that do not conform, not 2-D, NaN/Inf in a host tile, another context.
    TypeError
        Dtypes other than one of float32/float64, host and device tiles mixed.
    oclla.DeviceError
        float64 without ``cl_khr_fp64``.
    """
    queue, dtype, on_device = _operands(("a", "c"), (a, c), queue)
    n, k = a.shape
    if c.shape != (n, n):
        raise ValueError(f"c must be {n} x {n} for a of shape {a.shape}, got {c.shape}")
    (_, dev), (va, vc) = _views(queue, (a, c) if on_device else _host((a, c)), on_device)
    gemm(queue, n, n, k, -1.0, va, va, 1.0, vc, dtype=dtype, trans_b=True, triangle="lower")
    return _result(queue, dev, on_device)


@driver_errors
def gemm_tile(a, b, c, *, queue=None):
    """C − A·Bᵀ (the GEMM task of the tile Cholesky).

    Parameters
    ----------
    a : (m, k) numpy.ndarray or pyopencl.array.Array of float32/float64
    b : (n, k) array of a's kind and dtype
    c : (m, n) array of a's kind and dtype
        Overwritten where it is a device tile.
    queue : pyopencl.CommandQueue, optional
        Default: the device tiles' queue, else :func:`oclla.get_queue`.

    Returns
    -------
    numpy.ndarray or pyopencl.array.Array
        C − A·Bᵀ (a new numpy array, or ``c`` itself).

    Raises
    ------
    ValueError
        Shapes that do not conform, not 2-D, NaN/Inf in a host tile, another context.
    TypeError
        Dtypes other than one of float32/float64, host and device tiles mixed.
    oclla.DeviceError
        float64 without ``cl_khr_fp64``.
    """
    queue, dtype, on_device = _operands(("a", "b", "c"), (a, b, c), queue)
    m, k = a.shape
    n = b.shape[0]
    if b.shape[1] != k or c.shape != (m, n):
        raise ValueError(f"shapes do not conform: a {a.shape}, b {b.shape}, c {c.shape} "
                         f"(c = c - a·bᵀ)")
    (_, _, dev), (va, vb, vc) = _views(queue, (a, b, c) if on_device else _host((a, b, c)),
                                       on_device)
    gemm(queue, m, n, k, -1.0, va, vb, 1.0, vc, dtype=dtype, trans_b=True)
    return _result(queue, dev, on_device)
