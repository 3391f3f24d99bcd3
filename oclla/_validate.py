"""Input validation shared by every public function (scipy's ``_asarray_validated`` role).

Rules: 2-D where a matrix is expected; float32 or float64 only (``TypeError``
otherwise, with the conversion to use); finite unless ``check_finite=False``;
the device must hold the data (``DeviceError`` before anything is enqueued)
and support fp64 for float64.  Host arrays are never modified: they are
copied to the device (on a CPU device an operand a call only reads is read in
place, :func:`read_only`), and results come back in new arrays.

Device arrays that are views -- an offset into their buffer, strides other
than C order's: sub-blocks, every k-th row or column, reversed slices,
transposes -- are gathered by one kernel (``kernels_cl/views.cl``) into a
new dense work array, so every algorithm sees C-contiguous arrays at offset
0.  With ``overwrite_*=True`` the result is scattered back by one kernel into
the view's own entries (never into the rest of its buffer) and the view is
returned; a view whose entries overlap (stride 0) cannot hold a result and
gets a new array instead, as a numpy input that cannot be written does:
``overwrite`` is a permission, as in scipy, never a promise.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import _scratch as scratch
from ._device import DeviceError, device_info
from ._params import params
from ._programs import enqueue, get_kernel, int_arg, int_zeros, round_up

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
NONFINITE = "array must not contain infs or NaNs"
#: NaN/Inf checks of host arrays: blocks of about this many bytes, so that no boolean
#: temporary is as large as the array; an array of several such blocks per core is
#: checked by a thread per core (numpy releases the GIL in the check: a 64 MB float32
#: array 4.7 -> 3.2 ms on two cores).
CHECK_BYTES = 1 << 20
_check_pools: dict = {}       # process id -> its threads (a forked child has none)
_MAX_ITEMS = 1 << 20          # work-items of a views.cl launch; each loops over the rest
_PASS_ITEMS = 1 << 16         # work-items of a count over a vector, and of a views.cl
                              # launch with runs (wg1d RUNS: longer runs than _MAX_ITEMS)


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


def host_bytes_available() -> int | None:
    """Bytes of host memory a new array may take: Linux's MemAvailable plus free swap
    (/proc/meminfo), elsewhere the machine's physical memory, None where neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return sum(int(fields[k].split()[0]) * 1024 for k in ("MemAvailable", "SwapFree"))
    except (OSError, KeyError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


#: How a routine that would copy a caller's host matrix can avoid the copy.
IN_PLACE_HINT = ("with overwrite_a=True a writable C-contiguous array (a memory map opened "
                 "'r+' too) is factored in place")


def check_host_room(nbytes: int, what: str, hint: str = "") -> None:
    """Raise ``MemoryError`` before a routine allocates ``nbytes`` of new host memory for
    ``what`` beyond :func:`host_bytes_available`: numpy would get the pages by overcommit
    and the system kill the process as they filled.  For the host arrays of the routes
    beyond the device's memory (tiles, out-of-core), as large as the caller's matrix;
    ``hint`` says how to do without them."""
    available = host_bytes_available()
    if available is not None and nbytes > available:
        raise MemoryError(f"{what} needs {nbytes / 2**30:.1f} GiB of new host memory, more "
                          f"than the {available / 2**30:.1f} GiB available"
                          + (f"; {hint}" if hint else ""))


def contiguous_host(arr: np.ndarray, what: str) -> np.ndarray:
    """The host array ``arr`` C-contiguous: ``arr`` itself where it is, else a copy made
    after :func:`check_host_room`."""
    if not arr.flags.c_contiguous:
        check_host_room(arr.nbytes, what)
    return np.ascontiguousarray(arr)


# ---- device views ------------------------------------------------------------------------

def is_view(a) -> bool:
    """Whether ``a`` is a non-empty device array the kernels cannot address as a dense
    row-major block at offset 0 of its buffer (an offset, or strides other than C
    order's: sub-blocks, steps, reversed slices, transposes)."""
    return is_device_array(a) and a.size > 0 and (a.offset != 0 or not a.flags.c_contiguous)


def _view_layout(a: cl_array.Array, name: str) -> tuple:
    """The 1-D or 2-D view ``a`` as views.cl addresses it: numpy scalars (offset, row
    stride, column stride, columns) in elements (a 1-D view: one column)."""
    if a.ndim not in (1, 2):
        raise ValueError(f"device array {name} must be 1-D or 2-D, got shape {a.shape}")
    item = a.dtype.itemsize
    strides = tuple(a.strides) + (item,) * (2 - a.ndim)
    if a.offset % item or any(s % item for s in strides):
        raise ValueError(f"device array {name} has an offset or strides that are not "
                         f"multiples of its {item}-byte entries")
    cols = a.shape[1] if a.ndim == 2 else 1
    rs, cs = (s // item for s in strides)
    return np.int64(a.offset // item), np.int64(rs), np.int64(cs), np.uint64(cols)


def _views_launch(queue, size: int, dtype) -> tuple:
    """Global and local size of a views.cl kernel over ``size`` entries, and gather's and
    scatter's ``runs`` argument (the ``wg1d`` knob RUNS)."""
    p = params(queue, "wg1d", dtype)
    items = _PASS_ITEMS if p["RUNS"] else _MAX_ITEMS
    return (round_up(min(size, items), p["WG"]),), (p["WG"],), int_arg(p["RUNS"])


def gather(queue, a: cl_array.Array, name: str = "a") -> cl_array.Array:
    """A new dense (C-contiguous, offset 0) device array holding the entries of the 1-D
    or 2-D float32/float64 device view ``a`` (any offset and strides); one kernel, no
    wait."""
    check_dtype(a.dtype, name)
    out = cl_array.empty(queue, a.shape, a.dtype)
    off, rs, cs, cols = _view_layout(a, name)
    gather_entries(queue, a.base_data, off, rs, cs, cols, a.size, out.data, a.dtype)
    return out


def gather_entries(queue, base, off: int, rs: int, cs: int, cols: int, size: int, out,
                   dtype) -> None:
    """``out[i] = base[off + (i // cols)·rs + (i % cols)·cs]`` for i < ``size``: the view
    of ``base`` (a buffer of ``dtype`` reals) with ``cols`` columns and element strides
    ``rs``, ``cs``, row-major into the buffer ``out`` (views.cl's gather); one kernel, no
    wait."""
    kernel = get_kernel(queue, "views.cl", "gather", dtype)
    global_size, local_size, runs = _views_launch(queue, size, dtype)
    enqueue(queue, kernel, global_size, local_size, base, np.int64(off), np.int64(rs),
            np.int64(cs), np.uint64(cols), np.uint64(size), out, runs)


def holds_results(view: cl_array.Array) -> bool:
    """Whether distinct entries of the device array ``view`` are distinct memory, so a
    result can be scattered into it: sorted by stride, each axis steps over the whole
    extent of the axes before it (true for every slice, step and transpose; false for
    a stride of 0)."""
    extent = view.dtype.itemsize
    for size, stride in sorted(zip(view.shape, view.strides), key=lambda t: abs(t[1])):
        if size > 1:
            if abs(stride) < extent:
                return False
            extent += abs(stride) * (size - 1)
    return True


def scatter(queue, values: cl_array.Array, view: cl_array.Array) -> None:
    """Write the dense device array ``values`` into the view's own entries (same shape;
    ``holds_results(view)``); nothing else of the view's buffer is written.  One
    kernel, no wait."""
    off, rs, cs, cols = _view_layout(view, "the result")
    kernel = get_kernel(queue, "views.cl", "scatter", view.dtype)
    global_size, local_size, runs = _views_launch(queue, view.size, view.dtype)
    enqueue(queue, kernel, global_size, local_size, values.data, view.base_data, off, rs, cs,
            cols, np.uint64(view.size), runs)


def dense(queue, a):
    """``a`` itself unless it is a device view (:func:`is_view`), then its gathered copy."""
    return gather(queue, a) if is_view(a) else a


def device_pivots(queue, piv: cl_array.Array, flags: cl_array.Array, slot: int = 0):
    """A dense int32 copy of the device pivot vector ``piv`` (any view) with every entry
    outside [0, n) replaced by a no-op interchange and counted into ``flags[slot]``
    (enqueued, no wait: the caller reads ``flags`` with its other results and raises).
    The kernels that apply the copy never address a row outside the matrix."""
    n = piv.shape[0]
    checked = cl_array.empty(queue, n, np.int32)
    off, stride, _, _ = _view_layout(piv, "piv")
    kernel = get_kernel(queue, "views.cl", "check_pivots", np.float32)
    global_size, local_size, _ = _views_launch(queue, n, np.float32)
    enqueue(queue, kernel, global_size, local_size, piv.base_data, off, stride, np.uint64(n),
            checked.data, flags.data, int_arg(slot))
    return checked


# ---- NaN/Inf and status flags ------------------------------------------------------------

def count_nonfinite(queue, x: cl_array.Array, count: cl_array.Array, slot: int = 0) -> None:
    """Enqueue the count of the NaN/Inf entries of a C-contiguous device array into
    the int32 device array ``count[slot]`` (no wait: the caller reads it later)."""
    if x.size == 0:
        return
    kernel = get_kernel(queue, "util.cl", "count_nonfinite", x.dtype)
    p = params(queue, "wg1d", x.dtype)
    wg = p["WG"]
    # a fixed work-group size: a runtime that compiles a kernel per work-group shape
    # (PoCL) compiles this one once, whatever the size
    items = round_up(min(x.size, _PASS_ITEMS), wg)
    enqueue(queue, kernel, (items,), (wg,), x.data, np.int64(x.size), count.data, int_arg(slot),
            int_arg(p["RUNS"]))


def defers_finite_check(a, check_finite: bool, overwrite: bool) -> bool:
    """Whether the NaN/Inf check of the operand ``a`` runs on the device beside the
    computation (:func:`status_flags`) instead of before it: a device array computed
    in a copy (not overwritten, or a view, which is gathered), so the copy is checked
    and the caller's array is never touched (:func:`checked_beside`'s rule, the
    operand its own output)."""
    return checked_beside(a, check_finite, a, overwrite)


def status_flags(queue, work: cl_array.Array, check_finite: bool) -> cl_array.Array:
    """Device int32 [info, NaN/Inf entries of ``work``]: info 0 for the kernels to set,
    the count enqueued (no wait) if ``check_finite``; :func:`read_status` reads both.
    From the queue's pool (an allocation costs a small factorization tens of µs on
    NVIDIA): kernels on other queues may write it (a :func:`~oclla._programs.launch_queue`
    twin, a look-ahead queue), all ordered before the read, which waits for them."""
    flags = scratch.zeroed_ints(queue, 2)
    if check_finite:
        count_nonfinite(queue, work, flags, slot=1)
    return flags


def _raise_nonfinite(values) -> int:
    info, nonfinite = (int(x) for x in values)
    if nonfinite:
        raise ValueError(NONFINITE)
    return info


def read_status(flags: cl_array.Array) -> int:
    """info from :func:`status_flags`' array (one read, waiting for the device);
    ValueError if the operand held NaN/Inf."""
    return _raise_nonfinite(flags.get())


def read_status_with(flags: cl_array.Array, result, *, host_result: bool):
    """``(info, X)``: info from :func:`status_flags`' array, X from ``result()``.

    ``host_result`` (``result()`` reads X back into a new host array): the flags
    are read in the same wait as X, one round trip.  Otherwise ``result()`` may
    write X into the caller's device view, so the flags are read first and
    ``result()`` runs only if they flag nothing (X is None for a nonzero info).
    ValueError if an operand held NaN/Inf.
    """
    if not host_result:
        info = read_status(flags)
        return info, (None if info else result())
    host = np.empty(2, np.int32)
    event = cl.enqueue_copy(flags.queue, host, flags.data, is_blocking=False)
    value = result()
    event.wait()
    return _raise_nonfinite(host), value


def device_has_nonfinite(queue, x: cl_array.Array) -> bool:
    """Whether a C-contiguous device array holds NaN/Inf entries (waits for the count)."""
    if x.size == 0:
        return False
    count = int_zeros(queue)
    count_nonfinite(queue, x, count)
    return bool(count.get()[0])


# ---- operands ----------------------------------------------------------------------------

def as_matrix(a, queue, *, name: str = "a", square: bool = True,
              check_finite: bool = True):
    """Validate a matrix operand; return a host ndarray (C order) or a dense device array.

    Host inputs come back as a C-contiguous array that may be the caller's
    own object: callers copy it to the device and never write to it.  A
    device view comes back gathered (:func:`dense`).
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

    dtype (float32/64), size against the device, fp64 support, finiteness.
    Returns a device array as is, or gathered into a new dense array if it is
    a view (:func:`dense`); a host array C-contiguous (possibly the caller's
    own object: never written to).
    """
    dtype = check_dtype(arr.dtype, name)
    check_fits(queue, math.prod(arr.shape) * dtype.itemsize, name)
    check_fp64(queue, dtype)
    return _finite_and_dense(arr, queue, check_finite=check_finite)


def _finite_rows(arr: np.ndarray, start: int, stop: int) -> bool:
    rows = max(1, CHECK_BYTES // max(1, arr[:1].nbytes))
    return all(np.isfinite(arr[i:min(i + rows, stop)]).all()
               for i in range(start, stop, rows))


def all_finite(arr: np.ndarray) -> bool:
    """Whether the host array ``arr`` holds no NaN or Inf: a block of rows at a time
    (:data:`CHECK_BYTES`), and for an array of several blocks per core, a share of the
    rows per core from a pool of threads."""
    if arr.ndim == 0:
        return bool(np.isfinite(arr))
    cores = os.cpu_count() or 1
    parts = min(cores, arr.nbytes // (4 * CHECK_BYTES), arr.shape[0])
    if parts < 2:
        return _finite_rows(arr, 0, arr.shape[0])
    pool = _check_pools.get(os.getpid())
    if pool is None:
        pool = _check_pools[os.getpid()] = ThreadPoolExecutor(
            cores, thread_name_prefix="oclla-check")
    bounds = [arr.shape[0] * p // parts for p in range(parts + 1)]
    return all(pool.map(lambda p: _finite_rows(arr, bounds[p], bounds[p + 1]), range(parts)))


def _finite_and_dense(arr, queue, *, check_finite: bool, dtype=None):
    """A device ``arr`` gathered if it is a view (:func:`dense`), a host one C-contiguous
    (in ``dtype`` if given); ValueError for NaN/Inf when ``check_finite``."""
    if is_device_array(arr):
        arr = dense(queue, arr)
        if check_finite and device_has_nonfinite(queue, arr):
            raise ValueError(NONFINITE)
        return arr
    if check_finite and not all_finite(arr):
        raise ValueError(NONFINITE)
    return np.ascontiguousarray(arr, dtype=dtype)


def work_array(queue, validated, overwrite: bool, *, original=None) -> cl_array.Array:
    """The device array to compute in: a device input itself when ``overwrite``, else a copy.

    ``original`` is the caller's argument that ``validated`` came from: when
    it is a device view, ``validated`` is already a private gathered copy and
    is computed in directly (:func:`deliver` scatters it back).
    """
    if is_device_array(validated):
        private = original is not None and validated is not original
        return validated if (overwrite or private) else validated.copy()
    return scratch.private_copy(queue, validated)


def _into_view(queue, work: cl_array.Array, original, overwrite: bool):
    """``original`` with ``work`` scattered into it, when ``overwrite`` allows it and
    ``original`` is a device view that can hold it; else ``work``."""
    if overwrite and is_view(original) and holds_results(original):
        scatter(queue, work, original)
        return original
    return work


def deliver(work: cl_array.Array, original, validated, overwrite: bool):
    """Device inputs get the device result; host inputs a numpy result.

    With ``overwrite``, a device view gets the result scattered into its own
    entries and is returned (:func:`_into_view`); a writable, C-ordered numpy
    input of the right dtype gets it written in and is returned.
    """
    if is_device_array(validated):
        return _into_view(work.queue, work, original, overwrite)
    result = work.get()
    if overwrite and isinstance(original, np.ndarray) and validated is original \
            and original.flags.writeable:
        original[...] = result
        return original
    return result


def rhs_dtype_error(name: str, dtype, factor_dtype, *, device: bool) -> TypeError:
    """The TypeError for a right-hand side whose dtype the factor's cannot hold exactly."""
    what = f"device array {name}" if device else name
    return TypeError(f"{what} has dtype {dtype} but the factor is {factor_dtype}: the solve "
                     f"runs in the factor's dtype and converting {name} would not be exact; "
                     f"pass {name}.astype(numpy.{factor_dtype}), or factor in float64")


def as_rhs(b, queue, n: int, dtype, *, name: str = "b", check_finite: bool = True):
    """Validate a right-hand side of n rows (1-D or 2-D) for a factor of ``dtype``.

    A host ``b`` is converted to ``dtype`` when numpy's "safe" rule says the
    conversion is exact (bool, integers that fit, float32 into float64);
    anything else -- float64 into a float32 factor, complex, int64 into
    float32 -- is a TypeError that names the conversion.  A device ``b`` must
    have ``dtype``; a device view comes back gathered (:func:`dense`).
    """
    if is_device_array(b):
        if b.context != queue.context:
            raise ValueError(f"{name} lives on another OpenCL context than the queue")
        if b.dtype != dtype:
            raise rhs_dtype_error(name, b.dtype, dtype, device=True)
        arr = b
    else:
        arr = np.asarray(b)
        if not np.can_cast(arr.dtype, dtype, "safe"):
            raise rhs_dtype_error(name, arr.dtype, dtype, device=False)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows; the matrix is {n} x {n}")
    return _finite_and_dense(arr, queue, check_finite=check_finite,
                             dtype=None if is_device_array(arr) else dtype)


def rhs_work(queue, b_, n: int, overwrite_b: bool, *, original=None):
    """The (n, nrhs) device array a solve overwrites with X, and how to hand X back.

    A device right-hand side is solved in place with ``overwrite_b`` (else in
    a copy) and X stays on the device; a host one is copied in and X comes
    back as a numpy array of b's shape (a numpy b is never written:
    ``overwrite_b`` is a permission).  ``original``: the caller's b, when it
    is a device view that :func:`as_rhs` gathered into ``b_`` -- X is
    computed in that private copy and, with ``overwrite_b``, scattered back
    into the view's own entries.
    """
    if is_device_array(b_):
        private = original is not None and b_ is not original
        x = b_ if (overwrite_b or private) else b_.copy()
        x2 = x.reshape(n, -1) if x.ndim == 1 else x
        return x2, (lambda: _into_view(queue, x, original, overwrite_b))
    shape = b_.shape
    x2 = scratch.private_copy(queue, np.ascontiguousarray(b_.reshape(n, -1)))
    return x2, (lambda: x2.get().reshape(shape))


# ---- the prologues and epilogues every public factorization and solve share ---------------

#: The ``method`` values of the factorizations: the blocked algorithm or the per-pivot loop.
FACTOR_METHODS = ("blocked", "pivot")


def check_method(method: str, methods: tuple = FACTOR_METHODS) -> str:
    """``method`` if it is one of ``methods``, else ValueError naming them."""
    if method not in methods:
        raise ValueError(f"method must be one of {methods}, got {method!r}")
    return method


def unpack_pair(pair, what: str, producer: str) -> tuple:
    """The two items of a factor pair such as ``(lu, piv)`` or ``(c, lower)``, or a
    TypeError saying that ``what`` must be the pair ``producer`` returns."""
    try:
        first, second = pair
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be the pair returned by {producer}") from None
    return first, second


def factor_in_place(a, queue, factor, *, overwrite_a: bool, check_finite: bool,
                    validate=as_matrix, deferrable: bool = True):
    """Validate ``a``, factor it on the device and hand the result back as the caller gave it.

    ``validate(a, queue, check_finite=...)`` returns the host array or dense
    device array to factor (:func:`as_matrix` by default).  Where ``deferrable``
    and the factorization works in a private copy of a device input, NaN/Inf
    are not searched first: ``factor(work, True)`` counts them beside the
    factorization (:func:`status_flags`).  ``factor(work, deferred)`` overwrites
    the dense device array ``work`` with the factor; its return value comes
    back as the pair's second item (None for an empty input, which is not
    factored: an empty copy is returned).  The result is delivered by
    :func:`deliver`: a device array for a device input (``a`` itself, or its
    view with the result scattered into it, where ``overwrite_a`` allows), else
    a numpy array.
    """
    deferred = deferrable and defers_finite_check(a, check_finite, overwrite_a)
    validated = validate(a, queue, check_finite=check_finite and not deferred)
    if validated.size == 0:
        device = is_device_array(validated)
        return (validated if device and overwrite_a else validated.copy()), None
    work = work_array(queue, validated, overwrite_a, original=a)
    extra = factor(work, deferred)
    return deliver(work, a, validated, overwrite_a), extra


def to_device(queue, a):
    """A validated operand on the device: itself if it is there, else a copy private
    to the call (:func:`oclla._scratch.private_copy`: for commands on ``queue``, never
    handed out)."""
    return a if is_device_array(a) else scratch.private_copy(queue, a)


def read_only(queue, a, *, results_to_host: bool):
    """A validated operand that the call's kernels only read, on the device: itself if
    it is there; on a CPU device, when the call reads its results back to the host
    before it returns (``results_to_host``: so no kernel reads the array after the
    call), a buffer over the numpy array's own memory (``CL_MEM_USE_HOST_PTR``: the
    device reads it in place, where a copy of a 64 MB factor took PoCL 8-40 ms, more
    than the solve with it); else as :func:`to_device`.  A call whose results stay on
    the device returns before its kernels end, so the caller could change or free the
    array under them: it gets a copy."""
    if is_device_array(a):
        return a
    if (results_to_host and queue.device.type & cl.device_type.CPU
            and a.flags.c_contiguous and a.flags.aligned and a.size):
        buf = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR,
                        hostbuf=a)
        return cl_array.Array(queue, a.shape, a.dtype, data=buf)
    return scratch.private_copy(queue, a)


def checked_beside(x, check_finite: bool, b, overwrite_b: bool) -> bool:
    """Whether the NaN/Inf check of a solve's operand ``x`` (its factor, or its
    right-hand side ``b``) runs on the device beside the solve and is read with X, one
    wait for all the operands instead of one each before the solve: a device array,
    the check asked for, and X not solved in the caller's b itself (bad input must then
    be found before b is overwritten)."""
    in_b = overwrite_b and is_device_array(b) and not is_view(b)
    return check_finite and is_device_array(x) and not in_b


def solve_in_place(queue, b, n: int, dtype, solve, *, overwrite_b: bool, check_finite: bool,
                   unchecked: tuple = ()):
    """Validate the right-hand side ``b`` of n rows (:func:`as_rhs`), let ``solve(x2)``
    overwrite the (n, nrhs) device array ``x2`` with X, and hand X back as b came
    (:func:`rhs_work`: device for a device b, numpy of b's shape otherwise).
    Nothing is solved for n = 0 or no columns.  ``unchecked``: device operands of the
    solve whose NaN/Inf check the caller left to the solve (:func:`checked_beside`):
    counted beside it with a device b's own, and read with X in one wait (ValueError
    then, the caller's arrays untouched)."""
    defer_b = checked_beside(b, check_finite, b, overwrite_b)
    b_ = as_rhs(b, queue, n, dtype, check_finite=check_finite and not defer_b)
    if n == 0 or b_.size == 0:
        return b_.copy() if is_device_array(b_) else np.empty(b_.shape, dtype)
    x2, result = rhs_work(queue, b_, n, overwrite_b, original=b)
    counted = (*unchecked, x2) if defer_b else unchecked
    if not counted:
        solve(x2)
        return result()
    flags = int_zeros(queue, 2)
    for operand in counted:
        count_nonfinite(queue, operand, flags, slot=1)
    solve(x2)
    return read_status_with(flags, result, host_result=not is_device_array(b_))[1]


# ---- weights and shapes of A·D²·Aᵀ (assembly and weighted least squares) ---------------

def _invalid_weights_on_device(queue, d2: cl_array.Array) -> bool:
    count = int_zeros(queue)
    kernel = get_kernel(queue, "ad2at.cl", "count_invalid_weights", d2.dtype)
    wg = params(queue, "wg1d", d2.dtype)["WG"]
    enqueue(queue, kernel, (round_up(min(d2.size, _PASS_ITEMS), wg),), (wg,), d2.data,
            np.int64(d2.size), count.data)
    return bool(count.get()[0])


def validate_weights(d2, n: int, dtype, queue, *, check_finite: bool, name: str = "d2"):
    """d2 as a 1-D array of n non-negative weights in ``dtype`` (host, or a dense device
    array: a device view is gathered)."""
    if is_device_array(d2):
        if d2.context != queue.context:
            raise ValueError(f"{name} lives on another OpenCL context than the queue")
        if d2.dtype != dtype:
            raise TypeError(f"device array {name} must have dtype {dtype}, got {d2.dtype}")
        if d2.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},) to match a's {n} columns, "
                             f"got {d2.shape}")
        d2 = dense(queue, d2)
        if n and _invalid_weights_on_device(queue, d2):
            raise ValueError(f"{name} must be >= 0 (the diagonal of D², squared weights) "
                             f"and not NaN")
        if n and check_finite:
            if device_has_nonfinite(queue, d2):
                raise ValueError(f"{name} must not contain infs or NaNs")
        return d2
    arr = np.asarray(d2)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"{name} has dtype {arr.dtype}; weights must be real numbers")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) to match a's {n} columns, "
                         f"got {arr.shape}")
    arr64 = arr.astype(np.float64)
    bad = np.flatnonzero(~(arr64 >= 0))
    if bad.size:
        raise ValueError(f"{name} must be >= 0 (the diagonal of D², squared weights) and "
                         f"not NaN; {name}[{bad[0]}] = {arr64[bad[0]]}")
    if check_finite and not all_finite(arr64):
        raise ValueError(f"{name} must not contain infs or NaNs")
    return np.ascontiguousarray(arr, dtype=dtype)


def check_shape(m: int, n: int) -> None:
    """ValueError unless the m x n A of A·D²·Aᵀ has m <= n (else the product is singular)."""
    if m > n:
        raise ValueError(f"a is {m} x {n} with m > n: A·D²·Aᵀ ({m} x {m}) has rank at most "
                         f"{n} < {m}, so it is singular and has no Cholesky factor; the rows "
                         f"of a are the unknowns and need at least as many columns "
                         f"(observations)")
