"""Device selection, capability probing and profiling-enabled queues.

Selection order for :func:`get_queue` (DESIGN.md): the ``device`` argument
(index into :func:`devices`, case-insensitive name substring, or a
``pyopencl.Device``), the ``OCLLA_DEVICE`` environment variable, pyopencl's
``PYOPENCL_CTX``, the first GPU, the first CPU (PoCL, the embedded default).
One context and one profiling queue are kept per device for the process.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import functools
import glob
import logging
import os
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, asdict

import pyopencl as cl

from . import _profiles

_log = logging.getLogger("oclla")


class DeviceError(RuntimeError):
    """Device trouble: raised by every oclla function that meets it.

    Raised when no OpenCL device is found or none matches the selection, for
    float64 on a device without ``cl_khr_fp64``, for an allocation larger
    than the device allows, when a kernel family fails to build or run
    with every parameter set (the message then carries the build log), and
    for any error the OpenCL driver reports while a public function runs
    (memory the device cannot provide, a lost device: pyopencl's error is
    the ``__cause__``), and in a process forked from one that had used
    OpenCL (whose first OpenCL call would wait forever or fail).  A subclass
    of :class:`RuntimeError`.
    """


#: The process that first used OpenCL through oclla (None: none yet).  A process forked
#: from it inherits its OpenCL objects but not the drivers' threads and device state: in
#: such a child PoCL's first OpenCL call waits forever (a context and queue of the
#: parent's, or new ones alike), and NVIDIA's CUDA-based driver refuses a forked child.
_opencl_pid: list = [None]


def note_opencl_use() -> None:
    """Remember this process as the one that uses OpenCL (on its first use)."""
    if _opencl_pid[0] is None:
        _opencl_pid[0] = os.getpid()


def check_not_forked() -> None:
    """DeviceError in a process forked from one that had used OpenCL through oclla,
    instead of the wait without end or the failure its first OpenCL call would meet."""
    parent = _opencl_pid[0]
    if parent is not None and parent != os.getpid():
        raise DeviceError(
            f"this process was forked from process {parent}, which had initialized OpenCL; "
            "OpenCL drivers do not survive fork (their threads and device state stay in the "
            "parent: PoCL waits forever, NVIDIA's driver fails), so OpenCL cannot be used "
            "here. Start worker processes with multiprocessing's 'spawn' or 'forkserver' "
            "method (multiprocessing.get_context('spawn')), or use oclla in the workers only")


#: The driver's status codes of memory it could not provide.
_OUT_OF_MEMORY = (cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                  cl.status_code.OUT_OF_RESOURCES, cl.status_code.OUT_OF_HOST_MEMORY)


def driver_errors(function):
    """``function`` with the OpenCL driver's errors (pyopencl's ``cl.Error``: memory the
    device cannot provide when a buffer is first used, a lost device) raised as
    :class:`DeviceError`, the driver's error as its cause: what every public function
    promises.  pyopencl's errors derive from neither RuntimeError nor MemoryError, so
    a caller's ``except DeviceError`` would miss them.  Measured on an H200 whose
    memory another buffer held: a factorization's first copy failed with
    MEM_OBJECT_ALLOCATION_FAILURE, and the queue then ran the next call right
    (benchmarks/results/nvidia-h200-2026-12-02-device-full.txt)."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        check_not_forked()
        try:
            return function(*args, **kwargs)
        except cl.Error as exc:
            what = ("the device could not provide the memory (other buffers or processes "
                    "may hold it)" if getattr(exc, "code", None) in _OUT_OF_MEMORY
                    else "the OpenCL driver failed")
            raise DeviceError(f"{function.__qualname__}: {what}: {exc}") from exc
    return call


