"""Viewer tests: headless Qt, isolated settings, recordings made once per session.

``QT_QPA_PLATFORM=offscreen`` is set here, before any test creates the
QApplication.  Every viewer test fails on a Qt warning (pytest-qt's
``qt_log_level_fail``), except the offscreen platform's notice that it
cannot propagate size hints.
"""

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import oclla  # noqa: E402

QT_NOISE = "This plugin does not support"      # offscreen platform limitations


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            item.add_marker(pytest.mark.qt_log_ignore(QT_NOISE))


@pytest.fixture(autouse=True)
def isolated_qsettings(tmp_path_factory):
    """Any QSettings the code makes on its own lands in a temporary folder."""
    from PySide6 import QtCore
    folder = str(tmp_path_factory.mktemp("qsettings"))
    for fmt in (QtCore.QSettings.Format.NativeFormat, QtCore.QSettings.Format.IniFormat):
        QtCore.QSettings.setPath(fmt, QtCore.QSettings.Scope.UserScope, folder)
    yield folder


@pytest.fixture
def settings(tmp_path):
    from PySide6 import QtCore

    from oclla.viewer.settings import Settings
    return Settings(QtCore.QSettings(str(tmp_path / "viewer.ini"),
                                     QtCore.QSettings.Format.IniFormat))


@pytest.fixture
def window(qtbot, settings):
    """A shown main window (no device is listed: the run dialog gets an empty list)."""
    from oclla.viewer.window import MainWindow
    w = MainWindow(settings, device_lister=lambda: [])
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    w.activateWindow()
    return w


# ---- recordings ---------------------------------------------------------------------------

def record(fn):
    with oclla.record(snapshots=True) as rec:
        fn()
    return rec


@pytest.fixture(scope="session")
def recordings(tmp_path_factory):
    """Real recordings from the device, saved once: name -> path."""
    from oclla.viewer import matrices
    out = tmp_path_factory.mktemp("recordings")
    a8 = matrices.random(8, seed=3)
    spd7 = matrices.spd(7, seed=2)
    made = {
        "lu8": record(lambda: oclla.lu_factor(a8, method="pivot")),
        "lu8_faithful": record(lambda: oclla.lu_factor(a8, method="pivot",
                                                       variant="faithful")),
        "lu8_blocked": record(lambda: oclla.lu_factor(a8, method="blocked", block=3)),
        "rfp7": _rfp_cholesky(spd7),
    }
    paths = {}
    for name, rec in made.items():
        paths[name] = out / f"{name}.oclrec"
        rec.save(paths[name])
    return paths


def _rfp_cholesky(a):
    from oclla import rfp
    arf = np.asarray(rfp.pack(a, lower=True))
    return record(lambda: rfp.cholesky(arf, a.shape[0], lower=True, method="pivot"))


@pytest.fixture
def no_device(monkeypatch):
    """Make every way to an OpenCL device fail, as on a laptop without one."""
    import pyopencl as cl

    def refuse(*args, **kwargs):
        raise AssertionError("the viewer touched an OpenCL device")

    monkeypatch.setattr(cl, "get_platforms", refuse)
    monkeypatch.setattr(cl, "Context", refuse)
    monkeypatch.setattr(cl, "CommandQueue", refuse)
    monkeypatch.setattr(oclla, "get_queue", refuse)
    monkeypatch.setattr(oclla, "devices", refuse)
    from oclla import _device
    monkeypatch.setattr(_device, "get_queue", refuse)
    monkeypatch.setattr(_device, "devices", refuse)
