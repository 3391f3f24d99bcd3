"""Input validation shared by every public function (scipy's ``_asarray_validated`` role).

Rules: 2-D where a matrix is expected; float32 or float64 only (``TypeError``
otherwise, with the conversion to use); finite unless ``check_finite=False``;
the device must hold the data (``DeviceError`` before anything is enqueued)
and support fp64 for float64.  Host arrays are never modified: they are
copied to the device, and results come back in new arrays.
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array

from ._device import DeviceError, device_info
from ._programs import enqueue, get_kernel, int_arg, int_zeros

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
NONFINITE = "array must not contain infs or NaNs"


def is_device_array(a) -> bool:
    return isinstance(a, cl_array.Array)


def check_dtype(dtype, name: str = "a") -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED_DTYPES:
        hint = ("use a.real/a.imag or a real formulation" if dtype.kind == "c"
                else "convert with .astype(numpy.float64) or .astype(numpy.float32)")
        raise TypeError(f"{name} has dtype {dtype}; oclla works in float32 or float64 ({hint})")
    return dtype


def check_fp64(queue, dtype) -> None:
    if np.dtype(dtype) == np.float64 and not device_info(queue).fp64:
        raise DeviceError(f"float64 needs cl_khr_fp64, which {device_info(queue).name} "
                          f"does not support; pass float32 data or choose another device")


def check_fits(queue, nbytes: int, what: str = "matrix") -> None:
    """Raise ``DeviceError`` if one buffer of ``nbytes`` exceeds the device's limits."""
    info = device_info(queue)
    if nbytes > info.max_alloc_size:
        raise DeviceError(f"{what} needs {nbytes / 2**20:.1f} MiB in one buffer, more than "
                          f"{info.name}'s maximum allocation of "
                          f"{info.max_alloc_size / 2**20:.1f} MiB")
    if nbytes > info.global_mem_size:
        raise DeviceError(f"{what} needs {nbytes / 2**20:.1f} MiB, more than "
                          f"{info.name}'s {info.global_mem_size / 2**20:.1f} MiB of memory")


def count_nonfinite(queue, x: cl_array.Array, count: cl_array.Array, slot: int = 0) -> None:
    """Enqueue the count of the NaN/Inf entries of a C-contiguous device array into
    the int32 device array ``count[slot]`` (no wait: the caller reads it later)."""
    if x.size == 0:
        return
    kernel = get_kernel(queue, "util.cl", "count_nonfinite", x.dtype)
    items = min(x.size, 64 * 1024)
    enqueue(queue, kernel, (items,), None, x.data, int_arg(x.size), count.data, int_arg(slot))


def defers_finite_check(a, check_finite: bool, overwrite: bool) -> bool:
    """Whether the NaN/Inf check of the operand ``a`` runs on the device beside the
    computation (:func:`status_flags`) instead of before it: a device array that is
    copied, so the copy is checked and the caller's array is never touched."""
    return check_finite and is_device_array(a) and not overwrite


def status_flags(queue, work: cl_array.Array, check_finite: bool) -> cl_array.Array:
    """Device int32 [info, NaN/Inf entries of ``work``]: info 0 for the kernels to set,
    the count enqueued (no wait) if ``check_finite``; :func:`read_status` reads both."""
    flags = int_zeros(queue, 2)
    if check_finite:
        count_nonfinite(queue, work, flags, slot=1)
    return flags


def read_status(flags: cl_array.Array) -> int:
    """info from :func:`status_flags`' array (one read, waiting for the device);
    ValueError if the operand held NaN/Inf."""
    info, nonfinite = (int(x) for x in flags.get())
    if nonfinite:
        raise ValueError(NONFINITE)
    return info


def device_has_nonfinite(queue, x: cl_array.Array) -> bool:
    """Whether a C-contiguous device array holds NaN/Inf entries (waits for the count)."""
    if x.size == 0:
        return False
    count = int_zeros(queue)
    count_nonfinite(queue, x, count)
    return bool(count.get()[0])


