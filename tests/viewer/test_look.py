"""Legends, markers, axes, the welcome page, GIF colours: what the lecture hall reads."""

import numpy as np
import pytest
from lecture_helpers import close
from PIL import Image
from PySide6 import QtGui
from viewer_testdata import synthetic_run

from oclla.viewer import export, first_runs
from oclla.viewer import theme as themes
from oclla.viewer.details import legend_html
from oclla.viewer.timeline import TimelineView, integer_tick, time_unit


def test_the_legend_follows_the_algorithm_and_the_theme():
    lu, chol = synthetic_run(n=4, swaps={1: [(1, 3)]}), synthetic_run(n=4, algorithm="cholesky")
    assert "black staircase" in legend_html(lu, themes.LIGHT)
    assert "white staircase" in legend_html(lu, themes.DARK)
    assert "swapped rows" in legend_html(lu, themes.LIGHT)
    text = legend_html(chol, themes.LIGHT)
    assert "staircase" not in text and "never read" in text and "swapped rows" not in text


def test_marker_and_outline_colours_are_far_apart():
    colours = {**{f"o_{k}": v for k, v in themes.OVERLAYS.items()},
               **{f"m_{k}": v for k, v in themes.MARKERS.items() if k != "swap"}}
    rgb = {k: np.array(QtGui.QColor(v).getRgb()[:3]) for k, v in colours.items()}
    names = sorted(rgb)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert np.abs(rgb[a] - rgb[b]).sum() > 120, (a, b)


@pytest.mark.parametrize("largest, unit", [(400.0, "ns"), (6e3, "µs"), (2e7, "ms")])
def test_step_times_are_in_a_named_unit(largest, unit):
    assert time_unit(largest)[0] == unit


def test_step_ticks_are_whole_steps():
    for count in (1, 4, 9, 10, 11, 37, 100, 511, 4096):
        every = integer_tick(count)
        assert every >= 1 and isinstance(every, int) and count / every <= 10


def test_the_step_time_axis_label_is_whole_and_in_its_unit(qtbot):
    view = TimelineView()
    qtbot.addWidget(view)
    view.resize(900, 260)
    view.show()
    qtbot.waitExposed(view)
    run = synthetic_run(n=8, durations=[200, 300, 400, 500, 600, 300, 250])
    view.set_runs(run)
    qtbot.wait(50)
    axis = view.steps_plot.getAxis("left")
    assert axis.labelText == "ns" and axis.labelUnitPrefix == "" and not axis.autoSIPrefix
    m = axis.label.document().documentMargin()     # the text, without its blank margin
    label = axis.label.mapRectToScene(axis.label.boundingRect().adjusted(m, m, -m, -m))
    scene = view.steps_plot.mapToScene(view.steps_plot.viewport().rect()).boundingRect()
    assert scene.contains(label)                               # not clipped
    values = view.steps_plot.getAxis("bottom").tickValues(0, 8, 800)
    assert all(float(v).is_integer() for _spacing, vs in values for v in vs)


def test_the_scrub_bar_has_a_legend_of_its_marks(window, recordings):
    window.open_recording(recordings["lu8"])
    text = window.transport.legend.text()
    kinds = {k for _p, k in window.transport.scrub.markers}
    for kind, label in (("swap", "row swap"), ("slow", "slow kernel"), ("fail", "failed pivot")):
        assert (label in text) == (kind in kinds)


def test_the_welcome_page_offers_three_first_runs(window):
    assert window.model.run is None
    assert window.pages.currentWidget() is window.welcome
    assert len(first_runs.FIRST_RUNS) == 3 == len(window.welcome.buttons) - 1
    assert window.welcome.isVisible()


def test_a_first_run_starts_from_the_welcome_page(window, qtbot):
    window.welcome.buttons[2].click()                # the Cholesky that fails
    window.wait_for_run()
    assert window.pages.currentWidget() is window.views
    assert window.model.run.algorithm == "cholesky"
    assert window.model.position == window.model.last_position == 7


