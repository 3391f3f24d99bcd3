"""``import oclla`` imports its parts on first use (PEP 562), and the viewer opens and
replays a recording without pyopencl, scipy.linalg or scipy.sparse: each is imported only
by what needs it (a run, a listing of the devices).  Fresh interpreters (children) show
what an import really costs; this process has imported everything long ago."""

import ast
import importlib
import inspect
import pathlib

import pytest
from recording_files import python_child, sample_recording, sample_run, save

import oclla

HEAVY = ("pyopencl", "scipy.linalg", "scipy.sparse")
SHOW_HEAVY = f"import sys; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"


def test_import_oclla_imports_none_of_its_parts():
    child = python_child("import sys, oclla; print(oclla.__version__); "
                         "print(sorted(m for m in sys.modules if m.startswith('oclla.'))); "
                         + SHOW_HEAVY)
    assert child.returncode == 0, child.stderr
    assert child.stdout.split("\n")[:3] == [oclla.__version__, "[]", "[]"]


def test_the_device_routines_modules_leave_scipy_linalg_unimported():
    """scipy.linalg costs about 0.4 s to import: the modules of the factorizations, solves,
    updates, inverses, assembly and least squares import it only where a warning of its
    (LinAlgWarning) is raised."""
    modules = ("lu", "cholesky", "rfp", "ad2at", "wls", "update", "inverse",
               "multi_device_lu")
    child = python_child("import importlib, sys; "
                         f"[importlib.import_module('oclla.' + m) for m in {modules!r}]; "
                         "print([m for m in ('scipy.linalg', 'scipy.sparse') "
                         "if m in sys.modules])")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"


def test_each_public_name_is_its_home_modules_object():
    for name in oclla.__all__:
        if name in oclla._SUBMODULES:
            expected = importlib.import_module(f"oclla.{name}")
        else:
            expected = getattr(importlib.import_module(oclla._HOME[name], "oclla"), name)
        assert getattr(oclla, name) is expected, name
    from oclla import Recording, lu_factor, sparse  # noqa: F401
    assert set(oclla.__all__) <= set(dir(oclla))
    assert oclla.tiled_lu.__name__ == "oclla.tiled_lu"      # any submodule, as before
    assert not hasattr(oclla, "no_such_name")
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        oclla.no_such_name


def test_type_checkers_see_every_public_name_where_it_is_imported_from():
    """The ``if TYPE_CHECKING:`` block, the lazy table and ``__all__`` name the same."""
    tree = ast.parse(pathlib.Path(oclla.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and getattr(node.test, "id", "") == "_TYPE_CHECKING")
    modules, names = set(), {}
    for node in block.body:
        for alias in node.names:
            if node.module is None:
                modules.add(alias.name)
            else:
                names[alias.name] = "." + node.module
    assert modules == set(oclla._SUBMODULES)
    assert names == oclla._HOME
    assert sorted(modules | set(names)) == sorted(oclla.__all__)


def test_lu_and_cholesky_stay_functions_when_their_modules_are_imported():
    child = python_child("import inspect, oclla.lu, oclla.cholesky, oclla.cli, oclla; "
                         "from oclla import lu, cholesky; "
                         "print(inspect.isfunction(oclla.lu), inspect.isfunction(oclla.cholesky),"
                         " lu is oclla.lu, cholesky is oclla.cholesky)")
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["True"] * 4
    assert inspect.isfunction(oclla.lu) and inspect.isfunction(oclla.cholesky)


VIEWER = """
import sys
from PySide6 import QtCore, QtWidgets
for fmt in (QtCore.QSettings.Format.NativeFormat, QtCore.QSettings.Format.IniFormat):
    QtCore.QSettings.setPath(fmt, QtCore.QSettings.Scope.UserScope, sys.argv[1])
app = QtWidgets.QApplication(["oclla-viewer"])
QtCore.QTimer.singleShot(0, app.quit)      # the first round of the event loop: shown
from oclla.viewer.app import main
print(main(sys.argv[2:]))
""" + SHOW_HEAVY
"""Start the viewer (settings in argv[1], its arguments after), print its exit status
once the window has shown (or the export is written) and the heavy modules imported."""


@pytest.mark.parametrize("args", [(), ("--replay", "{rec}"),
                                  ("--replay", "{rec}", "--export", "{out}")],
                         ids=["window", "replay", "replay-export"])
def test_the_viewer_opens_and_replays_without_device_code(tmp_path, args):
    pytest.importorskip("PySide6")
    pytest.importorskip("pyqtgraph")
    rec = save(sample_recording(sample_run(6)), tmp_path / "lu.oclrec")
    out = tmp_path / "step.png"
    child = python_child(VIEWER, tmp_path, *(a.format(rec=rec, out=out) for a in args))
    assert child.returncode == 0, child.stderr[-3000:]
    assert child.stdout.splitlines()[-2:] == ["0", "[]"], child.stdout
    assert "--export" not in args or out.stat().st_size > 1000
