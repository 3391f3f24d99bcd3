"""Every lesson also runs as a notebook: converted by jupytext, executed by nbclient in an
ipykernel started in ``tutorials/``, with the checks of the script runs
(``test_lessons.py``); skipped where nbclient or ipykernel is not installed.  A file of
its own, so that a second test worker runs the notebooks beside the scripts.

The lessons share one kernel, started once for the module: each notebook first clears
the kernel's namespace (``%reset -f``), goes back to ``tutorials/`` and points
``OCLLA_TUTORIAL_OUT`` at its own folder, so it sees nothing of the lesson before it
but the modules that lesson imported (one interpreter start and one set of imports
instead of one per lesson).
"""

from __future__ import annotations

import os

import jupytext
import pytest

from test_lessons import (LESSON_TIMEOUT_S, LESSONS, TUTORIALS, _assert_lesson_output,
                          _checker_module, _lesson_env)

#: The cell each notebook starts with in the shared kernel (see the module docstring).
PREAMBLE = """\
%reset -f
import os, sys
os.chdir({tutorials!r})
os.environ["OCLLA_TUTORIAL_OUT"] = {out!r}
if "matplotlib.pyplot" in sys.modules:
    sys.modules["matplotlib.pyplot"].close("all")
del os, sys
"""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """(nbclient, a started kernel manager): one python3 kernel for every lesson, with the
    lessons' environment (headless Qt, Agg plots) and its own runtime and IPython folders."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from jupyter_client.manager import KernelManager
    home = tmp_path_factory.mktemp("kernel")
    env = dict(_lesson_env(home / "out"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               IPYTHONDIR=str(home / "ipython"))
    with pytest.MonkeyPatch.context() as mp:   # the connection file goes to the runtime dir
        mp.setenv("JUPYTER_RUNTIME_DIR", env["JUPYTER_RUNTIME_DIR"])
        km = KernelManager(kernel_name="python3")
        km.start_kernel(cwd=str(TUTORIALS), env=env)
        try:
            yield nbclient, km
        finally:
            km.shutdown_kernel(now=True)


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_as_a_notebook(path, tmp_path, kernel):
    nbclient, km = kernel
    _checker_module(int(path.name[6:8]))
    if not km.is_alive():                          # a lesson before this one killed it
        km.restart_kernel(now=True)
    notebook = jupytext.read(path)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    notebook.cells.insert(0, jupytext.reads(
        PREAMBLE.format(tutorials=str(TUTORIALS), out=os.fspath(tmp_path)),
        fmt="py:percent").cells[0])
    client = nbclient.NotebookClient(notebook, km=km, timeout=LESSON_TIMEOUT_S,
                                     kernel_name="python3")
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    outputs = [o for cell in code for o in cell.get("outputs", ())]
    assert not [o for o in outputs if o.output_type == "error"]
    stdout = "".join(o.get("text", "") for o in outputs
                     if o.output_type == "stream" and o.name == "stdout")
    _assert_lesson_output(path, tmp_path, stdout)
