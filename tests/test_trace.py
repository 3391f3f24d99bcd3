"""The trace: zero cost when off, faithful timings when on, portable files."""

import json
import zipfile

import numpy as np
import pyopencl as cl
import pytest

import oclla
from oclla import _trace_hooks, trace
from oclla.trace import FORMAT_VERSION, RecordingError


def test_no_recorder_means_no_trace_work(monkeypatch, rng):
    assert _trace_hooks.active() is None

    def explode(*args, **kwargs):
        raise AssertionError("trace work done with no recorder active")

    monkeypatch.setattr(trace.Recording, "add_kernel", explode)
    monkeypatch.setattr(trace.Recording, "begin_step", explode)
    monkeypatch.setattr(trace.Recording, "begin_run", explode)
    a = rng.standard_normal((20, 20))
    oclla.lu_factor(a)
    oclla.lu_factor(a, method="pivot")
    assert trace.run("x", "y", None, (1, 1), np.float32) is trace._NULL
    assert trace.step("gemm", (0, 1, 0, 1)) is trace._NULL


def test_record_collects_runs_steps_and_kernels(rng):
    a = rng.standard_normal((10, 10)).astype(np.float32)
    with oclla.record() as rec:
        assert trace.recording()
        oclla.lu_factor(a, method="pivot")
        oclla.lu_factor(a)
    assert not trace.recording()
    assert [r.variant for r in rec.runs] == ["inplace", "blocked"]
    run = rec.runs[0]
    assert run.algorithm == "lu" and run.shape == (10, 10) and run.dtype == "float32"
    assert run.device == oclla.device_info(oclla.get_queue()).name
    assert run.initial is None and run.snapshots == []          # no snapshots asked for
    assert len(run.steps) == 9 and all(s.kernels for s in run.steps)
    assert all(k.step == s.index for s in run.steps for k in s.kernels)
    assert run.device_ns > 0 and run.wall_ns >= run.device_ns
    assert run.flops == pytest.approx(sum(2.0 * k * k + k for k in range(1, 10)))
    assert set(run.phase_totals()) == {"eliminate"}
    assert len(rec.steps) == len(rec.runs[0].steps) + len(rec.runs[1].steps)


def test_nested_record_is_refused():
    with oclla.record():
        with pytest.raises(RuntimeError, match="nested"):
            with oclla.record():
                pass


def test_failed_run_keeps_its_error():
    with oclla.record() as rec:
        with pytest.raises(np.linalg.LinAlgError):
            oclla.lu_factor(np.array([[0.0, 1.0], [1.0, 0.0]]), method="pivot",
                            pivoting="none")
    assert rec.runs[0].error.startswith("LinAlgError: zero pivot in column 0")
    with oclla.record() as rec:
        with pytest.raises(ZeroDivisionError):
            with trace.run("demo", "x", None, (1, 1), np.float32):
                with trace.step("work", (0, 1, 0, 1)):
                    raise ZeroDivisionError("boom")
    assert rec.runs[0].error == "ZeroDivisionError: boom"
    assert rec.runs[0].steps[0].phase == "work"


def _marker(rec, queue, name):
    """Report a marker command to ``rec`` as the kernel ``name`` (as _programs.launch does)."""
    rec.add_kernel(name, cl.enqueue_marker(queue), (1,), None)


def test_nested_steps_and_calls_give_the_outer_ones_back(queue):
    """A step inside a step, and a call inside a step, end by restoring the outer step,
    run and snapshot function: later kernels and snapshots are the outer ones'."""
    outer_matrix, inner_matrix = np.zeros((4, 4)), np.ones((2, 2))
    with oclla.record(snapshots=True) as rec:
        with trace.run("outer", "x", queue, (4, 4), np.float64, lambda: outer_matrix):
            with trace.step("a", (0, 4, 0, 4)):
                _marker(rec, queue, "a1")
                with trace.step("b", (0, 2, 0, 2)):
                    _marker(rec, queue, "b1")
                _marker(rec, queue, "a2")
                with trace.run("inner", "y", queue, (2, 2), np.float64, lambda: inner_matrix):
                    with trace.step("c", (0, 2, 0, 2)):
                        _marker(rec, queue, "c1")
                _marker(rec, queue, "a3")
            with trace.step("d", (2, 4, 2, 4)):
                _marker(rec, queue, "d1")
    assert [r.algorithm for r in rec.runs] == ["outer", "inner"]
    outer, inner = rec.runs
    assert [(s.phase, [k.name for k in s.kernels]) for s in outer.steps] == \
        [("a", ["a1", "a2", "a3"]), ("b", ["b1"]), ("d", ["d1"])]
    assert all(k.step == s.index for s in outer.steps for k in s.kernels)
    assert [(s.phase, [k.name for k in s.kernels]) for s in inner.steps] == [("c", ["c1"])]
    assert [outer.snapshot_at(i).shape for i in range(3)] == [(4, 4)] * 3
    assert inner.snapshot_at(0).shape == (2, 2) and inner.result.shape == (2, 2)
    assert outer.result.shape == (4, 4)


