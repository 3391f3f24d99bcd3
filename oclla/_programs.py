"""Program and kernel cache, and the one place kernels are enqueued.

Each (context, source file, ``-D`` options) is built once per process; the
``cl.Kernel`` objects are kept per thread (a kernel's arguments are mutable
state, so a GUI thread and a worker thread never share one).  A program the package
ships built for the device (:mod:`oclla._prebuilt`) is built from that binary; the
driver's or pyopencl's on-disk cache makes a second process start fast.

Builds of different programs may run at the same time from several threads (OpenCL
allows clBuildProgram on different programs concurrently, and pyopencl releases the
GIL while it builds): a program is guarded by its own pending build, so a thread that
asks for a program another thread is building waits for that build alone, and every
program is still built once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from concurrent.futures import Future
from contextvars import ContextVar
from typing import NamedTuple

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import _prebuilt, _trace_hooks, kernels_cl
from ._device import DeviceError, device_info, quiet_compiler
from ._queue_state import NOT_MADE, made, state_of

_log = logging.getLogger("oclla")

_lock = threading.Lock()          # guards _programs, _pending and _built (held briefly)
_programs: dict = {}              # (ctx, source, options) -> cl.Program
_pending: dict = {}               # (ctx, source, options) -> Future of a build under way
_thread_kernels = threading.local()
_built: list = []                 # a Build for each build, in order


class Build(NamedTuple):
    """One program build of this process: the source file, its options, the seconds it
    took (compiling, or loading a cached binary), and whether it was built from the
    binary shipped for the device (:mod:`oclla._prebuilt`)."""

    source: str
    options: tuple
    seconds: float
    prebuilt: bool = False


def builds() -> list:
    """Every program built in this process so far, in order (a list of :class:`Build`)."""
    return list(_built)


def build_count() -> int:
    """How many programs this process has built (each (context, source, options) once)."""
    return len(_built)


def build_seconds() -> float:
    """Seconds this process has spent building programs."""
    return sum(b.seconds for b in builds())


def programs() -> dict:
    """Every program this process has built: (context, source, options) -> cl.Program."""
    with _lock:
        return dict(_programs)


def precision_of(dtype) -> int:
    """32 for float32, 64 for float64 (the kernels' PRECISION macro)."""
    return 64 if np.dtype(dtype) == np.float64 else 32


def build_options(dtype, defines: dict) -> tuple:
    """Canonical, sorted ``-D`` options for a dtype and extra macros."""
    opts = {"PRECISION": precision_of(dtype), **defines}
    return ("-cl-std=CL1.2",) + tuple(f"-D{k}={v}" for k, v in sorted(opts.items()))


def _program(ctx: cl.Context, source: str, options: tuple) -> cl.Program:
    """The program of (ctx, source, options): built by this thread if no other thread
    is building it, else that thread's build (its program, or its DeviceError)."""
    key = (ctx, source, options)
    prg = _programs.get(key)
    if prg is not None:
        return prg
    with _lock:
        prg = _programs.get(key)
        if prg is not None:
            return prg
        pending = _pending.get(key)
        if pending is None:
            pending = _pending[key] = Future()
            builder = True
        else:
            builder = False
    if not builder:
        return pending.result()
    try:
        prg = _build(ctx, source, options)
    except BaseException as exc:
        with _lock:
            del _pending[key]         # a later call tries again
        pending.set_exception(exc)
        raise
    with _lock:
        _programs[key] = prg
        del _pending[key]
    pending.set_result(prg)
    return prg


_quiet = [0, None]                # builds under way, the warnings filter they share


@contextlib.contextmanager
def _quiet_builds():
    """:func:`quiet_compiler` around builds that may overlap in several threads: the
    first to start enters it and the last to end leaves it (``warnings.catch_warnings``
    saves and restores one process-wide filter list, so nested entries from different
    threads would leave it in the wrong state)."""
    with _lock:
        if _quiet[0] == 0:
            _quiet[1] = quiet_compiler()
            _quiet[1].__enter__()
        _quiet[0] += 1
    try:
        yield
    finally:
        with _lock:
            _quiet[0] -= 1
            if _quiet[0] == 0:
                _quiet[1].__exit__(None, None, None)


def _build(ctx: cl.Context, source: str, options: tuple) -> cl.Program:
    """Build kernels_cl/<source> with ``options``: from the binary shipped for the device
    where there is one (:mod:`oclla._prebuilt`), else from the source (or pyopencl's
    cached binary); the build is counted in :func:`builds` whether or not it succeeds."""
    text = kernels_cl.read_source(source)
    start = time.perf_counter()
    prebuilt = None
    try:
        with _quiet_builds():
            prg = prebuilt = _prebuilt.build(ctx, text, options, source)
            if prg is None:
                prg = cl.Program(ctx, text).build(options=list(options))
    except (cl.RuntimeError, cl.LogicError) as exc:
        raise DeviceError(f"building kernels_cl/{source} with "
                          f"{' '.join(options)} failed:\n{exc}") from exc
    finally:
        seconds = time.perf_counter() - start
        with _lock:
            _built.append(Build(source, options, seconds, prebuilt is not None))
    _check_build_log(prg, source, options)
    return prg


#: Build-log words that mean the program was compiled for vector hardware the compile
#: target lacks (clang: "AVX vector return of type 'float16' without 'avx512f'
#: enabled changes the ABI"): such code crashed PoCL 3.0's generic x86-64 device.
_UNSAFE_BUILD = ("changes the ABI",)


def _check_build_log(prg: cl.Program, source: str, options: tuple) -> None:
    """Send a non-empty build log to the ``oclla`` logger (debug level); refuse a program
    whose log says it cannot run correctly (:data:`_UNSAFE_BUILD`) with DeviceError."""
    for dev in prg.devices:
        log = (prg.get_build_info(dev, cl.program_build_info.LOG) or "").strip()
        if not log:
            continue
        _log.debug("build log of kernels_cl/%s %s on %s:\n%s", source, " ".join(options),
                   dev.name, log)
        if any(word in log for word in _UNSAFE_BUILD):
            raise DeviceError(f"building kernels_cl/{source} with {' '.join(options)} for "
                              f"{dev.name.strip()} produced code for vectors its compile "
                              f"target lacks:\n{log}")


def get_kernel(queue: cl.CommandQueue, source: str, name: str, dtype,
               **defines) -> cl.Kernel:
    """The kernel ``name`` of ``kernels_cl/<source>`` built for ``dtype``.

    Built once per (context, source, options); the returned ``cl.Kernel`` is
    this thread's own, stored and reused (never looked up by attribute
    again).  The thread's cache is keyed by the call's own arguments, so a
    repeated call costs one dictionary lookup.
    """
    cache = getattr(_thread_kernels, "cache", None)
    if cache is None:
        cache = _thread_kernels.cache = {}
    wide = _index64.get()
    call = (queue.context, source, name, dtype, tuple(defines.items()), wide)
    kernel = cache.get(call)
    if kernel is None:
        if precision_of(dtype) == 64 and not device_info(queue).fp64:
            raise DeviceError(f"float64 needs cl_khr_fp64, which "
                              f"{device_info(queue).name} does not support; use float32")
        options = build_options(dtype, defines if wide else {**defines, "INDEX64": 0})
        key = (queue.context, source, options, name)
        kernel = cache.get(key)
        if kernel is None:
            kernel = cache[key] = cl.Kernel(_program(queue.context, source, options), name)
        cache[call] = kernel
    return kernel


_index64: ContextVar = ContextVar("oclla_index64", default=1)


def wide_indices() -> int:
    """1 where :func:`get_kernel` builds kernels with 64-bit element indices here (outside
    an :func:`index_width` block of small operands), else 0."""
    return _index64.get()


@contextlib.contextmanager
def index_width(elements: int):
    """Within the block, kernels from :func:`get_kernel` form element indices in 32 bits
    (``-DINDEX64=0``, kernels_cl/common.h) if every operand has fewer than 2³¹
    elements (``elements``: the largest operand's count, offsets included), else in
    64 bits as everywhere outside such a block (the BLAS routines open their own, from
    their operands' buffers: :func:`oclla.blas.indices_for`).  A 64-bit product per address costs
    the LU's panel and update kernels several per cent on a GPU at n = 16384; a
    matrix of 2³¹ entries or more (n >= 46341) needs it."""
    token = _index64.set(wide_index(elements))
    try:
        yield
    finally:
        _index64.reset(token)


def wide_index(elements: int) -> int:
    """1 where an operand of ``elements`` elements needs 64-bit element indices, else 0."""
    return int(elements >= 2 ** 31)


def round_up(value: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` that is >= ``value`` (and >= multiple)."""
    return max(multiple, -(-value // multiple) * multiple)


def enqueue(queue: cl.CommandQueue, kernel: cl.Kernel, global_size, local_size,
            *args, wait_for=None) -> cl.Event:
    """Set arguments and enqueue ``kernel``; report it to an active recorder.

    The kernel's scalar argument types are declared from the first call's
    arguments (Python ints as int32, numpy scalars as their own type;
    pyopencl sets typed arguments several times faster, which
    matters where a host loop enqueues thousands of small kernels).  With no
    recorder active this is exactly ``set_args`` + enqueue.
    """
    set_args(kernel, *args)
    return launch(queue, kernel, global_size, local_size, wait_for=wait_for)


def set_args(kernel: cl.Kernel, *args) -> None:
    """Set all of ``kernel``'s arguments (scalar types declared on the first call)."""
    if not getattr(kernel, "_oclla_typed", False):
        kernel.set_scalar_arg_dtypes([_INT if type(a) is int else
                                      a.dtype if isinstance(a, np.generic) else None
                                      for a in args])
        kernel._oclla_typed = True
    kernel.set_args(*args)


def launch(queue: cl.CommandQueue, kernel: cl.Kernel, global_size, local_size, *,
           offset=None, wait_for=None) -> cl.Event:
    """Enqueue ``kernel`` with the arguments it holds (and a global ``offset``, if
    given); report it to an active recorder.

    A host loop that launches one kernel thousands of times calls this alone
    and passes what changes between launches as the global offset: setting
    arguments costs host time on every launch.  A launch the device refuses (a
    work-group its compiler gave more registers than the device holds for it:
    OUT_OF_RESOURCES) raises DeviceError, as a failed build does.
    """
    try:
        event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local_size, offset,
                                           wait_for=wait_for)
    except cl.Error as exc:
        raise DeviceError(f"launching {kernel.function_name} over {tuple(global_size)} "
                          f"work-items in groups of {local_size and tuple(local_size)} "
                          f"failed: {exc}") from exc
    if (recorder := _trace_hooks.active()) is not None:
        recorder.add_kernel(kernel.function_name, event, global_size, local_size)
    return event


def flushed_marker(queue: cl.CommandQueue) -> cl.Event:
    """A marker event after everything enqueued on ``queue`` so far, with ``queue``
    flushed: another queue may wait on it (OpenCL promises a queue's progress only once
    it is flushed, so a wait on an unflushed queue's event may never end)."""
    marker = cl.enqueue_marker(queue)
    queue.flush()
    return marker


@contextlib.contextmanager
def launch_queue(queue: cl.CommandQueue):
    """The queue a host loop of many launches should use.

    While a recorder is active: ``queue`` itself (its profiling events are
    the trace).  Otherwise a twin queue on the same device without
    profiling, ordered after everything already on ``queue``, with
    ``queue`` ordered after all that the loop enqueued on the twin: drivers
    spend several microseconds more per launch on a profiling queue (about
    6 µs with NVIDIA's), which adds up over thousands of small launches.
    """
    if _trace_hooks.active() is not None:
        yield queue
        return
    twin = made(queue, "twin", lambda: cl.CommandQueue(queue.context, queue.device))
    cl.enqueue_barrier(twin, wait_for=[flushed_marker(queue)])
    try:
        yield twin
    finally:
        cl.enqueue_barrier(queue, wait_for=[flushed_marker(twin)])


def side_queue(queue: cl.CommandQueue):
    """A second queue on ``queue``'s device for a look-ahead (work that overlaps the
    main queue's, ordered by events), profiling where ``queue`` does, or None if the
    device refuses another queue."""
    def make():
        profiling = queue.properties & cl.command_queue_properties.PROFILING_ENABLE
        try:
            return cl.CommandQueue(queue.context, queue.device, properties=profiling)
        except cl.Error:
            return None
    return made(queue, "side", make)


def side_queue_made(queue: cl.CommandQueue):
    """``queue``'s second queue if :func:`side_queue` has made one, else None (none is
    made here: a wait for work that could not have been enqueued)."""
    side = state_of(queue).side
    return None if side is NOT_MADE else side


def copy(queue: cl.CommandQueue, dest, src, *, byte_count=None, src_offset=0, dest_offset=0,
         label="copy") -> cl.Event:
    """Device-to-device copy, reported to an active recorder like a kernel."""
    if byte_count is None:
        event = cl.enqueue_copy(queue, dest, src, src_offset=src_offset, dst_offset=dest_offset)
    else:
        event = cl.enqueue_copy(queue, dest, src, byte_count=byte_count, src_offset=src_offset,
                                dst_offset=dest_offset)
    if (recorder := _trace_hooks.active()) is not None:
        recorder.add_kernel(label, event, None, None)
    return event


_INT = np.dtype(np.int32)


def int_zeros(queue: cl.CommandQueue, size: int = 1) -> cl_array.Array:
    """A device int32 array of ``size`` zeros (flags, counters), filled from the host
    when its buffer is made: no kernel launch (``cl_array.zeros`` launches one, which
    costs more than a small factorization's launch).  On NVIDIA the first command that
    uses it waits for the device to finish everything enqueued before (the driver
    copies the host's zeros then): make it where the device is idle, at a routine's
    start; amid enqueued work :func:`oclla._scratch.zeroed_ints` (a fill command in
    the queue's order) does not wait (H200: 4.5 ms behind a kernel of that length;
    benchmarks/results/nvidia-h200-2026-11-30-flags.txt)."""
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=np.zeros(size, np.int32))
    return int_array(queue, buf, size)


_INT32 = np.dtype(np.int32)


def int_array(queue: cl.CommandQueue, data, size: int) -> cl_array.Array:
    """The device int32 array of ``size`` entries over the buffer ``data``, on ``queue``.
    Made by pyopencl's fast constructor (the one its own methods use: shape, strides and
    size given), which costs 4 µs where the checking one costs 26, more than a small
    factorization's launch."""
    return cl_array.Array(None, (size,), _INT32, data=data, strides=(4,), _fast=True,
                          _size=size, _context=queue.context, _queue=queue)


def int_arg(value) -> int:
    """A scalar kernel argument of OpenCL type ``int``: a Python int, which
    :func:`enqueue` declares as int32 (set several times faster per call than
    a numpy scalar)."""
    return int(value)


def real_arg(value: float, dtype) -> np.generic:
    """A scalar kernel argument of OpenCL type ``real``."""
    return np.dtype(dtype).type(value)
