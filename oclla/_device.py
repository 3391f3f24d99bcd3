"""Device selection, capability probing and profiling-enabled queues.

Selection order for :func:`get_queue` (DESIGN.md): the ``device`` argument
(index into :func:`devices`, case-insensitive name substring, or a
``pyopencl.Device``), the ``OCLLA_DEVICE`` environment variable, pyopencl's
``PYOPENCL_CTX``, the first GPU, the first CPU (PoCL, the embedded default).
One context and one profiling queue are kept per device for the process.
"""

from __future__ import annotations

import ctypes.util
import glob
import os
import threading
from dataclasses import dataclass, asdict

import pyopencl as cl


class DeviceError(RuntimeError):
    """Device trouble: none found, no fp64, allocation too large, build failure."""


@dataclass(frozen=True)
class DeviceInfo:
    """What oclla needs to know about one OpenCL device."""

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

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        gib = 1 << 30
        return (f"[{self.index}] {self.name} ({self.kind}, {self.platform}; "
                f"driver {self.driver_version}) fp64={'yes' if self.fp64 else 'no'} "
                f"CUs={self.compute_units} wg<={self.max_work_group_size} "
                f"local={self.local_mem_size // 1024} KiB "
                f"global={self.global_mem_size / gib:.1f} GiB "
                f"max-alloc={self.max_alloc_size / gib:.1f} GiB")


_KIND_NAMES = {
    cl.device_type.GPU: "GPU",
    cl.device_type.CPU: "CPU",
    cl.device_type.ACCELERATOR: "ACCELERATOR",
}

_lock = threading.RLock()
_queues: dict = {}        # cl.Device -> cl.CommandQueue
_info_by_device: dict = {}  # cl.Device -> DeviceInfo


def _kind(dev: cl.Device) -> str:
    for bit, name in _KIND_NAMES.items():
        if dev.type & bit:
            return name
    return "OTHER"


def _all_cl_devices() -> list:
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
    extensions = dev.extensions.split()
    return DeviceInfo(
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
    )


def devices() -> list[DeviceInfo]:
    """List every OpenCL device visible to this process with its capabilities."""
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
            ctx = cl.Context([dev])
            cl.Program(ctx, _PROBE_SOURCE).build()
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


def select_device(device=None) -> cl.Device:
    """Resolve a device spec with the documented selection order."""
    cl_devices = _all_cl_devices()
    if isinstance(device, cl.Device):
        return device
    if not cl_devices:
        hint = nvidia_icd_hint()
        raise DeviceError("no OpenCL device found. Install PoCL with "
                          "`pip install oclla[pocl]`" + (f"\n{hint}" if hint else ""))
    if device is not None:
        return _match(device, cl_devices)
    env = os.environ.get("OCLLA_DEVICE")
    if env:
        return _match(env, cl_devices)
    if os.environ.get("PYOPENCL_CTX") is not None:
        ctx = cl.create_some_context(interactive=False)
        return ctx.devices[0]
    return _default_device(cl_devices)


def get_queue(device=None) -> cl.CommandQueue:
    """Return the process-wide profiling queue for the selected device."""
    if isinstance(device, cl.CommandQueue):
        return device
    dev = select_device(device)
    with _lock:
        queue = _queues.get(dev)
        if queue is None:
            ctx = cl.Context([dev])
            queue = cl.CommandQueue(
                ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
            _queues[dev] = queue
        return queue


def device_info(queue_or_device) -> DeviceInfo:
    """Capabilities of the device behind a queue (memoized)."""
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


def resolve_queue(queue) -> cl.CommandQueue:
    """``queue=None`` means the default queue; a queue must have profiling on."""
    if queue is None:
        return get_queue()
    if not isinstance(queue, cl.CommandQueue):
        raise TypeError(f"queue must be a pyopencl.CommandQueue, not {type(queue).__name__}")
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
            "with the ICD loader. Fix for this shell:\n"
            "  mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 >/tmp/icd/nvidia.icd "
            "&& export OCL_ICD_VENDORS=/tmp/icd")