@dataclass(frozen=True)
class DeviceInfo:
    """What oclla needs to know about one OpenCL device (:func:`devices`,
    :func:`device_info`).

    Under a device-limit profile (:func:`oclla.set_profile`) the limits are
    the profile's, not the device's own.

    Attributes
    ----------
    index : int
        Position in :func:`devices` (the index ``OCLLA_DEVICE`` takes); -1 for
        a device outside that list.
    name, vendor, platform : str
        As the driver reports them (``CL_DEVICE_NAME``, ``CL_DEVICE_VENDOR``,
        the platform's name).
    driver_version : str
        ``CL_DRIVER_VERSION`` (tuned entries are stored per driver).
    opencl_c_version : str
        ``CL_DEVICE_OPENCL_C_VERSION``.
    kind : str
        "GPU", "CPU", "ACCELERATOR" or "OTHER".
    fp64 : bool
        Whether the device reports ``cl_khr_fp64`` (float64 needs it).
    compute_units : int
        ``CL_DEVICE_MAX_COMPUTE_UNITS``.
    max_work_group_size : int
        Work-items per work-group, at most.
    max_work_item_sizes : tuple of int
        Work-items per work-group along each dimension, at most.
    local_mem_size, global_mem_size, max_alloc_size : int
        Bytes of local memory per work-group, of global memory, and of the
        largest single allocation (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``).
    max_clock_mhz : int
        ``CL_DEVICE_MAX_CLOCK_FREQUENCY``, MHz.
    native_width_float, native_width_double : int
        ``CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT`` / ``_DOUBLE`` as reported
        (the widths oclla builds with are those the device really compiles).
    profile : str or None
        The device-limit profile imposed, if any.
    """

    index: int
    name: str
    vendor: str
    platform: str
    driver_version: str
    opencl_c_version: str
    kind: str                    # "GPU", "CPU", "ACCELERATOR" or "OTHER"
    fp64: bool
    compute_units: int
    max_work_group_size: int
    max_work_item_sizes: tuple
    local_mem_size: int          # bytes
    global_mem_size: int         # bytes
    max_alloc_size: int          # bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE
    max_clock_mhz: int
    native_width_float: int      # CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT (see vector_width)
    native_width_double: int
    profile: str | None = None   # the device-limit profile imposed (oclla._profiles)

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        gib = 1 << 30
        return (f"[{self.index}] {self.name} ({self.kind}, {self.platform}; "
                f"driver {self.driver_version}) fp64={'yes' if self.fp64 else 'no'} "
                f"CUs={self.compute_units} wg<={self.max_work_group_size} "
                f"local={self.local_mem_size // 1024} KiB "
                f"global={self.global_mem_size / gib:.1f} GiB "
                f"max-alloc={self.max_alloc_size / gib:.1f} GiB"
                + (f" profile={self.profile}" if self.profile else ""))


_KIND_NAMES = {
    cl.device_type.GPU: "GPU",
    cl.device_type.CPU: "CPU",
    cl.device_type.ACCELERATOR: "ACCELERATOR",
}

_lock = threading.RLock()
_queues: dict = {}        # cl.Device -> cl.CommandQueue
_default_queues: dict = {}   # (OCLLA_DEVICE, PYOPENCL_CTX) -> get_queue()'s default queue
_contexts: dict = {}      # cl.Device -> its cl.Context (one per device, shared)


def _context(dev: cl.Device) -> cl.Context:
    """The process's one context of ``dev``: its queue's, its compile probes'.  Making a
    context can take seconds (about 2 s each on NVIDIA's driver), so none is made twice."""
    with _lock:
        ctx = _contexts.get(dev)
        if ctx is None:
            ctx = _contexts[dev] = cl.Context([dev])
        return ctx


_info_by_device: dict = {}  # cl.Device -> DeviceInfo


def _kind(dev: cl.Device) -> str:
    for bit, name in _KIND_NAMES.items():
        if dev.type & bit:
            return name
    return "OTHER"


def _all_cl_devices() -> list:
    check_not_forked()
    note_opencl_use()
    found = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return found
    for platform in platforms:
        try:
            found.extend(platform.get_devices())
        except cl.Error:
            continue
    return found


