"""What the views show, computed from runs: positions, overlays, numbers, markers, timings."""

import numpy as np
import pytest
import scipy.linalg

import oclla
from oclla import accuracy
from oclla.trace import Run, Step

from oclla.viewer import analysis

from viewer_testdata import synthetic_recording, synthetic_run


def test_the_first_run_with_snapshots_is_shown_first():
    helper = synthetic_run(n=3, algorithm="rfp_pack")
    helper.snapshots.clear()
    for s in helper.steps:
        s.snapshot = None
    assert analysis.default_run([helper, synthetic_run()]) == 1
    assert analysis.default_run([helper]) == 0


def test_positions_and_matrices():
    run = synthetic_run(n=5)
    assert analysis.n_positions(run) == 5
    assert analysis.step_at(run, 0) is None and analysis.step_at(run, 3) is run.steps[2]
    assert np.array_equal(analysis.matrix_at(run, 0), run.initial)
    assert analysis.matrix_at(run, 3)[0, 0] == 3.0
    run.steps[2].snapshot = None            # a step without a snapshot shows the one before
    assert analysis.matrix_at(run, 3)[0, 0] == 2.0


def test_runs_of_stray_kernels_are_not_viewable():
    rec = synthetic_recording(Run("other", "", (), "", ""), synthetic_run(),
                              Run("unknown", "", (), "", ""))
    rec.runs[0].steps.append(Step("other", 0, "other", (0, 0, 0, 0)))
    assert analysis.viewable_runs(rec) == [rec.runs[1]]


def test_overlays_of_a_pivot_step():
    run = synthetic_run(n=5, swaps={1: [(1, 3)]})
    ov = analysis.overlays(run, 2)
    assert ov.active == (1, 5, 1, 5) and ov.pivot == (1, 1)
    assert ov.multipliers == (2, 5, 1, 2) and ov.swapped_rows == [1, 3]
    assert ov.storage == "lu" and ov.finished == 2
    start = analysis.overlays(run, 0)
    assert start.active is None and start.pivot is None and start.finished == 0


def test_overlays_skip_regions_of_another_operand():
    run = synthetic_run(n=4, algorithm="ad2at")
    run.steps[0].info["matrix"] = "A"
    assert analysis.overlays(run, 1).active is None
    assert analysis.overlays(run, 1).storage == "lower"


def test_upper_storage_multipliers_lie_right_of_the_pivot():
    run = synthetic_run(n=4, algorithm="cholesky")
    run.params["lower"] = False
    assert analysis.overlays(run, 1).multipliers == (0, 1, 1, 4)


def test_lower_side_is_read_from_params_or_from_what_changed():
    run = synthetic_run(n=4, algorithm="cholesky")
    run.initial = np.ones((4, 4))
    run.result = np.triu(np.full((4, 4), 2.0)) + np.tril(np.ones((4, 4)), -1)
    assert analysis.lower_side(run) is False
    run.params["lower"] = True
    assert analysis.lower_side(run) is True


def test_lu_numbers_from_a_real_run(recordings):
    rec = oclla.load_recording(recordings["lu8"])
    run = rec.runs[0]
    lu, piv = scipy.linalg.lu_factor(run.initial)
    assert np.array_equal(analysis.piv_from_swaps(run), piv)
    err = analysis.backward_error(run)
    assert err == pytest.approx(accuracy.lu_backward_error(run.initial, run.result, piv))
    assert accuracy.passes(err)
    growth = analysis.growth_by_position(run)
    assert growth[0] == 1.0 and np.all(np.diff(growth) >= 0)
    value, where = analysis.pivot_value(run, 3)
    assert where == (2, 2) and value == run.snapshots[2][2, 2]


def test_packed_run_numbers(recordings):
    run = oclla.load_recording(recordings["rfp7"]).runs[0]
    assert analysis.is_packed(run.initial) and analysis.order(run) == 7
    assert accuracy.passes(analysis.backward_error(run))
    ov = analysis.overlays(run, 3)           # outer product after pivot 0, logical coords
    assert ov.active == (1, 7, 1, 7) and ov.storage == "lower" and ov.pivot == (0, 0)
    assert ov.multipliers == (1, 7, 0, 1)
    buf, boxes = analysis.buffer_overlays(run, 3)
    assert buf.active == run.steps[2].region and len(boxes) == 2
    assert buf.pivot == run.steps[2].pivot   # where L(0, 0) is stored
    value, where = analysis.pivot_value(run, 1)
    assert where == (0, 0) and value == pytest.approx(np.sqrt(run.initial[0, 0]))


def test_backward_error_is_none_for_failed_or_unmeasured_runs():
    assert analysis.backward_error(synthetic_run(error="LinAlgError: x")) is None
    assert analysis.backward_error(synthetic_run(algorithm="ad2at")) is None
    run = synthetic_run()
    run.metrics["backward_error"] = 1.5
    assert analysis.backward_error(run) == 1.5


def test_markers_swaps_slow_kernels_and_failure():
    durations = [1000, 1000, 50_000, 1000, 1000]
    run = synthetic_run(n=6, durations=durations, swaps={0: [(0, 4)]})
    assert analysis.slow_kernels(run) == [2]
    assert sorted(analysis.markers(run)) == [(1, "swap"), (3, "slow")]
    run.error = "LinAlgError: zero pivot"
    run.snapshots[3][:] = 0.0                # the pivot of step 3 came out zero
    assert analysis.failed_position(run) == 4
    assert (4, "fail") in analysis.markers(run)


def test_step_times_and_csv_rows():
    run = synthetic_run(n=4, durations=[2000, 1000, 500])
    assert list(analysis.step_times_ns(run)) == [2000, 1000, 500]
    assert analysis.step_gflops(run)[0] == pytest.approx(40.0 / 2000)
    rows = analysis.timing_rows(synthetic_recording(run))
    assert len(rows) == 3 and len(rows[0]) == len(analysis.CSV_HEADER)
    assert rows[1][analysis.CSV_HEADER.index("queued_ns")] == 1_000_000
    assert rows[0][analysis.CSV_HEADER.index("device_us")] == "2.000"


def test_finished_columns_and_value_range():
    run = synthetic_run(n=5)
    assert list(analysis.finished_by_position(run)) == [0, 1, 2, 3, 4]
    assert analysis.value_range(run) == 4.0


def test_a_step_that_factors_the_next_block_finishes_it():
    run = Run("cholesky", "blocked", (20, 20), "float32", "")
    run.steps = [Step("cholesky", 0, "panel", (0, 8, 0, 8), (0, 0)),
                 Step("cholesky", 1, "trsm", (8, 20, 0, 8)),
                 Step("cholesky", 2, "syrk", (8, 20, 8, 20), (8, 8),
                      info=dict(leaf=(8, 16, 8, 16))),
                 Step("cholesky", 3, "trsm", (16, 20, 8, 16)),
                 Step("cholesky", 4, "syrk", (16, 20, 16, 20), (16, 16),
                      info=dict(leaf=[16, 20, 16, 20]))]      # as a loaded recording has it
    assert list(analysis.finished_by_position(run))[1:] == [8, 8, 16, 16, 20]
