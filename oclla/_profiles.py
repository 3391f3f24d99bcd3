"""Device-limit profiles: make the parameter choice see a smaller device than the real one.

A profile stands in for hardware that is not at hand.  While one is set
(:func:`set_profile`, or the ``OCLLA_PROFILE`` environment variable read at
the first device query), :func:`oclla.device_info` reports every device with
the profile's limits in place of its own where they are smaller — work-group
size, work-item sizes, local memory, native vector widths, maximum
allocation — its ``kind`` replaced where the profile names one, and fp64 only
if both the device and the profile have it.  Kernel parameters are derived
from that report (stored tuned parameters, measured on the real device, are
not used), so a profile changes which kernels are built and how they are
launched, not just what is printed: a GPU profile on a CPU runs the GPU code
paths with the GPU's limits.

Named profiles (limits from the vendors' documentation):

``amd-gcn``    AMD GCN/RDNA GPU: work-groups of 256 (wavefront 64), 64 KiB of
               LDS, scalar native vectors, fp64, 4 GiB allocations.
``intel-xe``   Intel Xe GPU: work-groups of 512, 64 KiB of shared local
               memory, scalar native vectors, fp64.
``intel-arc``  Intel Arc (Xe-HPG) GPU: work-groups of 1024, 64 KiB of shared
               local memory, no fp64.
``apple-arm``  Apple/ARM-class GPU: work-groups of 256, 32 KiB of local
               memory, no fp64, 1 GiB allocations.
``minimal``    the least a conformant OpenCL 1.2 GPU may report as this
               library uses it: work-groups of 64, 16 KiB of local memory,
               vector width 1, no fp64, 128 MiB allocations.

Sub-group sizes (Intel's 8–32, AMD's wavefront) are not modelled: the kernels
are OpenCL C 1.2 and use none.  A custom profile is a :class:`Profile`, or
the environment form ``OCLLA_PROFILE="max_work_group_size=64,local_mem_size=16384"``,
optionally after a named profile: ``"amd-gcn,local_mem_size=32768"``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass(frozen=True)
class Profile:
    """Limits imposed on every device; ``None`` keeps the device's own value.

    A profile makes the parameter choice see a smaller device than the real
    one (never a larger one: each limit is the smaller of the profile's and
    the device's), to run the code paths of hardware one does not have.
    :data:`PROFILES` holds the named ones; ``OCLLA_PROFILE`` or
    :func:`set_profile` imposes one.

    Attributes
    ----------
    name : str, default "custom"
    kind : {"GPU", "CPU"} or None
        The device kind the code paths are chosen for.
    max_work_group_size : int or None
        Work-items per work-group.
    max_work_item_sizes : tuple of int or None
        Work-items per work-group along each dimension.
    local_mem_size : int or None
        Bytes of local memory per work-group.
    native_width_float, native_width_double : int or None
        Vector widths the kernels may use.
    fp64 : bool or None
        Whether float64 is available.
    max_alloc_size : int or None
        Bytes of the largest single allocation.
    global_mem_size : int or None
        Bytes of global memory (what the out-of-core Cholesky plans with).
    opencl_c_version : str or None
        The OpenCL C version reported, e.g. "OpenCL C 1.2".
    """

    name: str = "custom"
    kind: str | None = None                  # "GPU" or "CPU": which code paths are chosen
    max_work_group_size: int | None = None
    max_work_item_sizes: tuple | None = None
    local_mem_size: int | None = None        # bytes
    native_width_float: int | None = None
    native_width_double: int | None = None
    fp64: bool | None = None
    max_alloc_size: int | None = None        # bytes
    global_mem_size: int | None = None       # bytes
    opencl_c_version: str | None = None

    def describe(self) -> str:
        limits = ", ".join(f"{f.name}={getattr(self, f.name)}"
                           for f in dataclasses.fields(self)
                           if f.name != "name" and getattr(self, f.name) is not None)
        return f"{self.name} ({limits})"


def _gpu(name: str, work_group: int, local: int, fp64: bool, alloc: int) -> Profile:
    """A GPU profile: work-groups (and work-item sizes) of ``work_group``, ``local`` bytes
    of local memory, scalar native vectors, OpenCL C 1.2."""
    return Profile(name, kind="GPU", max_work_group_size=work_group,
                   max_work_item_sizes=(work_group,) * 3, local_mem_size=local,
                   native_width_float=1, native_width_double=1, fp64=fp64,
                   max_alloc_size=alloc, opencl_c_version="OpenCL C 1.2")


PROFILES = {p.name: p for p in (
    _gpu("amd-gcn", 256, 64 * KIB, True, 4 * GIB),
    _gpu("intel-xe", 512, 64 * KIB, True, 4 * GIB),
    _gpu("intel-arc", 1024, 64 * KIB, False, 4 * GIB),
    _gpu("apple-arm", 256, 32 * KIB, False, 1 * GIB),
    _gpu("minimal", 64, 16 * KIB, False, 128 * MIB),
)}

_INT_FIELDS = ("max_work_group_size", "local_mem_size", "native_width_float",
               "native_width_double", "max_alloc_size", "global_mem_size")

_lock = threading.Lock()
_current: list = []          # [] until first read; then [Profile or None]


def parse(spec: str) -> Profile | None:
    """A profile from its environment form (see the module docstring); ``""`` is none."""
    parts = [p.strip() for p in spec.split(",") if p.strip()]
    if not parts:
        return None
    base, changes = Profile(), {}
    for i, part in enumerate(parts):
        if "=" not in part:
            if i or part not in PROFILES:
                raise ValueError(f"unknown device profile {part!r}; named profiles: "
                                 f"{', '.join(PROFILES)}")
            base = PROFILES[part]
            continue
        key, value = (s.strip() for s in part.split("=", 1))
        changes[key] = _field_value(key, value)
    return dataclasses.replace(base, **changes) if changes else base


def _field_value(key: str, value: str):
    if key in _INT_FIELDS:
        return int(value)
    if key == "max_work_item_sizes":
        return tuple(int(v) for v in value.split("x"))
    if key == "fp64":
        if value.lower() not in ("0", "1", "true", "false", "yes", "no"):
            raise ValueError(f"fp64 must be 0 or 1, not {value!r}")
        return value.lower() in ("1", "true", "yes")
    if key == "kind":
        if value.upper() not in ("GPU", "CPU"):
            raise ValueError(f"kind must be GPU or CPU, not {value!r}")
        return value.upper()
    if key in ("name", "opencl_c_version"):
        return value
    raise ValueError(f"unknown device-profile limit {key!r}; limits: kind, "
                     f"max_work_item_sizes (e.g. 64x64x64), fp64, "
                     f"{', '.join(_INT_FIELDS)}, opencl_c_version")


def current() -> Profile | None:
    """The profile in force (``OCLLA_PROFILE`` is read the first time)."""
    if not _current:
        with _lock:
            if not _current:
                from ._device import DeviceError
                try:
                    _current.append(parse(os.environ.get("OCLLA_PROFILE", "")))
                except ValueError as exc:
                    raise DeviceError(f"OCLLA_PROFILE: {exc}") from None
    return _current[0]


def set_profile(profile) -> Profile | None:
    """Impose a device-limit profile on every device from now on.

    Cached device information and kernel parameters are forgotten; kernels
    already built stay cached under their own build options.  Tuned entries
    are not used under a profile.

    Parameters
    ----------
    profile : str, Profile or None
        A name from :data:`PROFILES` (``"amd-gcn"``, ``"intel-xe"``,
        ``"intel-arc"``, ``"apple-arm"``, ``"minimal"``), the environment
        form (``"amd-gcn,local_mem_size=32768"``), a :class:`Profile`, or
        ``None`` for the devices' own limits.

    Returns
    -------
    Profile or None
        The profile in force before.

    Raises
    ------
    ValueError
        An unknown profile name or limit, or a malformed value.
    TypeError
        ``profile`` of another type.
    oclla.DeviceError
        ``OCLLA_PROFILE`` is malformed (read the first time a profile is
        needed).
    """
    if isinstance(profile, str):
        profile = parse(profile)
    elif profile is not None and not isinstance(profile, Profile):
        raise TypeError(f"profile must be a name, a Profile or None, not "
                        f"{type(profile).__name__}")
    previous = current()
    with _lock:
        _current[:] = [profile]
    from . import _device, _params
    _device.forget_info()
    _params.reload()
    return previous


def apply(profile: Profile | None, fields: dict) -> dict:
    """The fields of a :class:`oclla.DeviceInfo` with ``profile``'s limits imposed."""
    if profile is None:
        return fields
    out = dict(fields)
    for key in _INT_FIELDS:
        limit = getattr(profile, key)
        if limit is not None:
            out[key] = min(out[key], limit)
    if profile.max_work_item_sizes is not None:
        out["max_work_item_sizes"] = tuple(
            min(own, limit) for own, limit in zip(out["max_work_item_sizes"],
                                                  profile.max_work_item_sizes))
    out["max_work_item_sizes"] = tuple(min(s, out["max_work_group_size"])
                                       for s in out["max_work_item_sizes"])
    if profile.fp64 is not None:
        out["fp64"] = out["fp64"] and profile.fp64
    if profile.kind is not None:
        out["kind"] = profile.kind
    if profile.opencl_c_version is not None:
        out["opencl_c_version"] = profile.opencl_c_version
    out["profile"] = profile.name
    return out