def as_matrix(a, queue, *, name: str = "a", square: bool = True,
              check_finite: bool = True):
    """Validate a matrix operand; return a host ndarray (C order) or a device array.

    Host inputs come back as a C-contiguous array that may be the caller's
    own object: callers copy it to the device and never write to it.
    """
    if is_device_array(a):
        if a.context != queue.context:
            raise ValueError(f"{name} lives on another OpenCL context than the queue")
        arr = a
    else:
        arr = np.asarray(a)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {arr.ndim}-D with shape {arr.shape}")
    if square and arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be square, got shape {arr.shape}")
    return checked_values(arr, queue, name=name, check_finite=check_finite)


def checked_values(arr, queue, *, name: str, check_finite: bool):
    """The checks every operand shares once its shape is right.

    dtype (float32/64), size against the device, fp64 support, C order for
    device arrays, finiteness.  Returns a device array as is, a host array
    C-contiguous (possibly the caller's own object: never written to).
    """
    dtype = check_dtype(arr.dtype, name)
    check_fits(queue, int(np.prod(arr.shape)) * dtype.itemsize, name)
    check_fp64(queue, dtype)
    if is_device_array(arr):
        if not arr.flags.c_contiguous:
            raise ValueError(f"device array {name} must be C-contiguous")
        if check_finite and device_has_nonfinite(queue, arr):
            raise ValueError(NONFINITE)
        return arr
    if check_finite and not np.isfinite(arr).all():
        raise ValueError(NONFINITE)
    return np.ascontiguousarray(arr)


def work_array(queue, validated, overwrite: bool) -> cl_array.Array:
    """The device array to compute in: a device input itself when ``overwrite``, else a copy."""
    if is_device_array(validated):
        return validated if overwrite else validated.copy()
    return cl_array.to_device(queue, validated)


def deliver(work: cl_array.Array, original, validated, overwrite: bool):
    """Device inputs get the device result; host inputs a numpy result.

    With ``overwrite`` and a writable, C-ordered numpy input of the right
    dtype, the result is written into the caller's array and that is returned.
    """
    if is_device_array(validated):
        return work
    result = work.get()
    if overwrite and isinstance(original, np.ndarray) and validated is original \
            and original.flags.writeable:
        original[...] = result
        return original
    return result


def as_rhs(b, queue, n: int, dtype, *, name: str = "b", check_finite: bool = True):
    """Validate a right-hand side of n rows (1-D or 2-D); cast to the factor's dtype."""
    if is_device_array(b):
        if b.dtype != dtype:
            raise TypeError(f"device array {name} must have dtype {dtype}, got {b.dtype}")
        arr = b
    else:
        arr = np.asarray(b)
        if arr.dtype.kind not in "fiub":
            check_dtype(arr.dtype, name)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows; the matrix is {n} x {n}")
    if is_device_array(arr):
        if check_finite and device_has_nonfinite(queue, arr):
            raise ValueError(NONFINITE)
        return arr
    if arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
        raise TypeError(f"{name} has dtype {arr.dtype}; use float32 or float64")
    if check_finite and not np.isfinite(arr).all():
        raise ValueError(NONFINITE)
    return np.ascontiguousarray(arr, dtype=dtype)


def rhs_work(queue, b_, n: int, overwrite_b: bool):
    """The (n, nrhs) device array a solve overwrites with X, and how to hand X back.

    A device right-hand side is solved in place with ``overwrite_b`` (else in
    a copy) and X stays on the device; a host one is copied in and X comes
    back as a numpy array of b's shape.
    """
    if is_device_array(b_):
        x = b_ if overwrite_b else b_.copy()
        return (x.reshape(n, -1) if x.ndim == 1 else x), (lambda: x)
    shape = b_.shape
    x2 = cl_array.to_device(queue, np.ascontiguousarray(b_.reshape(n, -1)))
    return x2, (lambda: x2.get().reshape(shape))
