"""Hostile and damaged recording files: load_recording refuses them with RecordingError, the
headless viewer with one line and exit status 1, within bounded time and memory; extreme but
sound values render.  Anything that might crash or exhaust memory runs in a child process."""

import os
import zipfile

import numpy as np
import pytest

import oclla
from oclla import trace
from oclla.trace import RecordingError
from recording_files import (crafted, header_with, member, meta_bytes, npy_bytes,
                             one_line_error, python_child, sample_header, sample_recording,
                             sample_run, save, viewer_child, write_zip, zeros_bomb)

LOAD = ("import sys, oclla\n"
        "try:\n"
        "    oclla.load_recording(sys.argv[1])\n"
        "    print('loaded')\n"
        "except oclla.RecordingError as exc:\n"
        "    print('RecordingError:', exc)\n")

MEMORY_MIB = 400
"""Peak RSS a child that loads or shows a small hostile file may reach."""


def refused_by_viewer(path, tmp_path):
    """Run the headless viewer on ``path``: exit 1, one error line; return that line."""
    child = viewer_child("--replay", path, "--export", tmp_path / "x.png", timeout=120)
    assert child.returncode == 1, child.stderr[-3000:]
    assert child.peak_mib < MEMORY_MIB, child.peak_mib
    assert not (tmp_path / "x.png").exists()
    return one_line_error(child)


# ---- row 9: corrupt data, deep JSON, huge .npy headers raise RecordingError ----

def test_corrupt_compressed_data_is_a_recording_error(tmp_path):
    path = save(sample_recording(sample_run(12)), tmp_path / "r.oclrec")
    data = bytearray(open(path, "rb").read())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("run0_snap3.npy")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for k in range(start + 4, start + info.compress_size - 4, 7):
        data[k] ^= 0x5A
    bad = tmp_path / "corrupt.oclrec"
    bad.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match="damaged"):
        oclla.load_recording(bad)


def test_deep_json_is_a_recording_error(tmp_path):
    deep = '{"format": "oclla-recording", "version": 1, "runs": ' + "[" * 100_000 \
        + "]" * 100_000 + "}"
    with pytest.raises(RecordingError, match="damaged"):
        oclla.load_recording(crafted(tmp_path / "deep.oclrec", deep))
    nested = header_with([])
    nested["runs"] = [{}]
    inner = nested["runs"][0]
    for _ in range(40):                     # below the parser's limit, above the format's
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(RecordingError, match="deeper than"):
        oclla.load_recording(crafted(tmp_path / "nested.oclrec", nested))


def test_npy_header_claiming_a_huge_array_is_refused_before_allocating(tmp_path):
    header = sample_header(4)
    header["runs"][0].update(has_result=False, n_snapshots=0)
    for s in header["runs"][0]["steps"]:
        s["snapshot"] = None
    path = crafted(tmp_path / "huge.oclrec", header,
                   {"run0_initial": npy_bytes((10**9, 10**9), data=b"\0" * 64)})
    with pytest.raises(RecordingError, match="claims"):
        oclla.load_recording(path)
    child = python_child(LOAD, path)
    assert child.returncode == 0 and child.stdout.startswith("RecordingError"), child.stderr
    assert child.peak_mib < MEMORY_MIB


# ---- row 10: damaged files that used to load are refused, the viewer says so in one line ----

def _damaged(tmp_path, name, change) -> str:
    header = sample_header(5)
    arrays = {"run0_initial": np.zeros((5, 5)), "run0_result": np.zeros((5, 5)),
              **{f"run0_snap{j}": np.zeros((5, 5)) for j in range(4)}}
    change(header["runs"][0], arrays)
    return crafted(tmp_path / f"{name}.oclrec", header, arrays)


