"""Kernel parameters declared once (oclla._knobs): what they derive is unchanged, every
knob is read where declared, and the host's formulas agree with the built kernels.

The snapshot (tests/data/knobs_snapshot.json): for every family, both dtypes and
a set of simulated devices (a PoCL CPU, that CPU under every device-limit profile
of :data:`oclla._profiles.PROFILES`, a large and a tiny GPU; limits from
:data:`DEVICES`, vector-compile answers from :data:`VECTORS`, so it is the same
on any machine), the rungs of :func:`oclla._params.ladder` and, for single-key
perturbations of each rung by the values of :data:`BAD` (and of a tiled and a
direct ``gemm`` set), whether :func:`oclla._params.check` accepts them; and the
tuner's search spaces (:data:`oclla.tune.SPACE`) per device kind, native width
and ``quick``.  ``PYTHONPATH=. python tests/test_knobs.py >
tests/data/knobs_snapshot.json`` writes it, only where a change of the derived
parameters is meant.
"""

import ast
import contextlib
import itertools
import json
import os
import re
import sys
import types
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

import oclla
from oclla import _knobs, _knobs_doc, _params, _profiles, lu_blocked, tune
from oclla._device import DeviceInfo
from oclla._programs import get_kernel
from oclla.blas import tile_launch

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
#: the PoCL 3.0 CPU device the snapshot was first taken on (its vector answers: VECTORS)
POCL = dict(BASE, name="pthread-AMD EPYC", vendor="AuthenticAMD", driver_version="3.0-rc2",
            local_mem_size=512 * 1024, global_mem_size=23128580096, max_alloc_size=8 << 30,
            max_clock_mhz=2445)