def _probe(index: int, dev: cl.Device) -> DeviceInfo:
    """The device's own report, with the device-limit profile in force imposed."""
    extensions = dev.extensions.split()
    fields = dict(
        index=index,
        name=dev.name.strip(),
        vendor=dev.vendor.strip(),
        platform=dev.platform.name.strip(),
        driver_version=dev.driver_version.strip(),
        opencl_c_version=dev.opencl_c_version.strip(),
        kind=_kind(dev),
        fp64="cl_khr_fp64" in extensions or dev.double_fp_config != 0,
        compute_units=int(dev.max_compute_units),
        max_work_group_size=int(dev.max_work_group_size),
        max_work_item_sizes=tuple(int(s) for s in dev.max_work_item_sizes),
        local_mem_size=int(dev.local_mem_size),
        global_mem_size=int(dev.global_mem_size),
        max_alloc_size=int(dev.max_mem_alloc_size),
        max_clock_mhz=int(dev.max_clock_frequency),
        native_width_float=max(1, int(dev.native_vector_width_float)),
        native_width_double=max(1, int(dev.native_vector_width_double)),
    )
    return DeviceInfo(**_profiles.apply(_profiles.current(), fields))


def devices() -> list[DeviceInfo]:
    """Every OpenCL device visible to this process, with the capabilities oclla uses.

    Parameters
    ----------
    None

    Returns
    -------
    list of DeviceInfo
        In the order of the platforms and their devices, which is the order
        of the indices ``OCLLA_DEVICE`` and ``device=`` take (empty when
        OpenCL sees no device).

    Raises
    ------
    Nothing
        A platform that cannot list its devices is skipped.
    """
    return [_probe(i, d) for i, d in enumerate(_all_cl_devices())]


def _match(spec, cl_devices: list) -> cl.Device:
    if isinstance(spec, cl.Device):
        return spec
    if isinstance(spec, (int,)) or (isinstance(spec, str) and spec.strip().isdigit()):
        index = int(spec)
        if not 0 <= index < len(cl_devices):
            raise DeviceError(f"device index {index} out of range: "
                              f"{len(cl_devices)} OpenCL device(s) found")
        return cl_devices[index]
    if isinstance(spec, str):
        needle = spec.strip().lower()
        for dev in cl_devices:
            if needle in dev.name.lower() or needle in dev.platform.name.lower():
                return dev
        names = ", ".join(d.name.strip() for d in cl_devices) or "none"
        raise DeviceError(f"no OpenCL device matches {spec!r}; found: {names}")
    raise TypeError(f"device must be an index, a name substring or a pyopencl.Device, "
                    f"not {type(spec).__name__}")


_PROBE_SOURCE = "__kernel void probe(__global float *x) { x[get_global_id(0)] *= 2.0f; }"
_build_status: dict = {}    # cl.Device -> None (compiles) or the error text


def build_problem(dev: cl.Device) -> str | None:
    """None if the device compiles a trivial kernel, else the compiler's complaint.

    Some OpenCL CPU runtimes list a device they cannot compile for (PoCL 3.0
    from PyPI on CPUs newer than its LLVM, for one); default selection skips
    such devices.  The result is memoized per process.
    """
    with _lock:
        if dev in _build_status:
            return _build_status[dev]
        try:
            cl.Program(_context(dev), _PROBE_SOURCE).build()
            problem = None
        except cl.Error as exc:
            problem = str(exc).strip() or type(exc).__name__
        _build_status[dev] = problem
        return problem


def build_hint(problem: str) -> str:
    """A fix for a known compiler failure, or an empty string."""
    if "unknown target CPU" in problem:
        return ("this PoCL's LLVM does not know this CPU; install a newer PoCL "
                "(Debian/Ubuntu: `apt-get install pocl-opencl-icd`; conda: `conda install pocl`)")
    return ""


def _default_device(cl_devices: list) -> cl.Device:
    for wanted in (cl.device_type.GPU, cl.device_type.CPU, cl.device_type.ALL):
        for dev in cl_devices:
            if dev.type & wanted and build_problem(dev) is None:
                return dev
    problems = "; ".join(f"{d.name.strip()}: {build_problem(d)}" for d in cl_devices)
    hints = {build_hint(build_problem(d)) for d in cl_devices} - {""}
    raise DeviceError("no OpenCL device can compile kernels (" + problems + ")"
                      + ("".join(f"\n{h}" for h in hints)))


