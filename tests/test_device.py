"""Device selection, capability probing, the kernel cache and kernel loading."""

import os
import re
import signal
import threading
import time
import warnings

import numpy as np
import pyopencl as cl
import pytest

from oclla import kernels_cl
import oclla
from oclla import DeviceError, _device, _params, _programs


def test_devices_lists_capabilities():
    found = oclla.devices()
    assert found
    for info in found:
        assert info.kind in ("GPU", "CPU", "ACCELERATOR", "OTHER")
        assert info.max_work_group_size >= 1 and info.local_mem_size > 0
        assert info.max_alloc_size <= info.global_mem_size
        assert info.name in info.describe()


def test_get_queue_is_cached_and_profiling(queue):
    assert oclla.get_queue() is queue
    assert queue.properties & cl.command_queue_properties.PROFILING_ENABLE
    assert _device.build_problem(queue.device) is None


def test_one_context_per_device(monkeypatch, queue):
    """The device's queue, its compile probe and its vector-width probes share one
    context (a context costs seconds on some drivers): none of them makes another."""
    made = []
    context = cl.Context
    monkeypatch.setattr(cl, "Context", lambda *a, **k: made.append(a) or context(*a, **k))
    dev = queue.device
    monkeypatch.setitem(_device._build_status, dev, "not yet probed")
    del _device._build_status[dev]
    assert _device.build_problem(dev) is None
    for probe in (dev, queue):
        assert _device._builds_clean(probe, 4, 2) in (True, False)
    assert oclla.get_queue(dev) is queue
    assert queue.context == _device._context(dev)
    assert made == []


def test_selection_by_index_name_and_env(monkeypatch, queue):
    usable = [i for i, d in enumerate(_device._all_cl_devices())
              if _device.build_problem(d) is None]
    assert oclla.get_queue(usable[0]).device == _device._all_cl_devices()[usable[0]]
    name = queue.device.name[:8]
    assert name.lower() in oclla.get_queue(name).device.name.lower()
    monkeypatch.setenv("OCLLA_DEVICE", str(usable[0]))
    assert _device.select_device() == _device._all_cl_devices()[usable[0]]


def test_the_default_queue_follows_the_selecting_environment(monkeypatch, queue):
    """get_queue() keeps its default per OCLLA_DEVICE / PYOPENCL_CTX: another value
    selects again (a bad one raises, nothing stale comes back), the same value gives the
    same queue."""
    usable = [i for i, d in enumerate(_device._all_cl_devices())
              if _device.build_problem(d) is None]
    monkeypatch.setenv("OCLLA_DEVICE", "no-such-device-anywhere")
    with pytest.raises(DeviceError, match="no OpenCL device matches"):
        oclla.get_queue()
    monkeypatch.setenv("OCLLA_DEVICE", str(usable[-1]))
    chosen = oclla.get_queue()
    assert chosen is oclla.get_queue(usable[-1]) and chosen is oclla.get_queue()


def test_bad_selection(monkeypatch):
    with pytest.raises(DeviceError, match="out of range"):
        oclla.get_queue(999)
    with pytest.raises(DeviceError, match="no OpenCL device matches"):
        oclla.get_queue("no-such-device-anywhere")
    with pytest.raises(TypeError, match="device must be"):
        oclla.get_queue(3.5)
    monkeypatch.setenv("OCLLA_DEVICE", "no-such-device-anywhere")
    with pytest.raises(DeviceError, match="no OpenCL device matches"):
        _device.select_device()


def test_default_skips_devices_that_cannot_compile(monkeypatch):
    devices = _device._all_cl_devices()
    fake = [devices[0], devices[0]]          # two entries: the first cannot compile
    calls = []

    def problem(d):
        calls.append(d)
        return "error: unknown target CPU 'generic'" if len(calls) == 1 else None

    monkeypatch.setattr(_device, "build_problem", problem)
    assert _device._default_device(fake) is fake[1] and len(calls) == 2
    monkeypatch.setattr(_device, "build_problem",
                        lambda d: "error: unknown target CPU 'generic'")
    with pytest.raises(DeviceError, match="apt-get install pocl-opencl-icd"):
        _device._default_device(devices)


def test_a_selected_device_that_cannot_compile_is_refused(monkeypatch):
    """A device named by index, name, pyopencl.Device, OCLLA_DEVICE or PYOPENCL_CTX
    that cannot compile kernels is a DeviceError with its compiler's message and the
    fix, raised at selection, before any kernel is built."""
    devices = _device._all_cl_devices()
    monkeypatch.setattr(_device, "build_problem",
                        lambda d: "error: unknown target CPU 'generic'")
    refused = r"cannot compile OpenCL kernels: error: unknown target CPU 'generic'\n.*apt-get"
    for spec in (0, devices[0].name.strip()[:6], devices[0]):
        with pytest.raises(DeviceError, match=refused):
            _device.select_device(spec)
    monkeypatch.setenv("OCLLA_DEVICE", "0")
    with pytest.raises(DeviceError, match=refused):
        _device.select_device()
    monkeypatch.delenv("OCLLA_DEVICE")
    monkeypatch.setenv("PYOPENCL_CTX", "0:0")
    with pytest.raises(DeviceError, match=refused):
        _device.select_device()