DEVICES = {"cpu": BASE, "pocl": POCL, "large-gpu": GPU, "tiny-gpu": TINY,
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


ROOT = Path(__file__).resolve().parent.parent


def test_reference_is_current():
    """docs/parameters.md is what the declarations generate."""
    text = (ROOT / "docs" / "parameters.md").read_text(encoding="utf-8")
    assert text == _knobs_doc.markdown(), \
        "regenerate it: python -m oclla._knobs_doc > docs/parameters.md"


def _reads(path: str, name: str) -> bool:
    """Whether the file reads knob ``name``: ``["NAME"]`` in Python, the name in OpenCL C."""
    text = (ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".py"):
        return f'["{name}"]' in text
    return re.search(rf"\b{name}\b", text) is not None


def test_every_knob_is_read_where_declared():
    unread = [(family, knob.name, path) for family, fam in _knobs.FAMILIES.items()
              for knob in fam.knobs for path in knob.read_by if not _reads(path, knob.name)]
    assert not unread
    assert all(knob.read_by for fam in _knobs.FAMILIES.values() for knob in fam.knobs)


def _family_of(node) -> str | None:
    """The family of a ``params(queue, "family", dtype)`` call (or ``dict()`` of one)."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict" and node.args:
        node = node.args[0]
    if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "params"
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)):
        return node.args[1].value
    return None


def _family_reads(tree):
    """(family, key) of each ``x["KEY"]`` in a function where ``x`` holds ``params(...)``
    of one family, or is that call itself."""
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        holders = {t.id: _family_of(n.value) for n in ast.walk(fn) if isinstance(n, ast.Assign)
                   for t in n.targets if isinstance(t, ast.Name) and _family_of(n.value)}
        for n in ast.walk(fn):
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant):
                family = (holders.get(n.value.id) if isinstance(n.value, ast.Name)
                          else _family_of(n.value))
                if family:
                    yield family, n.slice.value


def test_every_key_the_drivers_read_is_declared():
    """Every ``x["KEY"]`` in oclla/ names a declared knob, and where ``x`` holds one
    family's parameters (``x = params(queue, "family", ...)`` in the same function, or
    the call itself), a knob of that family."""
    declared = {k.name for fam in _knobs.FAMILIES.values() for k in fam.knobs}
    of_family = {f: {k.name for k in fam.knobs} for f, fam in _knobs.FAMILIES.items()}
    wrong, family_reads = [], 0
    for path in sorted((ROOT / "oclla").glob("*.py")):
        if path.name.startswith("_knobs"):
            continue                    # the declarations themselves
        text = path.read_text(encoding="utf-8")
        keys = set(re.findall(r'(?<!environ)\["([A-Z][A-Z0-9_]*)"\]', text))
        wrong += [(path.name, key) for key in keys - declared]
        for family, key in _family_reads(ast.parse(text)):
            family_reads += 1
            if key not in of_family[family]:
                wrong.append((path.name, family, key))
    assert not wrong
    assert family_reads > 40            # the drivers' reads were found


@pytest.mark.parametrize("device", ["cpu", "large-gpu"])
def test_a_rejected_value_is_named(device):
    """check() names the knob whose value is not allowed, and what it allows."""
    with simulated(DEVICES[device]) as info:
        for family in _params.FAMILIES:
            p = _params.ladder(None, family, "float32")[0]
            for key in p:
                why = _params.check(family, dict(p, **{key: "x"}), info, 4)
                allowed = _knobs.FAMILIES[family].knob(key).allowed.text
                assert why == f"{key} must be {allowed}", (family, key, why)


def test_shipped_entries_use_declared_knobs():
    """Every key of oclla/data/tuned.json is a knob of its family with an allowed value."""
    text = (ROOT / "oclla" / "data" / "tuned.json").read_text(encoding="utf-8")
    entries = _params.read_entries(text)
    assert entries
    wrong = [(e["device"], e["dtype"], family, key, value)
             for e in entries for family, p in e["params"].items()
             for key, value in p.items()
             if key not in {k.name for k in _knobs.FAMILIES[family].knobs}
             or not _knobs.FAMILIES[family].knob(key).allowed(value)]
    assert not wrong


# ---- host formulas against the built kernels ----------------------------------------------

#: Bytes a built kernel may report below the host's local-memory sum: PoCL drops the
#: ``__local`` arrays a configuration does not use (lu_rows.cl's row homes when there
#: is no previous update to apply: 12 to 20 bytes).  Above it, a kernel may report up to
#: the runtime's own share that the fit tests spare (``_knobs.LOCAL_RESERVE``: NVIDIA
#: reports 4 to 16 bytes more than the arrays); more fails.
SLACK = 64


def _local(kernel, queue) -> int:
    return kernel.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE, queue.device)


def _most_items(kernel, queue) -> int:
    return kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, queue.device)


def _kernel_cases(itemsize: int):
    """(label, source, kernel, defines, host's local bytes or None, local size launched)."""
    tile = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=4)
    defines, _, local = tile_launch(tile, 40, 40)
    yield ("gemm", "gemm.cl", "gemm_tiled", dict(DIRECT=0, **defines),
           _knobs.gemm_local_bytes(tile, itemsize), local)
    nb = 16
    yield ("trsm", "trsm.cl", "trtri_blocks", dict(TRSM_NB=nb),
           nb * (nb + 1) * itemsize, (nb,))
    crout = dict(WG=16, RJ=16, MB=64, CL=2, KC=64, RR=2, UNROLL=1)
    yield ("crout", "lu_crout.cl", "crout_step", dict(crout, VW=4, NO_PIVOT=0),
           _knobs.crout_local_bytes(crout, itemsize), (crout["WG"],))
    window = dict(W=8, WG=16)
    yield ("window", "lu_window.cl", "window_step",
           dict(WG=window["WG"], WIN=window["W"], NO_PIVOT=0),
           _knobs.window_local_bytes(window, itemsize), (window["WG"],))
    for chol in (dict(LEAF=16, WG=4, ROW_LEAF=0), dict(LEAF=8, WG=4, ROW_LEAF=1)):
        rows = _knobs.chol_row_leaf(chol)
        yield ("chol", "cholesky.cl", "potf2_rows" if rows else "potf2_block",
               dict(WG=chol["WG"], LEAF=chol["LEAF"], LOWER=1, ROW_LEAF=int(rows)),
               _knobs.chol_leaf_local_bytes(chol, itemsize),
               (chol["LEAF"] if rows else chol["WG"],))
    pivot = dict(VW=1, NV=1, WX=8, WY=2, RB=7, UNR=4)          # lu_pivot.PivotKernels
    yield ("pivot", "lu_inplace.cl", "pivot_step",
           dict(WG=pivot["WX"] * pivot["WY"], NO_PIVOT=0, **pivot), None,
           (pivot["WX"], pivot["WY"]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_local_memory_and_work_groups_match_the_kernels(queue, dtype):
    """The host's local-memory sum of each kernel is what the built kernel reports (within
    :data:`SLACK`), and its launches' work-groups are the kernel's required shape
    (``reqd_work_group_size``, where it has one) within its limit."""
    if dtype == "float64" and not oclla.device_info(queue).fp64:
        pytest.skip("no fp64")
    for label, source, name, defines, host, local in _kernel_cases(np.dtype(dtype).itemsize):
        kernel = get_kernel(queue, source, name, dtype, **defines)
        if host is not None:
            assert -_knobs.LOCAL_RESERVE <= host - _local(kernel, queue) <= SLACK, (
                label, host, _local(kernel, queue))
        required = tuple(kernel.get_work_group_info(
            cl.kernel_work_group_info.COMPILE_WORK_GROUP_SIZE, queue.device))
        if any(required):
            assert tuple(local) + (1,) * (3 - len(local)) == required, (label, local, required)
        assert int(np.prod(local)) <= _most_items(kernel, queue), label


FLAT_TILE = dict(TILE_M=4, TILE_N=16, WPT_M=2, WPT_N=2)    # lu_blocked.Panels._flat_leaf


@pytest.mark.parametrize("lw, wg, tile", [(4, 16, None), (1, 8, None), (4, 16, FLAT_TILE)])
def test_register_leaf_stage_fits_its_kernel(queue, lw, wg, tile):
    """``Panels._stage_rows`` (lu_blocked.py) picks a stage whose kernel (lu_rows.cl) fits
    the local memory it was given, and its sum for that stage exceeds the kernel's report
    by at most :data:`SLACK` (it still picks that stage given only the kernel's bytes and
    the slack).  The flat tail's leaf with the previous leaf's update (MAP = PREV = 1,
    ``tile``) permutes a row map, not rows: PoCL drops the permutation's arrays (swaps,
    from, out_row, out_from, named_first and outs: 5·LW + 1 ints), which the sum keeps."""
    budget = 1200 if tile is None else 2000
    panels = types.SimpleNamespace(p=dict(LEAF_W=lw, LEAF_STAGE=0), local_mem=budget,
                                   dtype=np.dtype("float32"))
    stage = lu_blocked.Panels._stage_rows(panels, wg, tile)
    assert stage > 0
    defines = dict(WG=wg, LW=lw, ROWS=2, STAGE=stage, ARGMAX_SCAN=32, NO_PIVOT=0)
    if tile is not None:
        defines.update(MAP=1, PREV=1, **tile)
    kernel = get_kernel(queue, "lu_rows.cl", "getf2_rows", "float32", **defines)
    used = _local(kernel, queue)
    assert used <= budget
    panels.local_mem = used + SLACK + (0 if tile is None else (5 * lw + 1) * 4)
    assert lu_blocked.Panels._stage_rows(panels, wg, tile) == stage
    assert wg <= _most_items(kernel, queue)


if __name__ == "__main__":
    json.dump(snapshot(), sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")