def _compiling(dev: cl.Device) -> cl.Device:
    """``dev`` if it compiles kernels, else a DeviceError naming what its compiler said
    (and the fix, where :func:`build_hint` knows one): a device chosen by name, index or
    environment is refused at once rather than at its first kernel."""
    problem = build_problem(dev)
    if problem is None:
        return dev
    hint = build_hint(problem)
    raise DeviceError(f"{dev.name.strip()} ({dev.platform.name.strip()}) cannot compile "
                      f"OpenCL kernels: {problem}" + (f"\n{hint}" if hint else ""))


def select_device(device=None) -> cl.Device:
    """Resolve a device spec with the documented selection order; a device that cannot
    compile kernels (:func:`build_problem`) is a DeviceError where a spec names it, and
    skipped by the default choice."""
    cl_devices = _all_cl_devices()
    if isinstance(device, cl.Device):
        return _compiling(device)
    if not cl_devices:
        hint = nvidia_icd_hint()
        raise DeviceError("no OpenCL device found. Install a CPU device: "
                          "pip install pocl-binary-distribution (what the pocl extra "
                          "installs), or your distribution's PoCL (Debian/Ubuntu: apt-get "
                          "install pocl-opencl-icd)" + (f"\n{hint}" if hint else ""))
    if device is not None:
        return _compiling(_match(device, cl_devices))
    env = os.environ.get("OCLLA_DEVICE")
    if env:
        return _compiling(_match(env, cl_devices))
    if os.environ.get("PYOPENCL_CTX") is not None:
        return _compiling(_pyopencl_ctx_device())
    return _default_device(cl_devices)


def _pyopencl_ctx_device() -> cl.Device:
    """The device pyopencl's ``PYOPENCL_CTX`` names (``platform:device`` indices or names)."""
    spec = os.environ["PYOPENCL_CTX"]
    try:
        return cl.create_some_context(interactive=False).devices[0]
    except (cl.Error, RuntimeError, ValueError, IndexError) as exc:
        found = ", ".join(f"{p.name.strip()}: {', '.join(d.name.strip() for d in p.get_devices())}"
                          for p in cl.get_platforms())
        raise DeviceError(f"PYOPENCL_CTX={spec!r} selects no device ({exc}); platforms and "
                          f"devices: {found}. Unset it or use OCLLA_DEVICE") from None


def get_queue(device=None) -> cl.CommandQueue:
    """The process-wide profiling queue of a device, made on first use and cached.

    Selection order: the ``device`` argument, the ``OCLLA_DEVICE``
    environment variable, pyopencl's ``PYOPENCL_CTX``, the first GPU that
    compiles kernels, the first CPU that does (PoCL, the embedded default).
    Every public function takes this queue as ``queue=``.

    Parameters
    ----------
    device : int, str, pyopencl.Device or pyopencl.CommandQueue, optional
        An index into :func:`devices`, a case-insensitive substring of a
        device's or its platform's name (``"nvidia"``, ``"pthread"``), a
        device, or a queue (returned as it is).

    Returns
    -------
    pyopencl.CommandQueue
        An in-order queue with profiling enabled, on a context of that device
        alone; the same object for every call with the same device.

    Raises
    ------
    oclla.DeviceError
        No OpenCL device at all (the message says how to install PoCL), an
        index out of range, a name that matches no device, a bad
        ``PYOPENCL_CTX``, a selected device that cannot compile kernels (its
        compiler's message and the fix where one is known), no device that can
        compile kernels, or a process
        forked from one that had used OpenCL (start workers with
        multiprocessing's "spawn" method instead).
    TypeError
        ``device`` of another type.
    """
    check_not_forked()
    if isinstance(device, cl.CommandQueue):
        return device
    if device is None:
        # the default, once per selecting environment: every public call asks for it,
        # and selecting (the device list and its names) costs tens of µs on NVIDIA's
        key = (os.environ.get("OCLLA_DEVICE"), os.environ.get("PYOPENCL_CTX"))
        queue = _default_queues.get(key)
        if queue is None:
            queue = _default_queues[key] = get_queue(select_device())
        return queue
    dev = select_device(device)
    with _lock:
        queue = _queues.get(dev)
        if queue is None:
            queue = cl.CommandQueue(
                _context(dev), properties=cl.command_queue_properties.PROFILING_ENABLE)
            _queues[dev] = queue
        return queue