def test_kernels_outside_any_call_are_other_runs_in_call_order(queue):
    """The viewer skips runs named "other" (viewer.analysis.viewable_runs): stray kernels
    go there, one run per stretch between calls, never into the call that follows."""
    with oclla.record() as rec:
        _marker(rec, queue, "s1")
        _marker(rec, queue, "s2")
        with trace.run("call", "x", queue, (1, 1), np.float32):
            with trace.step("w", (0, 1, 0, 1)):
                _marker(rec, queue, "w1")
        _marker(rec, queue, "s3")
    assert [(r.algorithm, [k.name for k in r.kernels]) for r in rec.runs] == \
        [("other", ["s1", "s2"]), ("call", ["w1"]), ("other", ["s3"])]
    assert all(k.end >= k.start > 0 for k in rec.kernels)


def test_save_and_load_roundtrip(tmp_path, rng):
    a = rng.standard_normal((6, 6))
    with oclla.record(snapshots=True) as rec:
        lu, _ = oclla.lu_factor(a, method="pivot")
    rec.runs[0].metrics["backward_error"] = 0.5
    path = tmp_path / "lu.oclrec"
    rec.save(path)
    back = oclla.load_recording(path)
    assert len(back.runs) == 1
    r0, r1 = rec.runs[0], back.runs[0]
    assert (r1.algorithm, r1.variant, r1.shape, r1.dtype) == (r0.algorithm, r0.variant,
                                                            r0.shape, r0.dtype)
    assert r1.metrics == {"backward_error": 0.5}
    assert [s.region for s in r1.steps] == [s.region for s in r0.steps]
    assert [s.info for s in r1.steps] == [json.loads(json.dumps(s.info, default=list))
                                          for s in r0.steps]
    assert [k.start for k in r1.kernels] == [k.start for k in r0.kernels]
    np.testing.assert_array_equal(r1.initial, a)
    np.testing.assert_array_equal(r1.result, lu)
    assert len(r1.snapshots) == 5
    np.testing.assert_array_equal(r1.snapshot_at(2), r0.snapshot_at(2))
    assert back.snapshots


def test_load_rejects_bad_files(tmp_path, rng):
    with oclla.record() as rec:
        oclla.lu_factor(rng.standard_normal((4, 4)))
    good = tmp_path / "good.oclrec"
    rec.save(good)
    data = good.read_bytes()

    truncated = tmp_path / "truncated.oclrec"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordingError, match="damaged|not an oclla recording"):
        oclla.load_recording(truncated)

    garbage = tmp_path / "garbage.oclrec"
    garbage.write_bytes(b"this is not a recording")
    with pytest.raises(RecordingError, match="not an oclla recording"):
        oclla.load_recording(garbage)

    with pytest.raises(RecordingError, match="cannot read"):
        oclla.load_recording(tmp_path / "missing.oclrec")

    def rewrite(name, header_change):
        with np.load(good) as npz:
            arrays = {k: npz[k] for k in npz.files}
        header = json.loads(bytes(arrays["meta"]).decode())
        header_change(header)
        arrays["meta"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
        path = tmp_path / name
        np.savez(path, **arrays)
        return path

    newer = rewrite("newer.npz", lambda h: h.update(version=FORMAT_VERSION + 1))
    with pytest.raises(RecordingError, match="newer"):
        oclla.load_recording(newer)
    other = rewrite("other.npz", lambda h: h.update(format="something-else"))
    with pytest.raises(RecordingError, match="not an oclla recording"):
        oclla.load_recording(other)
    broken = rewrite("broken.npz", lambda h: h["runs"][0].pop("steps"))
    with pytest.raises(RecordingError, match="damaged"):
        oclla.load_recording(broken)
    assert zipfile.is_zipfile(good)


def test_chrome_trace(tmp_path, rng):
    with oclla.record() as rec:
        oclla.lu_factor(rng.standard_normal((40, 40)), block=16)
    path = tmp_path / "trace.json"
    doc = rec.to_chrome_trace(path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(doc))
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == len(rec.kernels)
    assert {e["cat"] for e in slices} == {"panel", "laswp", "trsm", "gemm"}
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in slices)
    names = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
    assert "lu blocked 40x40 float64" in names[0]["args"]["name"]
