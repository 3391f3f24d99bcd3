"""The viewer's state without Qt: transport, selection, playback, comparison."""

import pytest
from viewer_testdata import synthetic_recording, synthetic_run

from oclla.viewer.model import SPEEDS, ViewerModel


@pytest.fixture
def model():
    m = ViewerModel()
    m.set_recording(synthetic_recording(synthetic_run(n=6)))
    return m


def test_transport_moves_and_clamps(model):
    assert (model.position, model.last_position, model.step) == (0, 5, None)
    model.step_by(1)
    assert model.position == 1 and model.step.index == 0
    model.step_by(10)
    assert model.position == 5
    model.step_by(-2)
    assert model.position == 3
    model.first()
    assert model.position == 0
    model.step_by(-1)
    assert model.position == 0
    model.last()
    assert model.position == 5 and model.highlighted_region == (4, 6, 4, 6)


def test_listeners_hear_what_changed(model):
    heard = []
    model.subscribe(heard.append)
    model.go_to(2)
    model.go_to(2)                      # no change, no notice
    model.faster()
    assert heard == [{"position", "compare"}, {"playback"}]


def test_playback_runs_to_the_end_and_stops(model):
    model.play()
    assert model.playing
    for _ in range(10):
        model.tick()
    assert model.position == 5 and not model.playing
    model.play()                        # from the end: starts over
    assert model.position == 0 and model.playing
    model.tick()
    model.restart()
    assert model.position == 0 and model.playing
    model.toggle_play()
    assert not model.playing


def test_speed_steps_through_the_table_and_saturates(model):
    model.set_speed_index(0)
    model.slower()
    assert model.speed == SPEEDS[0] and model.interval_ms == 2000
    for _ in range(20):
        model.faster()
    assert model.speed == SPEEDS[-1]


def test_selecting_a_kernel_jumps_to_its_step(model):
    model.select_kernel(3)
    assert model.position == 4 and model.selected_kernel == 3
    assert model.step_kernels == [3] and model.highlighted_region == (3, 6, 3, 6)
    model.step_by(-1)                   # moving on clears the selection
    assert model.selected_kernel is None and model.step_kernels == [2]
    with pytest.raises(IndexError, match="kernel 9 out of range"):
        model.select_kernel(9)
    model.select_step(0)
    assert model.position == 1


def test_comparison_syncs_by_step_or_by_finished_columns(model):
    assert model.sync == "column"
    model.set_sync("step")
    short = synthetic_run(n=4)
    model.set_compare(short)
    model.go_to(5)
    assert model.compare_position == 3          # clamped to the shorter run
    blocked = synthetic_run(n=6, variant="blocked")
    for s in blocked.steps:                     # every step finishes two columns
        s.phase = "panel"
        s.region = (s.index * 2, 6, s.index * 2, min(s.index * 2 + 2, 6))
    model.set_compare(blocked)
    model.set_sync("column")
    model.go_to(3)                              # 3 columns done: blocked needs 2 steps
    assert model.compare_position == 2
    model.go_to(1)
    assert model.compare_position == 1
    no_pivots = synthetic_run(n=6)
    for s in no_pivots.steps:
        s.pivot = None
    model.set_compare(no_pivots)                # nothing finishes: follows the step number
    model.go_to(4)
    assert model.compare_position == 4
    with pytest.raises(ValueError, match="sync must be one of"):
        model.set_sync("time")
    model.set_compare(None)
    assert model.compare_run is None


def test_a_recording_with_nothing_to_show_leaves_the_state_alone(model):
    model.go_to(3)
    empty = synthetic_recording()
    empty.runs[0].steps.clear()
    with pytest.raises(ValueError, match="no algorithm steps"):
        model.set_recording(empty)
    assert model.position == 3 and model.run.steps


def test_several_runs(model):
    rec = synthetic_recording(synthetic_run(n=6), synthetic_run(n=3, variant="second"))
    model.set_recording(rec, position=4)
    assert model.position == 4
    model.set_run(1)
    assert model.run.variant == "second" and model.position == 2
    with pytest.raises(IndexError):
        model.set_run(2)