DAMAGE = {
    "negative_count": (lambda run, arrays: run.update(n_snapshots=-1), "n_snapshots"),
    "negative_flops": (lambda run, arrays: run["steps"][1].update(flops=-5.0), "flops"),
    "snapshot_999": (lambda run, arrays: run["steps"][2].update(snapshot=999), "snapshot"),
    "wrong_shape": (lambda run, arrays: arrays.update(run0_snap2=np.zeros((3, 7))),
                    "differ in shape"),
    "region_1e30": (lambda run, arrays: run["steps"][0].update(region=[0, 10**30, 0, 5]),
                    "region"),
    "string_shape": (lambda run, arrays: run.update(shape="5x5"), "shape"),
    "kernel_of_other_step": (lambda run, arrays: run["steps"][1]["kernels"][0].update(step=3),
                             "claims step"),
    "swap_as_text": (lambda run, arrays: run["steps"][0]["info"].update(swaps="0-4"), "swaps"),
    "missing_array": (lambda run, arrays: arrays.pop("run0_snap3"), "missing"),
    "extra_array": (lambda run, arrays: arrays.update(run7_snap0=np.zeros((5, 5))),
                    "unexpected"),
    "object_array": (lambda run, arrays: arrays.update(run0_initial=npy_bytes((5, 5), "|O")),
                     "damaged"),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_metadata_is_refused_on_load(tmp_path, name):
    change, message = DAMAGE[name]
    with pytest.raises(RecordingError, match=message):
        oclla.load_recording(_damaged(tmp_path, name, change))


@pytest.mark.parametrize("name", ["negative_count", "snapshot_999", "wrong_shape",
                                  "region_1e30"])
def test_viewer_refuses_damaged_files_in_one_line(tmp_path, name):
    change, message = DAMAGE[name]
    line = refused_by_viewer(_damaged(tmp_path, name, change), tmp_path)
    assert line.startswith(f"oclla-viewer: error: Could not open {name}.oclrec: ")
    assert message in line


# ---- row 11: small files that claim large matrices ----

def test_small_file_declaring_a_12000_matrix_shows_regions_in_bounded_memory(tmp_path):
    n = 12000
    run = sample_run(4, snapshots=False)
    run.shape = (n, n)
    run.steps[-1].region = (0, n, 0, n)
    path = save(sample_recording(run), tmp_path / "big.oclrec")
    assert os.path.getsize(path) < 2000
    out = tmp_path / "big.png"
    child = viewer_child("--replay", path, "--export", out)
    assert child.returncode == 0, child.stderr[-3000:]
    assert out.stat().st_size > 0
    assert child.peak_mib < MEMORY_MIB, child.peak_mib


def test_snapshot_header_above_the_order_limit_is_refused(tmp_path):
    n = trace.MAX_SNAPSHOT_ORDER + 1
    header = sample_header(4)
    header["runs"][0].update(has_result=False, n_snapshots=0, shape=[n, n])
    for s in header["runs"][0]["steps"]:
        s["snapshot"] = None
    path = write_zip(tmp_path / "bomb.oclrec", [
        member("meta.npy", meta_bytes(header)),
        zeros_bomb("run0_initial.npy", npy_bytes((n, n), data=b""), 8 * n * n)])
    assert os.path.getsize(path) < 200_000
    with pytest.raises(RecordingError, match="MAX_SNAPSHOT_ORDER"):
        oclla.load_recording(path)
    child = python_child(LOAD, path)
    assert child.stdout.startswith("RecordingError") and child.peak_mib < MEMORY_MIB


def test_zip_bomb_beyond_the_total_limit_is_refused_before_decompressing(tmp_path):
    n = 4096                                   # each array within the order limit ...
    header = sample_header(4)
    run = header["runs"][0]
    run.update(has_result=False, has_initial=False, n_snapshots=3, shape=[n, n])
    for s in run["steps"]:
        s["snapshot"] = min(s["index"], 2)
    head = npy_bytes((n, n), data=b"")
    bomb = [zeros_bomb(f"run0_snap{j}.npy", head, 8 * n * n) for j in range(3)]
    path = write_zip(tmp_path / "bomb.oclrec", [member("meta.npy", meta_bytes(header))]
                     + bomb)                   # ... but 384 MiB in all
    assert os.path.getsize(path) < 1_000_000
    with pytest.raises(RecordingError, match="more than the limit"):
        oclla.load_recording(path)
    child = python_child(LOAD, path)
    assert child.stdout.startswith("RecordingError") and child.peak_mib < MEMORY_MIB
    line = refused_by_viewer(path, tmp_path)
    assert "max_bytes" in line


def test_member_larger_than_its_declared_size_is_refused(tmp_path):
    path = save(sample_recording(sample_run(5)), tmp_path / "r.oclrec")
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    lying = zeros_bomb("run0_snap1.npy", members["run0_snap1.npy"], 64 << 20)
    lying.file_size = len(members["run0_snap1.npy"])     # declares the true array's size
    others = [member(n, d) for n, d in members.items() if n != "run0_snap1.npy"]
    bad = write_zip(tmp_path / "lying.oclrec", others + [lying])
    with pytest.raises(RecordingError, match="damaged"):
        oclla.load_recording(bad)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_devices_are_refused_at_once(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    child = python_child(LOAD, device, timeout=60)
    assert child.stdout.startswith("RecordingError") and "not a regular file" in child.stdout
    assert child.seconds < 30 and child.peak_mib < MEMORY_MIB


# ---- row 12: a FIFO is refused, never waited on ----

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "pipe.oclrec"
    os.mkfifo(fifo)
    with pytest.raises(RecordingError, match="not a regular file"):
        oclla.load_recording(fifo)
    child = viewer_child("--replay", fifo, "--export", tmp_path / "x.png", timeout=60)
    assert child.returncode == 1 and child.seconds < 50
    assert "not a regular file" in one_line_error(child)


# ---- row 6: extreme but finite values render ----

def _huge_run(n: int = 6) -> object:
    run = sample_run(n)
    rng = np.random.default_rng(6)
    for a in [run.initial, run.result, *run.snapshots]:
        a[...] = rng.choice([-1.7e308, 1.7e308, 1.2e308, -9e307], size=a.shape)
    run.snapshots[1][2, 3] = np.inf
    run.snapshots[2][0, 0] = np.nan
    return run


def test_entries_near_the_float64_limit_render(tmp_path):
    path = save(sample_recording(_huge_run()), tmp_path / "huge.oclrec")
    for step in ("0", "2", "3"):
        out = tmp_path / f"huge{step}.png"
        child = viewer_child("--replay", path, "--step", step, "--export", out)
        assert child.returncode == 0, child.stderr[-3000:]
        assert out.stat().st_size > 0


def test_a_huge_matrix_file_runs_and_renders(tmp_path):
    a = np.random.default_rng(7).choice([-1.7e308, 1.7e308, 1.0], size=(6, 6))
    np.save(tmp_path / "huge.npy", a)
    out = tmp_path / "run.png"
    child = viewer_child("--algorithm", "lu", "--variant", "pivot", "--matrix",
                         tmp_path / "huge.npy", "--view", "matrix", "--export", out)
    assert child.returncode == 0, child.stderr[-3000:]
    assert out.stat().st_size > 0


def test_colour_values_never_overflow():
    from oclla.viewer.matrix_view import colour_values
    for vmax in (1.7976931348623157e308, 1e200, 1.0, 1e-200, 5e-324):
        a = np.array([[vmax, -vmax], [np.inf, np.nan]])
        values, v, exponent = colour_values(a, vmax)
        assert np.isfinite(v) and np.isfinite(2 * v) and 1e-100 <= v <= 1e100
        assert np.isfinite(values[0]).all() and np.isnan(values[1]).all()
        assert abs(values[0, 0] - v) <= 1e-9 * v and np.isfinite(values[0] + v).all()
        assert (exponent == 0) == (1e-100 <= vmax <= 1e100)
