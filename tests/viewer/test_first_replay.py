"""``oclla demo``'s recording is a good first replay: it opens on a small LU with snapshots."""

from oclla.viewer import analysis


def test_the_demo_recording_opens_on_a_small_lu_to_watch(tmp_path, window):
    from oclla.cli import FIRST_REPLAY_N, main
    path = tmp_path / "demo.oclrec"
    assert main(["demo", "--n", "80", "--out", str(path)]) == 0
    assert window.open_recording(path)
    run = window.model.run
    assert run.shape == (FIRST_REPLAY_N, FIRST_REPLAY_N) and run.variant == "inplace"
    assert len(run.snapshots) == len(run.steps) == FIRST_REPLAY_N - 1
    assert window.main_view.matrix.array is not None          # values, not a grey square
    timed = [r for r in window.model.runs if r.shape == (80, 80)]
    assert len(timed) == 5 and all(not r.snapshots for r in timed)
    assert analysis.backward_error(run) < 30
