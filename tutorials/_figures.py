"""Where the lessons write files, and how they make figures.

* :func:`output_dir` -- ``$OCLLA_TUTORIAL_OUT`` if set, else ``tutorials/_output``.
* :func:`viewer_export` -- render a saved recording with the viewer's headless
  export (``python -m oclla.viewer --replay FILE --export OUT [options]``).  When
  the viewer is not installed the figure is skipped with a printed note; a
  viewer that is installed but fails is an error.
* :func:`show` -- display an image inline in Jupyter, or print its path when
  the lesson runs as a script.
* :func:`pyplot` / :func:`save` -- plots of measurements with matplotlib, when
  it is installed (skipped with a printed note otherwise).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def output_dir() -> Path:
    """The folder for recordings and figures (created if missing)."""
    out = Path(os.environ.get("OCLLA_TUTORIAL_OUT") or HERE / "_output")
    out.mkdir(parents=True, exist_ok=True)
    return out


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where figures are shown inline)."""
    return "ipykernel" in sys.modules


def show(path) -> None:
    """Show the image at ``path`` inline in Jupyter; print where it is otherwise."""
    if in_notebook():
        from IPython.display import Image, display
        display(Image(filename=str(path)))
    else:
        print(f"figure written to {path}")


def viewer_available() -> bool:
    """True when the teaching viewer can run: ``oclla.viewer`` and the Qt packages it
    needs (the ``viewer`` extra: PySide6, pyqtgraph), which ``pip install oclla``
    alone does not bring."""
    return all(importlib.util.find_spec(name) is not None
               for name in ("oclla.viewer", "PySide6", "pyqtgraph"))


def viewer_export(recording, out, *, after_step: int | None = None, view: str | None = None,
                  compare=None, args=()) -> Path | None:
    """Render ``recording`` (a saved ``.oclrec`` file) to ``out`` with the viewer.

    The file type follows ``out``'s extension (.png/.svg one step, .gif every
    step, .csv kernel timings).  ``after_step=k`` shows the matrix after the
    trace's step ``k`` (``run.steps[k]``; default: the last); ``view`` picks
    one panel ("matrix", "timeline", "steps", "compare", ...) instead of the
    whole window; ``compare`` is a second recording shown beside the first.
    Returns the path written, or None (with a printed note) when the viewer
    is not installed.
    """
    if not viewer_available():
        print(f"(figure {Path(out).name} skipped: the viewer is not installed; "
              f"`pip install oclla[viewer]` adds it)")
        return None
    cmd = [sys.executable, "-m", "oclla.viewer", "--replay", str(recording), "--export", str(out)]
    if after_step is not None:
        cmd += ["--step", str(after_step + 1)]       # the viewer's step 0 is the input
    if view is not None:
        cmd += ["--view", view]
    if compare is not None:
        cmd += ["--compare-replay", str(compare)]
    cmd += [str(a) for a in args]
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"viewer export failed ({' '.join(cmd)}):\n{done.stderr}")
    if Path(out).suffix.lower() in (".png", ".gif"):
        show(out)
    else:
        print(f"written to {out}")
    return Path(out)


def pyplot():
    """``matplotlib.pyplot`` (the Agg backend outside notebooks), or None with a note."""
    try:
        import matplotlib
    except ImportError:
        print("(plot skipped: matplotlib is not installed; `pip install matplotlib` adds it)")
        return None
    if not in_notebook():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, name: str) -> Path:
    """Save a matplotlib figure under :func:`output_dir`; Jupyter shows it inline itself."""
    path = output_dir() / name
    fig.savefig(path, dpi=120, bbox_inches="tight")
    if not in_notebook():
        print(f"figure written to {path}")
    return path