def test_the_pivoting_first_run_compares_partial_with_none(window):
    window.start_first_run(0)
    window.wait_for_run()
    assert window.model.run.params["pivoting"] == "partial"
    assert window.model.compare_run.params["pivoting"] == "none"
    np.testing.assert_array_equal(window.model.compare_run.initial, first_runs.TINY_PIVOT)


def test_the_not_spd_example_fails_at_order_3():
    minors = [np.linalg.det(first_runs.NOT_SPD[:k, :k]) for k in (1, 2, 3)]
    assert minors[0] > 0 and minors[1] > 0 and minors[2] < 0
    assert np.allclose(first_runs.NOT_SPD, first_runs.NOT_SPD.T)


def test_comparing_with_nothing_loaded_says_so(window):
    window.do_compare_other()
    assert "Nothing to compare yet" in window.message.text()


def test_titles_and_panels_use_human_names(window, recordings):
    window.open_recording(recordings["rfp7"])
    window.model.go_to(3)
    title = window.main_view.matrix.plot.titleLabel.text
    assert "rfp_cholesky" not in title and "Cholesky, packed (RFP) storage, per pivot" in title
    assert "outer_product" not in window.details.summary.text()
    names = [window.details.table.item(r, 0).text() for r in range(window.details.table.rowCount())]
    for row, name in enumerate(names):
        fm = window.details.table.fontMetrics()
        assert window.details.table.columnWidth(0) >= fm.horizontalAdvance(name)


def test_a_gif_keeps_the_outline_colours_and_rests_on_its_last_frame(tmp_path):
    frames = []
    for shade in range(4):
        img = np.full((40, 60, 3), 200 - 30 * shade, dtype=np.uint8)
        img[5:10, :] = QtGui.QColor(themes.OVERLAYS["kernel"]).getRgb()[:3]
        img[20:25, :] = QtGui.QColor(themes.OVERLAYS["pivot"]).getRgb()[:3]
        img[30:35, :] = (np.arange(60)[:, None] * [4, 2, 1]) % 255      # many colours
        frames.append(img)
    images = iter(frames)

    def render(_position):
        f = next(images)
        return QtGui.QImage(f.tobytes(), 60, 40, 180, QtGui.QImage.Format.Format_RGB888).copy()

    path = tmp_path / "a.gif"
    assert export.save_animation(render, range(4), path, fps=4,
                                 keep_colors=themes.KEEP_COLORS) == 4
    with Image.open(path) as gif:
        durations = []
        for i in range(gif.n_frames):
            gif.seek(i)
            durations.append(gif.info["duration"])
            rgb = np.asarray(gif.convert("RGB"))
            assert close(rgb[7:8], themes.OVERLAYS["kernel"], 0).all()
            assert close(rgb[22:23], themes.OVERLAYS["pivot"], 0).all()
    assert durations[:3] == [250, 250, 250] and durations[3] >= 1000 * export.LAST_FRAME_HOLD


def test_bigger_fonts_scroll_the_step_panel_instead_of_clipping_it(window, recordings,
                                                                   qtbot):
    window.open_recording(recordings["lu8"])
    window.model.go_to(3)
    for _ in range(6):
        window.do_font_bigger()
    scroll = window.details_dock.widget()
    assert scroll.widget() is window.details and scroll.widgetResizable()
    summary = window.details.summary
    legend = window.details.legend
    for label in (summary, legend):        # every wrapped line shown (the panel scrolls)
        qtbot.waitUntil(lambda lab=label: lab.height() >= lab.heightForWidth(lab.width()))


def test_variant_names_are_shown_in_full(qtbot):
    from oclla.viewer.run_dialog import RunDialog
    from oclla.viewer.runner import RunRequest
    dialog = RunDialog(None, RunRequest(algorithm="cholesky"), lambda: [])
    qtbot.addWidget(dialog)
    dialog.show()
    fm = dialog.variant.fontMetrics()
    widest = max(fm.horizontalAdvance(dialog.variant.itemText(i))
                 for i in range(dialog.variant.count()))
    assert dialog.variant.width() >= widest
