"""The window driven like a user: keys, clicks, files, runs; assertions on the model."""

import os
import struct

import pytest
from PySide6 import QtCore, QtWidgets
from viewer_testdata import synthetic_recording, synthetic_run, zero_pivot_matrix

import oclla
from oclla.viewer import analysis
from oclla.viewer.runner import RunRequest
from oclla.viewer.settings import Settings
from oclla.viewer.window import MainWindow

Key = QtCore.Qt.Key


def press(qtbot, window, key, times=1, modifier=QtCore.Qt.KeyboardModifier.NoModifier):
    for _ in range(times):
        qtbot.keyClick(window, key, modifier)


def test_transport_keys_drive_the_model(qtbot, window, recordings):
    assert window.open_recording(recordings["lu8"])
    m = window.model
    assert (m.position, m.last_position) == (0, 7)
    press(qtbot, window, Key.Key_Right, 3)
    assert m.position == 3 and m.highlighted_region == (2, 8, 2, 8)
    press(qtbot, window, Key.Key_Left)
    assert m.position == 2
    press(qtbot, window, Key.Key_End)
    assert m.position == 7
    press(qtbot, window, Key.Key_Home)
    assert m.position == 0
    press(qtbot, window, Key.Key_PageDown)
    assert m.position == 7                       # +10, clamped
    press(qtbot, window, Key.Key_PageUp)
    assert m.position == 0
    speed = m.speed
    press(qtbot, window, Key.Key_Plus)
    press(qtbot, window, Key.Key_Plus)
    press(qtbot, window, Key.Key_Minus)
    assert m.speed == 2 * speed
    press(qtbot, window, Key.Key_Space)
    assert m.playing and window.timer.isActive()
    press(qtbot, window, Key.Key_Space)
    assert not m.playing and not window.timer.isActive()
    press(qtbot, window, Key.Key_R)
    assert m.playing and m.position == 0
    qtbot.waitUntil(lambda: m.position >= 2, timeout=5000)
    press(qtbot, window, Key.Key_Space)
    assert "step" in window.status.text() and "pivot" in window.status.text()


def test_view_keys(qtbot, window, recordings):
    window.open_recording(recordings["lu8"])
    press(qtbot, window, Key.Key_P)
    assert window.model.presentation and window.main_view.matrix.theme.name == "presentation"
    press(qtbot, window, Key.Key_P)
    assert not window.model.presentation
    press(qtbot, window, Key.Key_Question)
    sheet = window.shortcut_dialog
    assert sheet.isVisible()
    rows = {sheet.table.item(r, 1).text(): sheet.table.item(r, 0).text()
            for r in range(sheet.table.rowCount())}
    assert rows["Play / pause"] == "Space" and rows["Keyboard shortcuts"] == "?"
    sheet.close()
    press(qtbot, window, Key.Key_F11)
    assert window.actions["fullscreen"].isChecked()
    press(qtbot, window, Key.Key_F11)
    assert not window.actions["fullscreen"].isChecked()


def test_every_shortcut_is_a_menu_action(window):
    in_menus = {a for menu in window.menus.values() for a in menu.actions()}
    for name, action in window.actions.items():
        assert action in in_menus, name


