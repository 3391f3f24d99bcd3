"""Recording files for the robustness tests: sound ones made without a device, hand-crafted
damaged ones (raw zip members, .npy headers that lie, zip bombs), and a way to run a
command in a child process and measure its time and peak memory."""

import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass

import numpy as np

from oclla.trace import (FORMAT_NAME, FORMAT_VERSION, MAX_NAME_CHARS, MAX_NS, MAX_ORDER,
                         KernelRecord, Recording, Run, Step)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: A child's import path: this checkout first, then the caller's own (where pyopencl
#: may come from, installed with ``pip --target``).
CHILD_PYTHONPATH = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
CHILD_ENV = dict(os.environ, PYTHONPATH=CHILD_PYTHONPATH, QT_QPA_PLATFORM="offscreen",
                 PYTHONWARNINGS="ignore")


# ---- sound recordings (no device) ----

def sample_run(n: int = 5, snapshots: bool = True) -> Run:
    """A per-pivot LU-like run of order n: n−1 steps, one kernel each, snapshots if asked."""
    run = Run("lu", "test", (n, n), "float64", "test device", {"lower": True},
              metrics={"source": {"family": "random", "seed": 1, "n": n}})
    if snapshots:
        run.initial = np.arange(n * n, dtype=np.float64).reshape(n, n)
    for k in range(n - 1):
        t0 = 1_000_000 * k
        kern = KernelRecord("k_elim", t0, t0 + 100, t0 + 500, t0 + 1500, (64,), (16,), k)
        run.steps.append(Step("lu", k, "eliminate", (k, n, k, n), (k, k), 2.0 * (n - k) ** 2,
                              8.0 * n, {"swaps": [(k, n - 1)]}, [kern],
                              k if snapshots else None))
        if snapshots:
            run.snapshots.append(np.full((n, n), float(k + 1)))
    if snapshots:
        run.result = run.snapshots[-1].copy()
    return run


def sample_recording(*runs) -> Recording:
    rec = Recording()
    rec.runs.extend(runs or [sample_run()])
    return rec


def extreme_runs():
    """(name, run): sound runs at the edges of what a recording may hold (times and sizes
    at their limits, regions and swaps far outside the matrix, no shape, a huge order with
    regions only, flat, wide, half-precision, all-NaN, subnormal and 1x1 arrays, long
    names with markup, packed buffers flat and 2-D, a long error)."""
    r = sample_run(5)
    for k in r.kernels:
        k.queued, k.submit, k.start, k.end = 0, MAX_NS, 0, MAX_NS
        k.global_size = k.local_size = (2**62, 2**62, 2**62)
    yield "times_sizes", r
    r = sample_run(5)
    for s in r.steps:
        s.region, s.pivot = (0, MAX_ORDER, 0, MAX_ORDER), (MAX_ORDER - 1, MAX_ORDER - 1)
        s.info = {"swaps": [(MAX_ORDER - 1, 0)] * 3 + [(i, i + 1) for i in range(3)],
                  "logical_region": [0, MAX_ORDER, 0, MAX_ORDER], "leaf": [0, 1, 0, MAX_ORDER],
                  "regions": [[0, MAX_ORDER, 0, MAX_ORDER]] * 5, "matrix": "<b>A</b>" * 100}
    yield "regions_max", r
    for name, shape in (("no_shape", ()), ("zero_shape", (0, 0)),
                        ("order_max", (MAX_ORDER, MAX_ORDER))):
        r = sample_run(5, snapshots=False)
        r.shape = shape
        for s in r.steps:
            s.region = (0, MAX_ORDER, 0, MAX_ORDER)
        r.steps[0].info = {"swaps": [(i, i + 1) for i in range(0, 200_000, 2)]}
        yield name, r
    for name, make in (("flat", lambda a: a.ravel()[:7]), ("wide", lambda a: np.tile(a, (1, 3))),
                       ("half", lambda a: a.astype(np.float16)), ("nan", lambda a: a * np.nan),
                       ("packed_flat", lambda a: np.arange(15.0)),
                       ("subnormal", lambda a: a * 5e-324), ("one", lambda a: a[:1, :1])):
        r = sample_run(5)
        r.initial, r.result = make(r.initial), make(r.result)
        r.snapshots = [make(x) for x in r.snapshots]
        yield name, r
    r = sample_run(5)
    r.algorithm, r.variant, r.device = "x" * MAX_NAME_CHARS, "<script>", "&amp;"
    r.error = "boom\n" * 1000
    for s in r.steps:
        s.phase = "é" * MAX_NAME_CHARS
    yield "names", r
    for name, buf in (("rfp_flat", np.arange(15.0)),
                      ("rfp_picture", np.arange(18.0).reshape(6, 3))):
        r = sample_run(5)
        r.algorithm = "rfp_cholesky"
        r.initial, r.result, r.snapshots = buf, buf.copy(), [buf.copy() for _ in r.steps]
        yield name, r


def save(rec: Recording, path) -> str:
    rec.save(path)
    return str(path)


def sample_header(n: int = 5, snapshots: bool = True) -> dict:
    """The JSON header :meth:`Recording.save` writes for :func:`sample_run`."""
    rec = sample_recording(sample_run(n, snapshots))
    with tempfile.TemporaryDirectory() as tmp:
        path = save(rec, os.path.join(tmp, "r.oclrec"))
        with np.load(path) as npz:
            return json.loads(bytes(npz["meta"]).decode())


# ---- hand-made files ----

def npy_bytes(shape, dtype: str = "<f8", data: bytes | None = None,
              fortran: bool = False) -> bytes:
    """A .npy member whose header says ``shape``/``dtype``; ``data`` defaults to zeros of
    that size (pass fewer bytes for a header that lies)."""
    if data is None:
        data = bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize)
    head = repr({"descr": dtype, "fortran_order": fortran, "shape": tuple(shape)})
    pad = 64 - (10 + len(head) + 1) % 64
    head = (head + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head + data


def meta_bytes(header) -> bytes:
    raw = header if isinstance(header, (bytes, str)) else json.dumps(header)
    raw = raw.encode() if isinstance(raw, str) else raw
    return npy_bytes((len(raw),), "|u1", raw)


@dataclass
class Member:
    """One raw zip member: ``data`` as stored, and what the directory declares."""

    name: str
    data: bytes                  # the stored (compressed, if deflated) bytes
    file_size: int               # declared uncompressed size
    crc: int
    deflated: bool = True


def member(name: str, payload: bytes, deflated: bool = True) -> Member:
    """A truthful member holding ``payload``."""
    if deflated:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        data = c.compress(payload) + c.flush()
    else:
        data = payload
    return Member(name, data, len(payload), zlib.crc32(payload), deflated)


def zeros_bomb(name: str, npy_head: bytes, zero_bytes: int) -> Member:
    """A member of ``npy_head`` then ``zero_bytes`` zeros, built from one repeated deflate
    block (fast to make, about 1000:1)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(npy_head) + c.flush(zlib.Z_FULL_FLUSH)
    chunk = 1 << 22
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(chunk)) + c.flush(zlib.Z_FULL_FLUSH)
    count, rest = divmod(zero_bytes, chunk)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    tail = c.compress(bytes(rest)) + c.flush()
    return Member(name, head + block * count + tail, len(npy_head) + zero_bytes, 0)


def write_zip(path, members) -> str:
    """A zip of raw members (declared sizes and CRCs taken as given, true or not)."""
    out, central = bytearray(), bytearray()
    for m in members:
        name = m.name.encode()
        method = 8 if m.deflated else 0
        fields = (20, 0, method, 0, 0, m.crc & 0xFFFFFFFF, len(m.data), m.file_size)
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields, len(name), 0) + name + m.data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, *fields, len(name),
                               0, 0, 0, 0, 0, offset) + name
    start = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                       len(central), start, 0)
    with open(path, "wb") as fh:
        fh.write(out)
    return str(path)


def crafted(path, header, arrays: dict | None = None) -> str:
    """A recording of ``header`` (dict, or raw JSON text) and ``arrays`` (name -> ndarray,
    or raw .npy bytes), written member by member."""
    members = [member("meta.npy", meta_bytes(header))]
    for name, value in (arrays or {}).items():
        raw = value if isinstance(value, bytes) else _npy(value)
        members.append(member(f"{name}.npy", raw))
    return write_zip(path, members)


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def header_with(runs) -> dict:
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "runs": runs}


# ---- child processes ----

@dataclass
class Child:
    """What a child process did: exit status, output, wall seconds, peak RSS in MiB."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_mib: float


LAUNCHER = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""
"""Runs the command and writes its exit status and peak RSS (KiB).  Measured from this small
process: a child's peak RSS on Linux starts from its parent's at exec, and the test process
is large."""


def run_child(args, timeout: float = 120.0, cwd=None) -> Child:
    """Run ``args`` with the repository importable; killed after ``timeout`` seconds.

    The peak resident memory is the child's own (through :data:`LAUNCHER`), so neither
    the test process nor other tests' children count.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report")
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, report, *map(str, args)],
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=CHILD_ENV, cwd=cwd or ROOT, start_new_session=True)
        timer = threading.Timer(timeout, os.killpg, (proc.pid, 9))
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        seconds = time.monotonic() - start
        code, peak_kib = (open(report).read().split() if os.path.exists(report)
                          else (-9, 0))
        out.seek(0)
        err.seek(0)
        return Child(int(code), out.read().decode(errors="replace"),
                     err.read().decode(errors="replace"), seconds, int(peak_kib) / 1024)


def python_child(code: str, *args, timeout: float = 120.0) -> Child:
    return run_child([sys.executable, "-c", code, *args], timeout)


def viewer_child(*args, timeout: float = 120.0) -> Child:
    return run_child([sys.executable, "-m", "oclla.viewer", *args], timeout)


def one_line_error(child: Child) -> str:
    """The viewer's single error line (asserts there is exactly one and no traceback)."""
    lines = [ln for ln in child.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in child.stderr, child.stderr[-3000:]
    errors = [ln for ln in lines if ln.startswith("oclla-viewer: error: ")]
    assert len(errors) == 1, child.stderr[-3000:]
    return errors[0]
