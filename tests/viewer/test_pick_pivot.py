"""Picking the pivots: rules, clicks, undo, the growth factor, and the window's mode."""

import numpy as np
import oclla
import pytest
from lecture_helpers import record

from oclla import accuracy
from oclla.viewer import analysis, first_runs, matrices
from oclla.viewer.pick_pivot import PickError, PivotGame, play

A = first_runs.TINY_PIVOT


def test_partial_pivoting_by_hand_is_oclla_s_partial_pivoting():
    result = play(A, "partial")
    run = analysis.viewable_runs(record(lambda: oclla.lu_factor(A, method="pivot")))[0]
    assert result.growth == pytest.approx(analysis.growth_by_position(run)[-1], rel=1e-12)
    np.testing.assert_allclose(result.states[-1], analysis.final_array(run), rtol=1e-12,
                               atol=1e-15)
    assert result.cols == list(range(5))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_rules_order_the_growth(dtype):
    a = A.astype(dtype)
    growth = {rule: play(a, rule).growth for rule in ("partial", "complete")}
    assert growth["complete"] <= growth["partial"] < 10
    if dtype == "float64":
        assert play(a, "diagonal").growth > 1e7
    else:     # 1e8 times the first row swamps the rest: an exact zero pivot at (2, 2)
        with pytest.raises(PickError, match=r"a\[2, 2\] is zero"):
            play(a, "diagonal")


def test_the_states_are_an_elimination_of_the_reordered_matrix():
    result = play(A, "complete")
    paq = A[np.ix_(result.rows, result.cols)]
    np.testing.assert_array_equal(result.states[0], paq)
    lu = result.states[-1]
    low, up = np.tril(lu, -1) + np.eye(5), np.triu(lu)
    assert accuracy.plu_backward_error(paq, np.eye(5), low, up) < accuracy.THRESHOLD
    assert len(result.states) == len(result.growth_by_step) == 5
    assert result.growth_by_step == sorted(result.growth_by_step)     # a running maximum


def test_clicks_pick_any_nonzero_entry_and_undo_takes_them_back():
    game = PivotGame(A)
    assert game.k == 0 and game.growth == 1.0
    game.pick(3, 3)                                   # a_33 = 3, the largest entry
    assert game.k == 1 and game.rows[0] == 3 and game.cols[0] == 3
    first = game.matrix.copy()
    game.pick(2, 1)
    assert game.k == 2
    game.undo()
    np.testing.assert_array_equal(game.matrix, first)
    with pytest.raises(PickError, match="rows and columns 1"):
        game.pick(0, 2)                               # already eliminated
    zero = np.array([[0.0, 1.0], [1.0, 1.0]])
    with pytest.raises(PickError, match="zero"):
        PivotGame(zero).pick(0, 0)
    assert play(zero, [(1, 0)]).growth == pytest.approx(1.0)


@pytest.mark.parametrize("bad, message", [
    (np.ones((2, 3)), "square"), (np.array([[np.nan]]), "Inf or NaN")])
def test_bad_matrices_are_refused(bad, message):
    with pytest.raises(PickError, match=message):
        PivotGame(bad)


def test_unknown_rules_are_refused():
    with pytest.raises(PickError, match="rule must be"):
        PivotGame(A, "largest")
    with pytest.raises(PickError, match="click a pivot"):
        PivotGame(A).suggestion()


def test_the_window_picks_by_click_and_by_rule(window, qtbot):
    window.start_picking(A)
    assert window.pick_bar.isVisible() and window.model.position == 0
    assert "growth factor 1</b>" in window.pick_bar.text.text()
    window.main_view.matrix.clicked.emit(0, 0)        # 1e-8: a terrible but legal pivot
    assert window.game.k == 1 and window.model.position == 1
    assert window.model.run.params["rows"][0] == 0
    assert window.game.growth > 1e7
    assert f"growth factor {window.game.growth:.3g}</b>" in window.pick_bar.text.text()
    window.undo_pick()
    assert window.game.k == 0
    window.pick_by_rule("complete")
    assert window.game.rows[0] == 3 and window.game.cols[0] == 3
    for _ in range(4):
        window.pick_by_rule("partial")
    assert window.game.done and "every pivot picked" in window.pick_bar.text.text()
    assert not window.pick_bar.buttons["partial"].isEnabled()
    window.main_view.matrix.clicked.emit(4, 4)        # nothing left to pick: a message
    assert "already picked" in window.message.text()
    window.stop_picking()
    assert window.game is None and not window.pick_bar.isVisible()


def test_opening_another_recording_ends_the_game(window, recordings):
    window.start_picking(matrices.random(4, seed=1))
    window.open_recording(recordings["lu8"])
    assert window.game is None and not window.pick_bar.isVisible()


def test_the_command_line_renders_a_rule_s_elimination(tmp_path, capsys):
    from oclla.viewer.app import main
    out = tmp_path / "pick.png"
    assert main(["--pick", "complete", "--family", "random", "--n", "5", "--seed", "2",
                 "--step", "2", "--export", str(out)]) == 0
    assert out.stat().st_size > 0
    with pytest.raises(SystemExit) as exit_:
        main(["--pick", "partial", "--replay", str(out), "--export", str(tmp_path / "x.png")])
    assert exit_.value.code == 2
    assert "--pick eliminates a matrix" in capsys.readouterr().err