def device_info(queue_or_device) -> DeviceInfo:
    """The capabilities of the device behind a queue (memoized per device).

    Parameters
    ----------
    queue_or_device : pyopencl.CommandQueue or pyopencl.Device

    Returns
    -------
    DeviceInfo
        With the device-limit profile in force imposed.

    Raises
    ------
    pyopencl.Error
        The driver cannot be queried for the device.
    """
    dev = queue_or_device.device if isinstance(queue_or_device, cl.CommandQueue) \
        else queue_or_device
    with _lock:
        info = _info_by_device.get(dev)
        if info is None:
            cl_devices = _all_cl_devices()
            index = cl_devices.index(dev) if dev in cl_devices else -1
            info = _probe(index, dev)
            _info_by_device[dev] = info
        return info


def forget_info() -> None:
    """Forget memoized device information (after the device-limit profile changed)."""
    with _lock:
        _info_by_device.clear()
        _widths.clear()


_WIDTH_PROBE = """
#if PRECISION == 64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define SCALAR double
#else
#define SCALAR float
#endif
#define VEC_(t, w) t##w
#define VEC(t, w) VEC_(t, w)
typedef VEC(SCALAR, VW) vec;
vec twice(vec x) { return x + x; }
__kernel void probe(__global vec *x) { size_t i = get_global_id(0); x[i] = twice(x[i]); }
"""
_widths: dict = {}          # (cl.Device, itemsize, width) -> whether such vectors build


def _builds_clean(queue_or_device, itemsize: int, width: int) -> bool:
    """Whether a function of ``width``-wide vectors builds without a word from the compiler
    (in the queue's context, or the device's own: :func:`_context`)."""
    if isinstance(queue_or_device, cl.CommandQueue):
        ctx, dev = queue_or_device.context, queue_or_device.device
    else:
        ctx, dev = _context(queue_or_device), queue_or_device
    options = [f"-DPRECISION={8 * itemsize}", f"-DVW={width}", "-cl-std=CL1.2"]
    # A source never seen before: a compiler's or pyopencl's binary cache would
    # hand back the program without its log.
    source = f"// {os.getpid()} {time.time_ns()}\n{_WIDTH_PROBE}"
    with _captured_stderr() as chatter:
        try:
            prg = cl.Program(ctx, source)
            with quiet_compiler():
                prg.build(options=options)
            log = prg.get_build_info(dev, cl.program_build_info.LOG) or ""
        except cl.Error as exc:
            log = f"error: {exc}"
    log = (log + chatter.text).strip()
    if log:
        _log.debug("vector width %d probe on %s: %s", width, dev.name, log)
    return "warning" not in log and "error" not in log


class _Text:
    text = ""


@contextlib.contextmanager
def _captured_stderr():
    """Collect what is written to file descriptor 2 meanwhile (some OpenCL compilers
    print their diagnostics there, besides the build log)."""
    found = _Text()
    try:
        saved = os.dup(2)
    except OSError:
        yield found
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield found
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            found.text = sink.read().decode(errors="replace")


def vector_width(queue_or_device, itemsize: int) -> int:
    """The widest vector of ``itemsize``-byte reals the device really compiles natively.

    The reported native width (capped by a device-limit profile) is not proof:
    a CPU runtime may report the host's widest vectors while compiling for a
    generic target that lacks them (the PoCL 3.0 wheel on an AVX-512 CPU reports
    16 floats and compiles for plain x86-64: code that passes float16 between
    functions then warns that it changes the ABI and crashes).  So the widths
    from the reported one down are tried on a small program, and the first that
    builds with an empty compiler log is used (memoized per device).
    """
    dev = queue_or_device.device if isinstance(queue_or_device, cl.CommandQueue) \
        else queue_or_device
    info = device_info(dev)
    reported = info.native_width_double if itemsize == 8 else info.native_width_float
    width = 1
    while width * 2 <= min(16, reported):
        width *= 2
    while width > 1 and not vectors_build(queue_or_device, itemsize, width):
        width //= 2
    return width