def test_clicks_link_steps_and_kernels(qtbot, window, recordings):
    window.open_recording(recordings["lu8"])
    m = window.model
    window.resize(1200, 800)
    qtbot.wait(50)
    # click a kernel in the timeline: the matrix jumps to its step
    target = next(i for i, k in enumerate(m.run.kernels) if k.step == 4)
    point = window.timeline.kernel_point(target)
    qtbot.mouseClick(window.timeline.kernels_plot.viewport(), QtCore.Qt.MouseButton.LeftButton,
                     pos=point)
    assert m.selected_kernel == target and m.position == m.run.kernels[target].step + 1
    assert window.details.table.selectedItems()
    # click a step: its kernels light up (they are the current step's kernels)
    window.details._row_clicked(0, 0)
    assert m.selected_kernel == m.step_kernels[0]
    m.select_step(1)
    step1 = [i for i, k in enumerate(m.run.kernels) if k.step == 1]
    assert m.position == 2 and m.step_kernels == step1 and m.selected_kernel is None
    # click the scrub bar at its right end
    scrub = window.transport.scrub
    qtbot.mouseClick(scrub, QtCore.Qt.MouseButton.LeftButton,
                     pos=QtCore.QPoint(scrub.width() - 8, scrub.height() // 2))
    assert m.position == m.last_position


def _corrupt(path, tmp_path, how):
    data = open(path, "rb").read()
    bad = tmp_path / f"{how}.oclrec"
    if how == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        bad.write_bytes(b"PK\x03\x04" + os.urandom(200))
    else:       # a newer format version
        rec = oclla.load_recording(path)
        import oclla.trace as trace
        old = trace.FORMAT_VERSION
        trace.FORMAT_VERSION = old + 1
        try:
            rec.save(bad)
        finally:
            trace.FORMAT_VERSION = old
    return bad


@pytest.mark.parametrize("how, message", [
    ("truncated", "is not an oclla recording or is damaged"),
    ("garbage", "is not an oclla recording or is damaged"),
    ("newer", "newer than this oclla reads"),
])
def test_bad_recordings_leave_the_open_one_in_place(window, recordings, tmp_path, how,
                                                     message):
    window.open_recording(recordings["lu8"])
    window.model.go_to(4)
    before = window.model.recording
    assert not window.open_recording(_corrupt(recordings["lu8"], tmp_path, how))
    assert message in window.message.text()
    assert window.model.recording is before and window.model.position == 4


def test_replay_needs_no_device(qtbot, settings, recordings, no_device):
    w = MainWindow(settings, device_lister=oclla.devices)
    qtbot.addWidget(w)
    w.show()
    assert w.open_recording(recordings["lu8_blocked"])
    w.model.last()
    w.model.set_compare(oclla.load_recording(recordings["lu8"]).runs[0])
    assert "backward error" in w.status.text()

    def close_dialog():       # the run dialog lists devices: it must say it cannot
        dialogs = [d for d in QtWidgets.QApplication.topLevelWidgets()
                   if isinstance(d, QtWidgets.QDialog) and d.isVisible()]
        assert dialogs and "cannot list OpenCL devices" in dialogs[0].device_note.text()
        dialogs[0].reject()
    QtCore.QTimer.singleShot(0, close_dialog)
    w.do_new_run()


def test_a_run_in_the_worker_thread(qtbot, window):
    window.start_run(RunRequest("lu", "pivot", n=12, seed=1))
    assert window.progress.isVisible() and not window.actions["new_run"].isEnabled()
    with qtbot.waitSignal(window.thread.finished, timeout=60_000):
        pass
    qtbot.waitUntil(lambda: window.thread is None)
    m = window.model
    assert m.run.variant == "inplace" and m.last_position == 11
    assert not window.progress.isVisible() and window.actions["new_run"].isEnabled()
    assert "random seed 1" in window.status.text()


def test_a_first_use_says_in_the_status_bar_what_it_builds(qtbot, window, tmp_path,
                                                            monkeypatch):
    """On a device oclla has not checked yet, a run's kernel families say in the status
    bar, while the run goes, that they are built and checked (seconds on a CPU runtime,
    with the progress bar still at 0); the message goes when the run ends (an error the
    run ends with stays); with the verdicts remembered a run says nothing of it."""
    from oclla import _params
    monkeypatch.setenv("OCLLA_CHECKED_FILE", str(tmp_path / "checked.json"))
    monkeypatch.setenv("OCLLA_TUNED", "0")
    _params.reload()
    shown = []
    real = window._notice
    monkeypatch.setattr(window, "_notice", lambda text: (real(text), shown.append(
        window.statusBar().currentMessage())))
    try:
        for fresh in (True, False):
            shown.clear()
            window.start_run(RunRequest("lu", "pivot", n=6, seed=2))
            with qtbot.waitSignal(window.thread.finished, timeout=120_000):
                pass
            qtbot.waitUntil(lambda: window.thread is None)
            assert bool(shown) == fresh
            assert all(m.startswith("Building and checking the ") and m.endswith(" ...")
                       for m in shown)
            assert not window.statusBar().currentMessage().startswith("Building")
            _params.reload()                          # a later process: verdicts kept
    finally:
        monkeypatch.delenv("OCLLA_CHECKED_FILE")
        monkeypatch.delenv("OCLLA_TUNED")
        _params.reload()
    window._notice("building and checking the lu kernels (float32) on a device: their "
                   "first use with this device and driver")
    window.show_message("the run failed")
    window._thread_done()
    assert window.statusBar().currentMessage() == "the run failed"


def test_cancel_keeps_the_previous_recording(qtbot, window, recordings):
    window.open_recording(recordings["lu8"])
    before = window.model.recording
    window.start_run(RunRequest("lu", "pivot", n=300))
    qtbot.keyClick(window, Key.Key_Escape)       # Cancel run: stops at the next step
    qtbot.waitUntil(lambda: window.thread is None, timeout=60_000)
    assert window.model.recording is before
    assert "cancelled" in window.message.text()


def test_a_device_failing_mid_run_keeps_the_previous_recording(qtbot, window, recordings,
                                                               monkeypatch):
    from oclla.viewer import registry

    def fail_midway(a, variant, options, queue):
        oclla.lu_factor(a[:3, :3], method="pivot", queue=queue)     # some steps recorded
        raise oclla.DeviceError("device lost (CL_OUT_OF_RESOURCES)")
    lu = registry.algorithm("lu")
    broken = registry.Algorithm("lu", lu.label, lu.variants, fail_midway, lu.needs)
    monkeypatch.setattr(registry, "ALGORITHMS", (broken,))
    window.open_recording(recordings["lu8"])
    before = window.model.recording
    window.start_run(RunRequest("lu", "pivot", n=6))
    qtbot.waitUntil(lambda: window.thread is None, timeout=60_000)
    assert window.model.recording is before
    assert "device problem: device lost" in window.message.text()
    assert "previous recording is still open" in window.message.text()


def test_a_mathematical_failure_shows_the_failing_step(qtbot, window):
    req = RunRequest("lu", "pivot", pivoting="none", family="typed", matrix=zero_pivot_matrix(),
                     n=5)
    window.start_run(req)
    qtbot.waitUntil(lambda: window.thread is None, timeout=60_000)
    assert window.model.position == 3 and window.model.run.error
    assert "zero pivot in column 2" in window.message.text()
    assert (3, "fail") in window.transport.scrub.markers


def test_settings_persist_across_windows(qtbot, tmp_path, recordings):
    ini = str(tmp_path / "persist.ini")

    def make():
        w = MainWindow(Settings(QtCore.QSettings(ini, QtCore.QSettings.Format.IniFormat)),
                       device_lister=lambda: [])
        qtbot.addWidget(w)
        w.show()
        qtbot.waitExposed(w)
        return w
    w = make()
    w.set_theme("dark")
    w.set_colormap("CET-D3")
    w.do_font_bigger()
    w.open_recording(recordings["lu8"])
    w.settings.remember_request(RunRequest("lu", "blocked", n=33, device="1", seed=9))
    w.resize(700, 500)   # fits the offscreen 800x600 screen
    qtbot.waitUntil(lambda: w.size() == QtCore.QSize(700, 500))
    w.close()
    w2 = make()
    s = w2.settings
    assert (s.theme, s.colormap) == ("dark", "CET-D3") and s.font_scale == pytest.approx(1.15)
    assert s.recent == [os.path.abspath(recordings["lu8"])]
    req = s.last_request()
    assert (req.variant, req.n, req.device, req.seed) == ("blocked", 33, "1", 9)
    assert w2.main_view.matrix.theme.name == "dark"
    assert w2.size() == QtCore.QSize(700, 500)


def test_damaged_settings_fall_back_to_defaults(tmp_path):
    ini = tmp_path / "bad.ini"
    ini.write_text("[view]\nfont_scale=lots\ntheme=purple\ncolormap=nope\n[run]\nn=x\n")
    s = Settings(QtCore.QSettings(str(ini), QtCore.QSettings.Format.IniFormat))
    assert (s.font_scale, s.theme, s.colormap) == (1.0, "system", "CET-D1A")
    assert s.last_request().n == 16


def test_several_runs_and_comparison(qtbot, window):
    rec = synthetic_recording(synthetic_run(n=6), synthetic_run(n=4, variant="second"))
    window.model.set_recording(rec)
    assert window.run_choice.isVisibleTo(window) and window.run_choice.count() == 2
    window.do_compare_other()
    assert window.compare_view.isVisibleTo(window)
    window.model.go_to(5)
    assert window.model.compare_position == 3
    window.run_choice.setCurrentIndex(1)
    assert window.model.run.variant == "second"
    window.do_compare_stop()
    assert not window.compare_view.isVisibleTo(window)


def test_packed_view_lights_twins(window, recordings):
    window.open_recording(recordings["rfp7"])
    view = window.main_view
    window.model.go_to(3)
    assert view.is_packed and view.buffer.isVisibleTo(window)
    summary = window.details.summary.text()
    assert "of the RFP buffer" in summary and "in the matrix: rows 1:7, cols 1:7" in summary
    assert "at (0, 0) (stored at" in summary
    view.hover_twin("full", (5, 3))          # A[5, 3] of order 7 (odd, lower): RFP[5, 3]
    assert view.buffer.twin.isVisible()
    assert view.buffer.twin.rect() == QtCore.QRectF(3, 5, 1, 1)
    assert "holds A[5, 3]" in view.formula.text()
    view.hover_twin("rfp", (0, 1))           # r < c: A[n2+c-1, n2+r], n2 = 4: A[4, 4]
    assert view.matrix.twin.rect() == QtCore.QRectF(4, 4, 1, 1)
    assert "holds A[4, 4]" in view.formula.text()


def test_exports_from_the_window(window, recordings, tmp_path):
    window.open_recording(recordings["lu8"])
    window.model.go_to(2)
    window.export_image(tmp_path / "v.svg", "matrix")
    assert (tmp_path / "v.svg").read_text()[:300].find("<svg") >= 0
    frames = window.export_animation(tmp_path / "a.gif", 1, 4, "matrix")
    assert frames == 4 and window.model.position == 2
    from oclla.viewer import export
    assert export.save_csv(window.model.recording, tmp_path / "t.csv") == \
        len(window.model.run.kernels)
    header = (tmp_path / "t.csv").read_text().splitlines()[0]
    assert header.split(",") == list(analysis.CSV_HEADER)
    with pytest.raises(export.ExportError, match="use .png or .svg"):
        window.export_image(tmp_path / "v.bmp")
    assert struct.unpack("<4s", (tmp_path / "a.gif").read_bytes()[:4])[0] == b"GIF8"
