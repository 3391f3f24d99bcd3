"""Kernel parameters declared once (oclla._knobs): derived sets unchanged, every knob read,
host formulas in step with the built kernels.

The derived kernel parameters and their validation, as data:

For every family, both dtypes and a set of device descriptions (a recorded
PoCL CPU, that device under every device-limit profile of
:data:`oclla._profiles.PROFILES`, a large and a tiny GPU), :func:`snapshot`
lists the rungs of :func:`oclla._params.ladder` and, for single-key
perturbations of each rung (and of the tiled and direct ``gemm`` shapes),
whether :func:`oclla._params.check` accepts them; and the tuner's search spaces
(:data:`oclla.tune.SPACE`) per device kind, native width and ``quick``.  The device is simulated:
its limits come from :data:`DEVICES` and its vector-compile answers from
:data:`VECTORS`, so the snapshot is the same on any machine.

``PYTHONPATH=. python tests/test_knobs.py > tests/data/knobs_snapshot.json`` writes it
(from the parameter code as it was when the snapshot was taken: it must not change).
"""

import contextlib
import itertools
import json
import os
import sys

import numpy as np
import pytest

from oclla import _params, _profiles, tune
from oclla._device import DeviceInfo

BASE = dict(index=0, name="cpu-haswell-Intel(R) Xeon(R) CPU", vendor="GenuineIntel",
            platform="Portable Computing Language", driver_version="3.1",
            opencl_c_version="OpenCL C 1.2 PoCL", kind="CPU", fp64=True, compute_units=2,
            max_work_group_size=4096, max_work_item_sizes=(4096, 4096, 4096),
            local_mem_size=4 * 1024 * 1024, global_mem_size=8 << 30, max_alloc_size=2 << 30,
            max_clock_mhz=2000, native_width_float=8, native_width_double=4, profile=None)
GPU = dict(BASE, name="large-gpu", kind="GPU", max_work_group_size=1024,
           max_work_item_sizes=(1024, 1024, 64), local_mem_size=48 * 1024,
           native_width_float=1, native_width_double=1, compute_units=132)
TINY = dict(BASE, name="tiny-gpu", kind="GPU", max_work_group_size=16,
            max_work_item_sizes=(16, 16, 16), local_mem_size=4 * 1024,
            native_width_float=1, native_width_double=1)
DEVICES = {"cpu": BASE, "large-gpu": GPU, "tiny-gpu": TINY,
           **{f"cpu+{name}": _profiles.apply(p, BASE) for name, p in _profiles.PROFILES.items()}}
#: (widest vector that compiles, widths whose vector code builds) per itemsize
VECTORS = {4: (8, (1, 2, 4, 8)), 8: (4, (1, 2, 4))}
BAD = (-1, 0, 1, 2, 3, 5, 8, 12, 16, 32, 33, 64, 65, 128, 256, 512, 1024, 2048, 4096,
       1 << 16, 1 << 20, "leaf", "tiled", "direct", None)


@contextlib.contextmanager
def simulated(fields):
    """``_params`` sees a device with ``fields`` and :data:`VECTORS`."""
    info = DeviceInfo(**fields)
    saved = {name: getattr(_params, name) for name in ("device_info", "vector_width",
                                                        "vectors_build")}
    _params.device_info = lambda queue: info
    _params.vector_width = lambda queue, itemsize: VECTORS[itemsize][0]
    _params.vectors_build = lambda queue, itemsize, width: width in VECTORS[itemsize][1]
    try:
        yield info
    finally:
        for name, value in saved.items():
            setattr(_params, name, value)


def _verdicts(family, base, info, itemsize):
    """{key: "1"/"0" per value of BAD and one for the key left out}."""
    out = {}
    for key in sorted(base):
        marks = [_params.check(family, dict(base, **{key: v}), info, itemsize) is None
                 for v in BAD]
        marks.append(_params.check(family, {k: v for k, v in base.items() if k != key},
                                   info, itemsize) is None)
        out[key] = "".join("1" if m else "0" for m in marks)
    return out


def snapshot() -> dict:
    out = {}
    gemm_shapes = [dict(KERNEL="tiled", TILE_M=64, TILE_N=64, TILE_K=16, WPT_M=4, WPT_N=4,
                        VEC=4),
                   dict(KERNEL="direct", RM=4, VW=4, NV=2, LX=4)]
    for dev, fields in DEVICES.items():
        for dtype in ("float32", "float64"):
            itemsize = np.dtype(dtype).itemsize
            with simulated(fields) as info:
                for family in _params.FAMILIES:
                    rungs = _params.ladder(None, family, dtype)
                    bases = rungs + (gemm_shapes if family == "gemm" else [])
                    if family == "gemm_thin":
                        bases = bases + [dict(gemm_shapes[0], MAX_K=16)]
                    out[f"{dev}/{dtype}/{family}"] = dict(
                        rungs=rungs,
                        checks=[_verdicts(family, b, info, itemsize) for b in bases])
    for family, space in sorted(tune.SPACE.items()):
        for kind, native, quick in itertools.product(("GPU", "CPU"), (1, 4, 8, 16),
                                                     (False, True)):
            args = (kind, quick) if family in ("lu", "chol") else (kind, native, quick)
            out[f"tune/{family}/{kind}/{native}/{int(quick)}"] = space(*args)
    return out


SNAPSHOT = os.path.join(os.path.dirname(__file__), "data", "knobs_snapshot.json")


def test_derived_sets_and_checks_unchanged():
    """Every derived rung and every accept/reject verdict equals the recorded ones."""
    with open(SNAPSHOT, encoding="utf-8") as f:
        want = json.load(f)
    got = json.loads(json.dumps(snapshot()))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


if __name__ == "__main__":
    json.dump(snapshot(), sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
