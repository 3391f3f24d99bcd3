"""One recorder per thread: each thread records its own calls and only its own, several at
once; ``_trace_hooks.suspended()`` hides internal work from the current recorder."""

import threading

import numpy as np
import pytest

import oclla
from oclla import _trace_hooks, trace
from recording_files import python_child


def _in_threads(target, count: int = 3) -> list:
    """Run ``target(i, barrier)`` in ``count`` threads; return their results (or raise)."""
    barrier = threading.Barrier(count)
    results, errors = [None] * count, []

    def work(i):
        try:
            results[i] = target(i, barrier)
        except BaseException as exc:    # handed to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    if errors:
        raise errors[0]
    return results


def test_each_thread_records_its_own_run_at_the_same_time(rng):
    mats = [rng.standard_normal((n, n)).astype(np.float32) for n in (6, 8, 10)]

    def work(i, barrier):
        with oclla.record() as rec:
            barrier.wait()                  # all three recorders open together
            oclla.lu_factor(mats[i], method="pivot")
            barrier.wait()
        return rec

    recs = _in_threads(work)
    for rec, a in zip(recs, mats):
        n = a.shape[0]
        assert [(r.algorithm, r.shape) for r in rec.runs] == [("lu", (n, n))]
        run = rec.runs[0]
        assert len(run.steps) == n - 1 and [s.index for s in run.steps] == list(range(n - 1))
        assert all(s.region[1] == n for s in run.steps)          # no step of another call
        assert all(k.end >= k.start > 0 for k in run.kernels)


def test_calls_in_other_threads_are_not_captured(rng):
    a = rng.standard_normal((7, 7)).astype(np.float32)
    with oclla.record() as rec:
        _in_threads(lambda i, barrier: oclla.lu_factor(a, method="pivot"), 2)
        assert not rec.runs
        oclla.lu_factor(a[:5, :5], method="pivot")
    assert [r.shape for r in rec.runs] == [(5, 5)]
    assert all(r.algorithm == "lu" for r in rec.runs)


def test_a_thread_started_inside_a_block_does_not_inherit_it():
    seen = []
    with oclla.record():
        t = threading.Thread(target=lambda: seen.append(trace.recording()))
        t.start()
        t.join()
        assert trace.recording()
    assert seen == [False]


def test_nesting_in_one_thread_and_sharing_one_recorder_are_refused():
    with oclla.record():
        with pytest.raises(RuntimeError, match="nested"):
            with oclla.record():
                pass
    rec = oclla.record()
    with rec:
        def enter_again(i, barrier):
            with pytest.raises(RuntimeError, match="already open"):
                with rec:
                    pass
        _in_threads(enter_again, 1)
    assert _trace_hooks.active() is None


def test_suspended_hides_work_from_the_recorder(rng):
    a = rng.standard_normal((6, 6)).astype(np.float32)
    with oclla.record() as rec:
        oclla.lu_factor(a, method="pivot")
        with _trace_hooks.suspended():
            assert _trace_hooks.active() is None and not trace.recording()
            oclla.lu_factor(a, method="pivot")
        assert _trace_hooks.active() is rec
        with pytest.raises(ZeroDivisionError):
            with _trace_hooks.suspended():
                raise ZeroDivisionError
        assert _trace_hooks.active() is rec
    assert len(rec.runs) == 1
    with _trace_hooks.suspended():
        assert _trace_hooks.active() is None
    assert _trace_hooks.active() is None


def test_no_recorder_costs_one_lookup():
    """The hook is the context variable's own ``get``: no Python frame, no lock."""
    assert type(_trace_hooks.active).__name__ == "builtin_function_or_method"
    assert _trace_hooks.active() is None


THREADED_SNAPSHOTS = """
import sys, threading, numpy as np, oclla
a = np.random.default_rng(0).standard_normal((24, 24))
mode, errors, counts = sys.argv[1], [], []
def work(i):
    try:
        for _ in range(3):
            if mode == "each":
                with oclla.record(snapshots=True) as rec:
                    oclla.lu_factor(a, method="pivot")
                counts.append(len(rec.runs[0].snapshots))
            else:
                oclla.lu_factor(a, method="pivot")
    except Exception as exc:
        errors.append(repr(exc))
with oclla.record(snapshots=True) as outer:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads: t.start()
    for t in threads: t.join()
print(len(outer.runs), sorted(set(counts)), errors)
"""


@pytest.mark.parametrize("mode", ["outer", "each"])
def test_snapshots_while_three_threads_run_per_pivot_lu(mode):
    """Row of the reliability issue: this aborted in PoCL (pocl_lock_events_inorder)."""
    child = python_child(THREADED_SNAPSHOTS, mode, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    assert "PTHREAD ERROR" not in child.stderr
    expected = "0 [] []" if mode == "outer" else "0 [23] []"
    assert child.stdout.strip() == expected
