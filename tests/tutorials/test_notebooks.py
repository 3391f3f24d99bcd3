"""Every lesson also runs as a notebook: converted by jupytext, executed by nbclient in a
fresh ipykernel started in ``tutorials/``, with the checks of the script runs
(``test_lessons.py``); skipped where nbclient or ipykernel is not installed.  A file of
its own, so that a second test worker runs the notebooks beside the scripts."""

from __future__ import annotations

import jupytext
import pytest

from test_lessons import (LESSON_TIMEOUT_S, LESSONS, TUTORIALS, _assert_lesson_output,
                          _checker_module, _lesson_env)


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_as_a_notebook(path, tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    _checker_module(int(path.name[6:8]))
    for key, value in _lesson_env(tmp_path).items():     # the kernel inherits these
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    notebook = jupytext.read(path)
    nbclient.NotebookClient(notebook, timeout=LESSON_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(TUTORIALS)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code"
               for o in cell.get("outputs", ())]
    assert not [o for o in outputs if o.output_type == "error"]
    stdout = "".join(o.get("text", "") for o in outputs
                     if o.output_type == "stream" and o.name == "stdout")
    _assert_lesson_output(path, tmp_path, stdout)