def vectors_build(queue_or_device, itemsize: int, width: int) -> bool:
    """Whether code passing ``width``-wide vectors of ``itemsize``-byte reals between
    functions builds on the device with an empty compiler log (:func:`vector_width`).

    Tried once per device and driver: remembered in memory and in the user's
    cache (oclla._checked).
    """
    if width == 1:
        return True
    dev = queue_or_device.device if isinstance(queue_or_device, cl.CommandQueue) \
        else queue_or_device
    key = (dev, itemsize, width)
    with _lock:
        if key not in _widths:
            from . import _checked
            info = device_info(dev)
            k = _checked.key(info, f"float{8 * itemsize}", f"vector width {width}")
            verdict = _checked.get(k)
            if verdict is None:
                verdict = (_builds_clean(queue_or_device, itemsize, width), "")
                _checked.put(k, *verdict)
            _widths[key] = verdict[0]
        return _widths[key]


@contextlib.contextmanager
def quiet_compiler():
    """Keep pyopencl's 'non-empty compiler output' warning off the user's terminal
    (callers send the build log to the ``oclla`` logger at debug level instead)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        yield


def resolve_queue(queue) -> cl.CommandQueue:
    """``queue=None`` means the default queue; a queue must have profiling on."""
    if queue is None:
        return get_queue()
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, not {type(queue).__name__}")
    note_opencl_use()
    if not queue.properties & cl.command_queue_properties.PROFILING_ENABLE:
        raise ValueError("queue must be created with "
                         "properties=pyopencl.command_queue_properties.PROFILING_ENABLE "
                         "(oclla.get_queue() returns such a queue)")
    return queue


_NVIDIA_LIB_GLOBS = (
    "/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1",
    "/usr/lib64/libnvidia-opencl.so.1",
    "/usr/local/nvidia/lib64/libnvidia-opencl.so.1",
    "/usr/local/nvidia/lib/libnvidia-opencl.so.1",
    "/usr/lib/wsl/lib/libnvidia-opencl.so.1",
)


def nvidia_icd_hint() -> str | None:
    """If NVIDIA's OpenCL library exists but no NVIDIA platform is visible, say how to fix it."""
    try:
        platforms = [p.name for p in cl.get_platforms()]
    except cl.Error:
        platforms = []
    if any("nvidia" in name.lower() for name in platforms):
        return None
    present = bool(ctypes.util.find_library("nvidia-opencl")) or any(
        glob.glob(pattern) for pattern in _NVIDIA_LIB_GLOBS)
    if not present:
        return None
    return ("NVIDIA's OpenCL driver (libnvidia-opencl.so.1) is installed but not registered "
            "with the ICD loader. Fix for this shell (the devices registered now stay):\n"
            "  " + nvidia_icd_command())


def _icd_folders() -> list:
    """Folders whose ``*.icd`` files the ICD loader reads now and would stop reading under
    another ``OCL_ICD_VENDORS``: that variable's folder, else the system's.  (pyopencl's
    wheel finds its own PoCL whatever the variable says.)"""
    env = os.environ.get("OCL_ICD_VENDORS")
    folder = env if env and os.path.isdir(env) else "/etc/OpenCL/vendors"
    return [folder] if glob.glob(os.path.join(folder, "*.icd")) else []


def nvidia_icd_command() -> str:
    """One shell line that registers NVIDIA's library beside the ICDs registered now
    (``OCL_ICD_VENDORS`` replaces the loader's search path, so they are written along,
    each naming its library by an absolute path where it lies beside its ``.icd``)."""
    parts = ["mkdir -p /tmp/icd"]
    for folder in _icd_folders():
        for icd in sorted(glob.glob(os.path.join(folder, "*.icd"))):
            try:
                with open(icd, encoding="utf-8") as fh:
                    library = fh.read().strip()
            except OSError:
                continue
            beside = os.path.join(folder, library)
            if library and not os.path.isabs(library) and os.path.exists(beside):
                library = beside
            if library:
                parts.append(f"echo {library} >/tmp/icd/{os.path.basename(icd)}")
    parts += ["echo libnvidia-opencl.so.1 >/tmp/icd/nvidia.icd", "export OCL_ICD_VENDORS=/tmp/icd"]
    return " && ".join(parts)