def test_nvidia_hint(monkeypatch):
    monkeypatch.setattr(_device.glob, "glob", lambda pattern: [pattern])
    hint = _device.nvidia_icd_hint()
    platforms = [p.name.lower() for p in cl.get_platforms()]
    if any("nvidia" in p for p in platforms):
        assert hint is None
    else:
        assert "OCL_ICD_VENDORS=/tmp/icd" in hint
    monkeypatch.setattr(_device.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(_device.ctypes.util, "find_library", lambda name: None)
    assert _device.nvidia_icd_hint() is None


def test_kernel_cache_per_context_and_thread(queue):
    k1 = _programs.get_kernel(queue, "laswp.cl", "laswp", np.float32, FORWARD=1)
    k2 = _programs.get_kernel(queue, "laswp.cl", "laswp", np.float32, FORWARD=1)
    assert k1 is k2
    assert _programs.get_kernel(queue, "laswp.cl", "laswp", np.float32, FORWARD=0) is not k1
    other = []
    thread = threading.Thread(target=lambda: other.append(
        _programs.get_kernel(queue, "laswp.cl", "laswp", np.float32, FORWARD=1)))
    thread.start()
    thread.join()
    assert other[0] is not k1 and other[0].function_name == "laswp"
    # the same options spelled another way reach the same kernel
    assert _programs.get_kernel(queue, "laswp.cl", "laswp", np.dtype("float32"), FORWARD=1) is k1


def test_params_are_a_fresh_dict_that_follows_overrides(queue):
    chosen = _params.params(queue, "lu", np.float32)
    spoiled = _params.params(queue, "lu", np.float32)
    spoiled["NB"] = -1
    assert _params.params(queue, "lu", np.float32) == chosen
    _params.override("lu", dict(NB=7))
    assert _params.params(queue, "lu", np.float32)["NB"] == 7
    assert _params.params(queue, "lu", np.dtype("float32"))["NB"] == 7
    _params.override("lu", None)
    assert _params.params(queue, "lu", np.float32) == chosen


def test_build_failure_is_a_device_error_with_the_log(queue):
    with pytest.raises(DeviceError, match=r"gemm\.cl.*TILE_M=oops"):
        _programs.get_kernel(queue, "gemm.cl", "gemm", np.float32, TILE_M="oops")


def test_refused_launch_is_a_device_error(queue):
    """A launch the device refuses (here a work-group past its limit; on NVIDIA also one
    whose registers do not fit, OUT_OF_RESOURCES) raises DeviceError naming the kernel."""
    kernel = _programs.get_kernel(queue, "util.cl", "set_identity", np.float32)
    buf = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, 4)
    _programs.set_args(kernel, buf, np.int64(0), 1, 1)
    too_many = 2 * queue.device.max_work_group_size        # the device's own, not a profile's
    with pytest.raises(DeviceError, match=r"launching set_identity over \(\d+,\) work-items"):
        _programs.launch(queue, kernel, (too_many,), (too_many,))


def test_build_options_are_canonical():
    assert _programs.build_options(np.float64, {"B": 2, "A": 1}) == (
        "-cl-std=CL1.2", "-DA=1", "-DB=2", "-DPRECISION=64")


def test_round_up():
    assert [_programs.round_up(x, 16) for x in (0, 1, 16, 17)] == [16, 16, 16, 32]


def test_sources_ship_with_the_header_inlined():
    names = kernels_cl.list_sources()
    assert {"lu_inplace.cl", "lu_leaf.cl", "lu_rows.cl", "lu_faithful.cl", "gemm.cl", "trsm.cl", "laswp.cl",
            "util.cl"} <= set(names)
    for name in names:
        text = kernels_cl.read_source(name)
        assert '#include "common.h"' not in text
        assert "typedef float real;" in text


def test_sources_use_no_variadic_macro():
    """Every source, its headers inlined, is free of variadic macros, which NVIDIA's
    OpenCL compiler refuses ("variadic macros not supported in OpenCL") where PoCL
    takes them."""
    variadic = re.compile(r"#\s*define\s+\w+\([^)]*\.\.\.\s*\)|__VA_ARGS__")
    for name in kernels_cl.list_sources():
        assert not variadic.search(kernels_cl.read_source(name)), name


