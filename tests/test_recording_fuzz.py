"""Fuzzing load_recording and the headless viewer with damaged recordings.

Seeded and bounded: a fixed set of damaged files (truncations, bit flips, huge .npy headers,
deep JSON, wrong types, members dropped, renamed or lying about their size) made from sound
recordings.  One child process loads them all, another shows a sample in the headless viewer;
each must refuse with a one-line RecordingError / ``oclla-viewer: error:`` (exit 1) or show the
file, within bounded time and peak memory.  A hypothesis test puts values of the wrong type
anywhere in the metadata and checks that what loads can be analysed for display.
"""

import copy
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oclla
from oclla.trace import RecordingError
from recording_files import (crafted, extreme_runs, meta_bytes, member, npy_bytes,
                             python_child, sample_recording, sample_run, save, write_zip)

SEED = 20261121
N_FILES = 180
N_VIEWER_FILES = 12            # half loadable, half refused: a window for each loadable one
LOAD_MEMORY_MIB = 250
"""Peak RSS of the child that loads every damaged file."""
VIEW_MEMORY_MIB = 700
"""Peak RSS of the child that shows a batch of files, one window after another (about
615 MiB measured with the tile-task and sparse views; a file that made the viewer
allocate what its header claims would take GiBs)."""
LOAD_SECONDS = 40
VIEWER_SECONDS = 120

ODD_VALUES = [-1, 10**30, 1e308, float("nan"), float("inf"), "x", "a" * 5000, [], {}, None,
              True, [1, 2, 3], [[0, 1]], {"swaps": 1}, 0.5, -1e-300, 2**63]


def _members(path) -> dict:
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def _header(members: dict) -> dict:
    raw = members["meta.npy"]
    return json.loads(raw[raw.index(b"\n") + 1:].decode())


def _json_paths(value, prefix=()) -> list:
    """Every path (keys and indices) into a JSON document."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _json_paths(v, prefix + (k,))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            out += _json_paths(v, prefix + (k,))
    return out


def _replaced(doc, path, value):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _deep(depth: int, rng) -> str:
    opener, closer = ("[", "]") if rng.random() < 0.5 else ('{"a":', "}")
    return opener * depth + "0" + closer * depth


def _rezip(members: dict, header=None, meta_raw=None) -> list:
    out = dict(members)
    if header is not None or meta_raw is not None:
        out["meta.npy"] = meta_bytes(meta_raw if meta_raw is not None else header)
    return [member(n, d) for n, d in out.items()]


def damaged_files(folder) -> list:
    """(name, path) of N_FILES damaged recordings, the same every run."""
    rng = np.random.default_rng(SEED)
    base_runs = [sample_run(6), sample_run(4, snapshots=False)]
    base = save(sample_recording(*base_runs), folder / "base.oclrec")
    data = open(base, "rb").read()
    members = _members(base)
    header = _header(members)
    paths = _json_paths(header)
    arrays = [n for n in members if n != "meta.npy"]
    files = []
    for i in range(N_FILES):
        kind = ("truncate", "flip", "huge_header", "deep_json", "wrong_type", "members",
                "lying_size")[i % 7]
        path = folder / f"{i:03d}_{kind}.oclrec"
        if kind == "truncate":
            path.write_bytes(data[:int(rng.integers(0, len(data)))])
        elif kind == "flip":
            flipped = bytearray(data)
            for k in rng.integers(0, len(data) * 8, size=int(rng.integers(1, 17))):
                flipped[k // 8] ^= 1 << (k % 8)
            path.write_bytes(bytes(flipped))
        elif kind == "huge_header":
            dims = tuple(int(10 ** rng.uniform(0, 12)) for _ in range(int(rng.integers(1, 4))))
            target = arrays[int(rng.integers(len(arrays)))]
            raw = npy_bytes(dims, str(rng.choice(["<f8", "<f4", "|u1", "<c16"])), b"\0" * 64)
            write_zip(path, _rezip({**members, target: raw}))
        elif kind == "deep_json":
            where = paths[int(rng.integers(len(paths)))]
            marker = "__DEEP__"
            text = json.dumps(_replaced(header, where, marker)) if where else json.dumps(marker)
            deep = _deep(int(10 ** rng.uniform(1.5, 5)), rng)
            write_zip(path, _rezip(members, meta_raw=text.replace(f'"{marker}"', deep)))
        elif kind == "wrong_type":
            doc = header
            for _ in range(int(rng.integers(1, 4))):
                where = _json_paths(doc)[int(rng.integers(len(_json_paths(doc))))]
                doc = _replaced(doc, where, ODD_VALUES[int(rng.integers(len(ODD_VALUES)))])
            write_zip(path, _rezip(members, header=doc))
        elif kind == "members":
            changed = dict(members)
            victim = arrays[int(rng.integers(len(arrays)))]
            action = rng.integers(3)
            if action == 0:
                changed.pop(victim)
            elif action == 1:
                changed[victim.replace("snap", "snaq")] = changed.pop(victim)
            else:
                changed[victim] = members[arrays[int(rng.integers(len(arrays)))]][:-8]
            write_zip(path, _rezip(changed))
        else:
            ms = _rezip(members)
            m = ms[int(rng.integers(len(ms)))]
            m.file_size = int(m.file_size * rng.choice([0, 0.5, 2, 1000]) + rng.integers(0, 3))
            write_zip(path, ms)
        files.append((path.name, str(path)))
    return files


LOAD_ALL = """
import json, sys, time, oclla
for path in sys.argv[1:]:
    start = time.monotonic()
    try:
        oclla.load_recording(path)
        result, message = "loaded", ""
    except oclla.RecordingError as exc:
        result, message = "RecordingError", str(exc)
    except BaseException as exc:
        result, message = "escaped", f"{type(exc).__name__}: {exc}"[:500]
    print(json.dumps({"path": path, "result": result, "message": message,
                      "seconds": time.monotonic() - start}), flush=True)
