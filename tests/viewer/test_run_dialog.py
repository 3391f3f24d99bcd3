"""The Run dialog: algorithms from the registry, devices, matrix families, bad input."""

import sys

import numpy as np
import pytest
from PySide6 import QtCore, QtGui, QtWidgets

from oclla import DeviceInfo
from oclla.viewer import registry
from oclla.viewer.run_dialog import RunDialog, snapshots_fit
from oclla.viewer.runner import RunRequest


def fake_device(index, name, fp64=True):
    return DeviceInfo(index, name, "vendor", "platform", "1.0", "OpenCL C 1.2", "CPU", fp64,
                      2, 256, (256, 256, 256), 65536, 1 << 30, 1 << 28, 1000, 4, 2)


@pytest.fixture
def dialog(qtbot):
    d = RunDialog(None, RunRequest(), device_lister=lambda: [fake_device(0, "cpu-a"),
                                                               fake_device(1, "gpu-b", False)])
    qtbot.addWidget(d)
    return d


def test_devices_are_listed_and_remembered(qtbot):
    lister = lambda: [fake_device(0, "cpu-a"), fake_device(1, "gpu-b", False)]   # noqa: E731
    d = RunDialog(None, RunRequest(device="1"), device_lister=lister)
    qtbot.addWidget(d)
    texts = [d.device.itemText(i) for i in range(d.device.count())]
    assert texts[1].startswith("[0] cpu-a") and "fp64 no" in texts[2]
    assert d.request().device == "1"


def test_a_device_list_that_fails_is_shown_not_raised(qtbot):
    def broken():
        raise RuntimeError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")
    d = RunDialog(None, RunRequest(), device_lister=broken)
    qtbot.addWidget(d)
    assert "cannot list OpenCL devices: clGetPlatformIDs failed" in d.device_note.text()
    assert d.request().device is None


def test_algorithms_come_from_the_registry_and_missing_ones_are_disabled(qtbot, monkeypatch):
    ghost = registry.Algorithm("ghost", "Ghost factorization", (registry.Variant("x", "x"),),
                               lambda *a: None, needs=("oclla.ghost:factor",))
    monkeypatch.setattr(registry, "ALGORITHMS", registry.ALGORITHMS + (ghost,))
    d = RunDialog(None, RunRequest(algorithm="ghost"), device_lister=lambda: [])
    qtbot.addWidget(d)
    assert d.algorithm.count() == len(registry.ALGORITHMS)
    item = d.algorithm.model().item(d.algorithm.count() - 1)
    assert not item.isEnabled() and "oclla.ghost.factor is not available" in item.toolTip()
    assert d.algorithm.currentData() == "lu"      # a disabled choice is not preselected


def test_variants_pivoting_and_block_follow_the_algorithm(dialog):
    dialog.algorithm.setCurrentIndex(dialog.algorithm.findData("lu"))
    keys = [dialog.variant.itemData(i) for i in range(dialog.variant.count())]
    assert keys == ["pivot", "crout", "window", "faithful", "blocked"]
    for index in (1, 2):
        dialog.variant.setCurrentIndex(index)
        assert dialog.pivoting.isEnabled() and not dialog.block.isEnabled()
    dialog.variant.setCurrentIndex(3)
    assert not dialog.pivoting.isEnabled() and dialog.pivoting.currentText() == "none"
    assert not dialog.block.isEnabled()
    dialog.variant.setCurrentIndex(4)
    assert dialog.pivoting.isEnabled() and dialog.block.isEnabled()
    chol = dialog.algorithm.findData("cholesky")
    if dialog.algorithm.model().item(chol).isEnabled():
        dialog.algorithm.setCurrentIndex(chol)
        assert dialog.family.currentData() == "spd"


def test_families_show_their_own_fields(dialog):
    dialog.family.setCurrentIndex(dialog.family.findData("cond"))
    assert dialog._form.isRowVisible(dialog.kappa) and not dialog._form.isRowVisible(dialog.typed)
    dialog.family.setCurrentIndex(dialog.family.findData("sycl4"))
    assert dialog.n.value() == 4 and not dialog.n.isEnabled()
    dialog.family.setCurrentIndex(dialog.family.findData("typed"))
    assert dialog._form.isRowVisible(dialog.typed)
    dialog.typed.setPlainText("4 1 0; 1 4 1; 0 1 4")
    req = dialog.request()
    assert req.family == "typed" and req.n == 3 and np.array_equal(np.diag(req.matrix), [4] * 3)


def test_bad_typed_values_keep_the_dialog_open(qtbot, dialog):
    dialog.family.setCurrentIndex(dialog.family.findData("typed"))
    dialog.typed.setPlainText("1 2; 3")
    dialog.show()
    dialog.accept()
    assert dialog.isVisible() and "different lengths" in dialog.error.text()
    assert dialog.result() != QtWidgets.QDialog.DialogCode.Accepted


def test_matrix_files(dialog, tmp_path):
    np.save(tmp_path / "a.npy", np.eye(5))
    assert dialog.load_file(tmp_path / "a.npy")
    dialog.family.setCurrentIndex(dialog.family.findData("file"))
    req = dialog.request()
    assert req.n == 5 and req.source_name == "a.npy"
    np.save(tmp_path / "big.npy", np.zeros((600, 600)))
    assert not dialog.load_file(tmp_path / "big.npy")
    assert "too large for a step view" in dialog.error.text()


def test_large_orders_are_timing_only(dialog):
    dialog.n.setValue(600)
    assert not dialog.snapshots.isEnabled() and not dialog.snapshots.isChecked()
    dialog.n.setValue(64)
    assert dialog.snapshots.isChecked()
    assert snapshots_fit(512) and not snapshots_fit(513)


def test_pyside_keeps_none_alive():
    """PySide6 6.12.0 under CPython < 3.12 drops a reference to None on every void call,
    which crashes a long session; pyproject excludes it.  Fail here, clearly, if present."""
    path = QtGui.QPainterPath()
    before = sys.getrefcount(None)
    for _ in range(1000):
        path.lineTo(1.0, 1.0)
    assert sys.getrefcount(None) >= before - 10, \
        "this PySide6 has the None reference-count bug: install PySide6-Essentials!=6.12.0"
    assert QtCore.QSize(1, 1).isValid()