def test_user_queues_must_profile(queue):
    plain = cl.CommandQueue(queue.context)
    with pytest.raises(ValueError, match="PROFILING_ENABLE"):
        oclla.lu_factor(np.eye(3), queue=plain)
    with pytest.raises(TypeError, match="CommandQueue"):
        oclla.lu_factor(np.eye(3), queue="gpu")
    profiling = cl.CommandQueue(queue.context,
                                properties=cl.command_queue_properties.PROFILING_ENABLE)
    lu, piv = oclla.lu_factor(np.eye(3), queue=profiling)
    np.testing.assert_array_equal(lu, np.eye(3))


def test_launch_queue_is_unprofiled_and_ordered_both_ways(queue):
    import pyopencl.array as cl_array
    x = cl_array.empty(queue, 1 << 20, np.float32)
    x.fill(1.0)                                   # enqueued, not waited for
    with _programs.launch_queue(queue) as loop_queue:
        assert loop_queue is not queue
        assert not loop_queue.properties & cl.command_queue_properties.PROFILING_ENABLE
        y = x.with_queue(loop_queue) * 2          # must see the fill
        y *= 5
    x.with_queue(queue).fill(0.0)                 # must wait for the loop's reads of x
    assert (y.with_queue(queue).get() == 10).all()


def test_launch_queue_is_the_callers_queue_while_recording(queue):
    with oclla.record():
        with _programs.launch_queue(queue) as loop_queue:
            assert loop_queue is queue


@pytest.mark.parametrize("value", ["nonsense", "9", "0:9"])
def test_pyopencl_ctx_that_selects_nothing(monkeypatch, value):
    monkeypatch.delenv("OCLLA_DEVICE", raising=False)
    monkeypatch.setenv("PYOPENCL_CTX", value)
    with pytest.raises(DeviceError, match=r"PYOPENCL_CTX='[^']*' selects no device"):
        _device.select_device()


def test_pyopencl_ctx_selects_a_device(monkeypatch):
    monkeypatch.delenv("OCLLA_DEVICE", raising=False)
    monkeypatch.setenv("PYOPENCL_CTX", "0:0")
    assert _device.select_device() == cl.get_platforms()[0].get_devices()[0]


def test_profiles_narrow_what_the_device_reports(queue):
    own = oclla.device_info(queue)
    previous = oclla.set_profile("minimal")
    try:
        info = oclla.device_info(queue)
        assert info.profile == "minimal" and info.kind == "GPU" and not info.fp64
        assert info.max_work_group_size == min(64, own.max_work_group_size)
        assert info.local_mem_size == min(16 * 1024, own.local_mem_size)
        assert max(info.max_work_item_sizes) <= 64
        assert "profile=minimal" in info.describe()
        with pytest.raises(DeviceError, match="fp64"):
            oclla.lu_factor(np.eye(3), queue=queue)
    finally:
        oclla.set_profile(previous)
    assert oclla.device_info(queue) == own


def test_profile_forms(monkeypatch):
    from oclla import _profiles
    custom = _profiles.parse("amd-gcn,local_mem_size=32768,fp64=0,max_work_item_sizes=8x8x8")
    assert custom.max_work_group_size == 256 and custom.local_mem_size == 32768
    assert custom.fp64 is False and custom.max_work_item_sizes == (8, 8, 8)
    assert _profiles.parse("") is None
    for bad in ("no-such-profile", "amd-gcn,colour=blue", "kind=TPU", "fp64=maybe",
                "max_work_group_size=many", "local_mem_size=1,amd-gcn"):
        with pytest.raises(ValueError):
            _profiles.parse(bad)
    with pytest.raises(TypeError):
        oclla.set_profile(42)
    monkeypatch.setattr(_profiles, "_current", [])
    monkeypatch.setenv("OCLLA_PROFILE", "bogus")
    with pytest.raises(DeviceError, match="OCLLA_PROFILE"):
        _profiles.current()
    monkeypatch.setattr(_profiles, "_current", [])
    monkeypatch.setenv("OCLLA_PROFILE", "apple-arm")
    assert _profiles.current().name == "apple-arm"
    monkeypatch.setattr(_profiles, "_current", [None])


def test_custom_profile_object_changes_parameters(queue):
    own = _params.params(queue, "wg1d", np.float32)["WG"]
    previous = oclla.set_profile(oclla.Profile(max_work_group_size=2))
    try:
        assert _params.params(queue, "wg1d", np.float32)["WG"] <= 2 < own
    finally:
        oclla.set_profile(previous)


# ---- the driver's errors at run time -------------------------------------------------------

def _driver_error(kind, routine: str, code: int):
    """An error as pyopencl raises it for a failed OpenCL call."""
    return kind(cl._cl._ErrorRecord(routine, code, ""))