"""

VIEW_ALL = """
import contextlib, io, json, os, sys, traceback
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from oclla.viewer.app import main
out = sys.argv[1]
for path in sys.argv[2:]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["--replay", path, "--size", "640x420", "--export", out])
        except BaseException:
            code = "escaped"
            traceback.print_exc()
    print(json.dumps({"path": path, "code": code, "stderr": err.getvalue()}), flush=True)
"""


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    return damaged_files(tmp_path_factory.mktemp("damaged"))


@pytest.fixture(scope="module")
def loaded(damaged):
    """Each damaged file's fate in load_recording, from one child process."""
    child = python_child(LOAD_ALL, *[p for _, p in damaged], timeout=LOAD_SECONDS * 3)
    assert child.returncode == 0, child.stderr[-3000:]
    results = [json.loads(line) for line in child.stdout.splitlines()]
    assert len(results) == len(damaged)
    return child, results


def test_every_damaged_file_loads_or_is_a_recording_error(loaded):
    child, results = loaded
    escaped = [r for r in results if r["result"] == "escaped"]
    assert not escaped, escaped[:5]
    kinds = {r["path"].rsplit("_", 1)[-1] for r in results if r["result"] == "RecordingError"}
    assert len(kinds) >= 6                 # every kind of damage was refused at least once
    for r in results:
        assert "\n" not in r["message"] and len(r["message"]) < 2000


def test_loading_damaged_files_takes_bounded_time_and_memory(loaded):
    child, results = loaded
    assert child.seconds < LOAD_SECONDS, child.seconds
    assert max(r["seconds"] for r in results) < 5
    assert child.peak_mib < LOAD_MEMORY_MIB, child.peak_mib


def _view_all(paths, out) -> tuple:
    """Show each recording in the headless viewer, one child process for all."""
    child = python_child(VIEW_ALL, out, *paths, timeout=VIEWER_SECONDS * 2)
    assert child.returncode == 0, child.stderr[-3000:]
    shown = [json.loads(line) for line in child.stdout.splitlines()]
    assert len(shown) == len(paths)
    for s in shown:
        assert "Traceback" not in s["stderr"], (s["path"], s["stderr"][-3000:])
        assert s["code"] in (0, 1), s
        if s["code"] == 1:
            lines = [ln for ln in s["stderr"].splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("oclla-viewer: error: "), s
    assert child.seconds < VIEWER_SECONDS, child.seconds
    assert child.peak_mib < VIEW_MEMORY_MIB, child.peak_mib
    return shown


def test_headless_viewer_on_damaged_files(loaded, tmp_path):
    _, results = loaded
    sound = [r["path"] for r in results if r["result"] == "loaded"]
    refused = [r["path"] for r in results if r["result"] == "RecordingError"]
    rng = np.random.default_rng(SEED)
    half = N_VIEWER_FILES // 2
    pick = list(rng.permutation(sound)[:half]) + list(rng.permutation(refused)[:half])
    shown = _view_all(pick, tmp_path / "x.png")
    assert all(s["code"] == 1 for s in shown if s["path"] in refused)


def test_extreme_but_sound_recordings_render(tmp_path):
    paths = []
    for name, run in extreme_runs():
        paths.append(save(sample_recording(run), tmp_path / f"{name}.oclrec"))
        oclla.load_recording(paths[-1])
    shown = _view_all(paths, tmp_path / "x.png")
    assert [s["code"] for s in shown] == [0] * len(paths), [s for s in shown if s["code"]]


# ---- wrong types anywhere, in-process: what loads can be analysed for display ----

@pytest.fixture(scope="module")
def typed_base(tmp_path_factory):
    """A sound recording's folder, members and header, for the hypothesis test."""
    folder = tmp_path_factory.mktemp("typed")
    members = _members(save(sample_recording(sample_run(5)), folder / "base.oclrec"))
    return {"folder": folder, "members": members, "header": _header(members)}


def _analyse(rec) -> None:
    """What the viewer computes from a recording before drawing it."""
    from oclla.viewer import analysis
    from oclla.viewer.details import step_summary
    for run in analysis.viewable_runs(rec):
        analysis.value_range(run)
        analysis.growth_by_position(run)
        analysis.backward_error(run)
        analysis.markers(run)
        analysis.timing_rows(rec)
        for p in range(analysis.n_positions(run)):
            analysis.overlays(run, p)
            analysis.pivot_value(run, p)
            analysis.full_view(run, analysis.matrix_at(run, p))
            step_summary(run, p)


@settings(max_examples=60)
@given(st.data())
def test_wrong_types_anywhere_in_the_metadata(typed_base, data):
    base = typed_base
    paths = _json_paths(base["header"])
    where = data.draw(st.sampled_from(paths))
    value = data.draw(st.sampled_from(ODD_VALUES) | st.integers(-2**70, 2**70)
                      | st.text(max_size=8) | st.lists(st.integers(-3, 10**6), max_size=5))
    header = _replaced(base["header"], where, value)
    arrays = {n[:-4]: d for n, d in base["members"].items() if n != "meta.npy"}
    path = crafted(base["folder"] / "typed.oclrec", header, arrays)
    try:
        rec = oclla.load_recording(path)
    except RecordingError as exc:
        assert "\n" not in str(exc)
        return
    _analyse(rec)