def _public_functions():
    """Every public function and method that runs commands on a device."""
    from oclla import hybrid, multi_device, multi_device_lu, rfp, sparse, tile_tasks
    hosts_only = {"device_info", "devices", "get_queue", "load_recording", "record",
                  "set_profile", "layout", "packed_length", "picture"}
    found = {f"oclla.{n}": getattr(oclla, n) for n in oclla.__all__}
    found.update({f"oclla.rfp.{n}": getattr(rfp, n) for n in rfp.__all__})
    found.update({f"oclla.tile_tasks.{n}": getattr(tile_tasks, n) for n in tile_tasks.__all__})
    found.update({"oclla.sparse.cholesky": sparse.cholesky, "oclla.hybrid.cholesky":
                  hybrid.cholesky, "oclla.multi_device.cholesky": multi_device.cholesky,
                  "oclla.multi_device_lu.lu_factor": multi_device_lu.lu_factor})
    for cls, methods in ((sparse.Factor, ("solve", "logdet", "refactor")),
                         (oclla.TiledMatrix, ("from_numpy", "to_numpy", "copy")),
                         (multi_device.MultiTiles, ("from_numpy", "to_numpy", "factor"))):
        found.update({f"{cls.__name__}.{m}": getattr(cls, m) for m in methods})
    return {name: f for name, f in found.items()
            if callable(f) and not isinstance(f, type) and name.split(".")[-1] not in hosts_only}


def test_every_public_function_raises_the_drivers_errors_as_device_errors():
    functions = _public_functions()
    assert len(functions) >= 35
    wrapper = _device.driver_errors(lambda: None).__code__
    assert [name for name, f in functions.items()
            if getattr(f, "__func__", f).__code__ is not wrapper] == []


@pytest.mark.parametrize("kind, code, says", [
    (cl.MemoryError, cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, "could not provide the memory"),
    (cl.RuntimeError, cl.status_code.OUT_OF_RESOURCES, "could not provide the memory"),
    (cl.LogicError, cl.status_code.INVALID_COMMAND_QUEUE, "the OpenCL driver failed")])
def test_a_drivers_error_becomes_a_device_error(queue, monkeypatch, kind, code, says):
    """A copy the driver refuses (as NVIDIA's refuses the first copy into a buffer when
    other buffers hold the device's memory) reaches the caller as DeviceError, the
    driver's error its cause, and the caller's array is untouched."""
    import pyopencl.array as cl_array
    error = _driver_error(kind, "clEnqueueWriteBuffer", code)

    def refused(*args, **kwargs):
        raise error
    monkeypatch.setattr(cl_array, "to_device", refused)
    a = 4.0 * np.eye(6) + 1.0
    before = a.copy()
    b = np.ones(6)
    for call in (lambda: oclla.cholesky(a, queue=queue), lambda: oclla.lu_factor(a, queue=queue),
                 lambda: oclla.inv_spd(a, queue=queue),
                 lambda: oclla.cho_solve((a, False), b, queue=queue),
                 lambda: oclla.wls_solve(a[:3], b, b, queue=queue)):
        with pytest.raises(DeviceError, match=f"{says}.*: clEnqueueWriteBuffer failed") as info:
            call()
        assert info.value.__cause__ is error
    np.testing.assert_array_equal(a, before)


# ---- a process forked from one that used OpenCL -----------------------------------------------

def test_a_forked_process_is_refused_with_a_device_error(queue, monkeypatch):
    """The pid that used OpenCL is not this one (a fork's child): every entry point raises
    DeviceError naming the way out, before any OpenCL call."""
    monkeypatch.setattr(_device, "_opencl_pid", [1])
    for call in (oclla.get_queue, oclla.devices,
                 lambda: oclla.cholesky(4.0 * np.eye(3), queue=queue),
                 lambda: oclla.rfp.cho_logdet((np.ones(6), True), queue=queue)):
        with pytest.raises(DeviceError, match=r"forked from process 1, .*'spawn'"):
            call()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_real_fork_answers_instead_of_waiting(queue):
    """A child made by fork after the parent computed: its first call raises at once (on
    PoCL the child's first OpenCL call would wait forever)."""
    oclla.cholesky(4.0 * np.eye(3), queue=queue)
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)     # fork of a threaded process
        pid = os.fork()
    if pid == 0:                                                # the child
        try:
            oclla.cholesky(4.0 * np.eye(3))
            answer = b"computed"
        except DeviceError as exc:
            answer = b"DeviceError" if "forked from process" in str(exc) else b"other"
        except BaseException:
            answer = b"raised"
        os.write(write, answer)
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not answer within 60 s")
        time.sleep(0.05)
    with os.fdopen(read, "rb") as pipe:
        assert pipe.read() == b"DeviceError"
