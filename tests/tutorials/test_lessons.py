"""The tutorials: every lesson runs as a plain script and as a notebook, every checker works.

* Each ``tutorials/lessonNN_*.py`` runs in a subprocess (offscreen Qt, Agg
  plots, output in a temporary folder) and must exit 0 with every exercise
  reported as not answered yet and every figure it names written to a file.
* Each lesson also runs as a Jupyter notebook (jupytext conversion, executed
  by nbclient in a fresh ipykernel started in ``tutorials/``), with the same
  checks; skipped where nbclient or ipykernel is not installed.
* Each ``check_exercise_N`` accepts the teacher's solution
  (``tutorials/solutions/lessonNN.py``) and the other right answers in
  ``ALSO_RIGHT``, and refuses every wrong answer in ``WRONG`` (those instructors
  tried) and the placeholder ``None``.
* A lesson whose API is not available yet (its ``REQUIRES``) is skipped with
  the missing names as the reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jupytext
import numpy as np
import pytest
import scipy.linalg

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
sys.path.insert(0, str(TUTORIALS))

from _checks import checkers, missing  # noqa: E402
from _figures import viewer_available  # noqa: E402
from recording_files import CHILD_PYTHONPATH  # noqa: E402

LESSONS = sorted(TUTORIALS.glob("lesson[0-9][0-9]_*.py"))
NUMBERS = [int(p.name[6:8]) for p in LESSONS]
LESSON_TIMEOUT_S = 120          # each lesson is meant to run in well under a minute


def _no_bounds_check_axpy():
    return """
__kernel void axpy(const float alpha, __global const float *x,
                   __global float *y, const int n)
{
    const int i = get_global_id(0);
    y[i] = alpha * x[i] + y[i];
}
"""


def _full_solve_of_lu(L, U, b):
    """Multiplies the factors back and solves the full system (the exercise forbids it)."""
    return np.linalg.solve(L @ U, b)


def _full_solve_of_clean_lu(L, U, b):
    """Cleans the triangles first, then still calls a general solver."""
    n = len(b)
    return np.linalg.solve((np.tril(L, -1) + np.eye(n)) @ np.triu(U), b)


def _float64_direct(C, g, tol):
    """A float64 Cholesky solve: right answer, but no float32 factor and no refinement."""
    x = scipy.linalg.cho_solve(scipy.linalg.cho_factor(C), g)
    return x, [0.0]


def _residual_stopping_refine(C, g, tol):
    """Algorithm 1 stopped on ‖r‖/‖x‖, a test that changes with the scaling of C."""
    factor = scipy.linalg.cho_factor(C.astype(np.float32))

    def solve32(rhs):
        return scipy.linalg.cho_solve(factor, rhs.astype(np.float32)).astype(np.float64)

    x, corrections = solve32(g), []
    for _ in range(100):
        r = g - C @ x
        dx = solve32(r)
        x = x + dx
        corrections.append(np.linalg.norm(dx) / np.linalg.norm(x))
        if np.linalg.norm(r) / np.linalg.norm(x) <= tol:
            break
    return x, corrections


def _slowest_single_kernel(run):
    return max(run.steps, key=lambda s: max((k.duration_ns for k in s.kernels),
                                            default=0)).index


def _longest_queued_to_end(run):
    return max(run.steps, key=lambda s: max((k.end for k in s.kernels), default=0)
               - min((k.queued for k in s.kernels), default=0)).index


def _downdate_first(r, enter, leave):
    """Removes the rows that leave before adding those that enter: can fail on the way."""
    import oclla
    r = oclla.cholesky_update(r, leave.T, sign=-1)
    return oclla.cholesky_update(r, enter.T)


def _refactor_window(r, enter, leave):
    """The right factor, by refactoring on the device instead of updating."""
    import oclla
    return oclla.cholesky(r.T @ r + enter.T @ enter - leave.T @ leave)


def _signs_swapped(r, enter, leave):
    import oclla
    r = oclla.cholesky_update(r, leave.T)
    return oclla.cholesky_update(r, enter.T, sign=-1)


def _logdet_of_det(a):
    return float(np.log(np.linalg.det(a)))


def _logdet_without_2(a):
    return float(np.sum(np.log(np.diag(np.linalg.cholesky(a)))))


def _logdet_of_product(a):
    return float(np.log(np.prod(np.diag(np.linalg.cholesky(a))) ** 2))


def _standard_errors(X, y, *, ddof=True, root=True, diag_of_inverse=True):
    m, p = X.shape
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    s2 = np.sum((y - X @ beta) ** 2) / (m - p if ddof else m)
    d = np.diag(np.linalg.inv(X.T @ X)) if diag_of_inverse else 1.0 / np.diag(X.T @ X)
    return np.sqrt(s2 * d) if root else s2 * d


def _wall_minus_busy(run):
    """Span minus the sum of durations: counts overlapping kernels twice."""
    ks = [k for k in run.kernels if k.device != "host"]
    return max(k.end for k in ks) - min(k.start for k in ks) - sum(k.duration_ns for k in ks)


def _idle_with_host(run):
    """Merges the intervals correctly but counts the host's work as the device's."""
    idle, reach = 0, None
    for k in sorted(run.kernels, key=lambda k: k.start):
        if reach is not None and k.start > reach:
            idle += k.start - reach
        reach = k.end if reach is None else max(reach, k.end)
    return idle


def _idle_from_queued(run):
    """Measures from the enqueue times, not the start times."""
    ks = sorted((k for k in run.kernels if k.device != "host"), key=lambda k: k.queued)
    idle, reach = 0, None
    for k in ks:
        if reach is not None and k.queued > reach:
            idle += k.queued - reach
        reach = k.end if reach is None else max(reach, k.end)
    return idle


# Typical mistakes for every exercise: (lesson, exercise) -> wrong answers, each of
# which the checker must refuse (those an instructor found accepted, among them).
WRONG = {
    (1, 1): [96],                                      # counted work-items, not groups
    (1, 2): [9],                                       # 3 x 3: forgot c == col
    (1, 3): [_no_bounds_check_axpy()],                 # writes past n
    (1, 4): [lambda ev: (ev.profile.end - ev.profile.queued) / 1e3],   # includes waiting
    (2, 1): [[[2, 4, 3, 5], [0, 1, 1, 18], [0, -4, -7, -6], [0, 1, -8, 4]],  # no pivoting
             [[6, 8, 2, 9], [-2 / 3, -5 / 3, -11 / 3, 14], [1 / 3, 4 / 3, 7 / 3, 2],
              [2 / 3, 11 / 3, -10 / 3, 8]],                                   # multipliers
             [[6, 8, 2, 9], [0, -5 / 3, -11 / 3, 14], [0, 0, 0, 0],
              [0, 11 / 3, -10 / 3, 8]]],                                      # lost a row
    (2, 2): [lambda lu, piv: float(np.prod(np.diag(lu))),                 # forgot the sign
             lambda lu, piv: float(np.linalg.det(lu)),                    # det of the packing
             1272],                                                       # a number
    (2, 3): [lambda L, U, b: b,                        # forgot to solve
             _full_solve_of_lu,                        # forbidden, and reads the junk
             _full_solve_of_clean_lu],                 # forbidden
    (2, 4): [[[1, 2, 3], [4, 5, 6], [7, 8, 10]]],      # invertible but no zero pivot
    (3, 1): [lambda n, k: (n - k) ** 2 / n ** 2],      # off by one row
    (3, 2): [0.5, 257 / 768, 0.3346],                  # the value at n = 256, not the limit
    (3, 3): [1024 ** 3 * 4],                           # n copies instead of n - 1
    (3, 4): [lambda run: (sum(k.name == "copy U->A" for k in run.kernels)
                          / len(run.kernels))],        # share of commands, not of time
    (4, 1): [0],                                       # took the first row
    (4, 2): [20, 2 ** 19, 2 ** 60],                    # n, the order 20, 2^n
    (4, 3): [[[1e-3, 1.0, 1.0], [1.0, 1.0, 1.0], [0.0, 1.0, 2.0]]],   # pivot not small enough
    (4, 4): [1e4 * 2.0 ** -52, 2.0 ** -23, 1e8 * 2.0 ** -23, 3],   # ε64; no κ; κ²; digits
    (4, 5): [[(k, k) for k in range(7)],                 # partial pivoting's picks: 128
             [(0, 7)] + [(k, k) for k in range(1, 7)],   # one good pick is not enough
             [(0, 0), (0, 7)] + [(k, 7) for k in range(2, 7)],   # row 0 is finished
             [(0, 0), (1, 7)],                            # too few picks
             "complete"],                                 # a rule, not picks
    (5, 1): [1024 / 6,                                 # a square product's n/6
             64 / 4,                                   # the large-m limit
             2 * 1024 ** 2 * 64 / (4 * (1024 ** 2 + 2 * 1024 * 64))],  # S not written
    (5, 2): [2 / 8,                                    # float32
             1 / 16],                                  # one flop per entry
    (5, 3): [lambda i, p, b: max(p, i * b)],
    (5, 4): [0.5],
    (6, 1): [36],                                      # the t x t box
    (6, 2): [(4, 7)],                                  # rows and columns swapped
    (6, 3): [lambda a, steps=None: np.tril(a),         # forgot to factor
             lambda a, steps=None: np.linalg.cholesky(a),          # the library, all steps
             lambda a, steps=None: scipy.linalg.cholesky(a, lower=True)],
    (6, 4): [4096 * 4096 * 4 // 2],                    # forgot the diagonal
    (7, 1): [8],
    (7, 2): [1e3],                                     # forgot the square
    (7, 3): [lambda C, g, tol: scipy.linalg.cho_solve(  # float32 alone, no refinement
                 scipy.linalg.cho_factor(C.astype(np.float32)),
                 g.astype(np.float32)).astype(np.float64),
             lambda C, g, tol: np.linalg.solve(C, g),  # float64, no refinement
             _float64_direct,
             _residual_stopping_refine],               # not scale-free
    (7, 4): [1e6 * 2.0 ** -23, 2.0 ** -52],            # float32's epsilon; forgot κ
    (8, 1): [10],                                      # counted the input too
    (8, 2): [511 * 512 ** 2 * 4,                       # float32 bytes
             512 ** 3 * 8, 513 * 512 ** 2 * 8],        # n or n + 1 snapshots
    (8, 3): [lambda run: min(run.steps, key=lambda s: s.device_ns).index,
             _slowest_single_kernel, _longest_queued_to_end],
    (8, 4): [lambda run: {p: f for p, (_, _, _, f) in run.phase_totals().items() if f}],
    (9, 1): [600 / 9,                                  # forgot forming A + VVᵀ
             200, 600],                                # k·n² per update; k = n
    (9, 2): [_downdate_first, _refactor_window, _signs_swapped,
             lambda r, enter, leave: scipy.linalg.cholesky(     # on the host, no update
                 r.T @ r + enter.T @ enter - leave.T @ leave)],
    (9, 3): [2, 4, 0],                                 # 0-based row; whole matrix
    (9, 4): [16, 12, 3],                               # all of them; κ²; half
    (10, 1): [1, 3, 2 / 3],                            # trtri only; the total; n³ units
    (10, 2): [_logdet_of_det, _logdet_without_2, _logdet_of_product],
    (10, 3): [lambda X, y: _standard_errors(X, y, ddof=False),
              lambda X, y: _standard_errors(X, y, root=False),
              lambda X, y: _standard_errors(X, y, diag_of_inverse=False)],
    (10, 4): [_wall_minus_busy, _idle_with_host, _idle_from_queued],
    (11, 1): [(27, 55),                                # swapped
              (45, 17),                                # without the diagonal
              (100, 27),                               # the full matrix, not its triangle
              (55, 55), 55, "55, 27"],                 # no fill either way; not a pair
    (11, 2): [[2, 3, 5, 4, -1, -1],                    # A's first nonzeros: fill ignored
              [3, 4, 5, 5, 6, 0],                      # 1-based
              [2, 3, 4, 4, 5],                         # the root left out
              [2, 3, 4, 5, 5, -1]],
    (11, 3): [10, 1, 5, 9.5],                          # every column; one chain; halves
    (11, 4): ["metis", "natural", "rcm", "best", 3],   # nested dissection is not always best
    (12, 1): [64, 36, 56, "120"],                      # tiles; lower tiles; gemm only; text
    (12, 2): [24, 8, 15, 120],                         # 3t; t; 2t - 1; every task
    (12, 3): [4096, 256, 2048 / 3, 128],               # per entry; one flop; n/3; b/16
    (12, 4): [2 * 1496, 1496 / 2, 374, 18.7e12 / 50e9],   # b flops; 4 bytes; F/B
}

# Right answers other than the teacher's solution that a checker must accept: estimates
# with round numbers and the other common definition of machine epsilon (2^-24, 2^-53).
ALSO_RIGHT = {
    (2, 3): [lambda L, U, b: scipy.linalg.solve_triangular(
        U, scipy.linalg.solve_triangular(L, b, lower=True, unit_diagonal=True))],
    (3, 2): [1 / 3, 0.333, 0.3333],
    (4, 4): [1e-3, 1e4 * 2.0 ** -24, 1.2e-3],
    (7, 4): [1e-10, 1e6 * 2.0 ** -53, 2e-10],
    (9, 1): [100, 100.0, 95],                          # n/6, or round estimates
    (9, 4): [6.0, 5, 7],
    (10, 1): [2.0],
    (10, 2): [lambda a: 2.0 * float(np.sum(np.log(np.diag(np.linalg.cholesky(a))))),
              lambda a: float(np.linalg.slogdet(a)[1])],
    (10, 4): [lambda run: _idle_with_host(SimpleNamespace(
        kernels=[k for k in run.kernels if k.device != "host"]))],
    (11, 1): [[55, 27], np.array([55, 27]), (55.0, 27.0)],
    (11, 2): [(2, 3, 4, 4, 5, -1), np.array([2, 3, 4, 4, 5, -1])],
    (11, 3): [9.0, np.int64(9)],
    (11, 4): ["AMD"],
    (12, 1): [120.0, np.int64(120)],
    (12, 3): [512.0, np.float32(512)],
}


def _env() -> dict:
    """The environment for a subprocess: this checkout first on the import path."""
    return dict(os.environ, PYTHONPATH=CHILD_PYTHONPATH)


def _lesson_env(out: Path) -> dict:
    """The environment a lesson runs in: headless Qt and plots, files written to ``out``."""
    return dict(_env(), QT_QPA_PLATFORM="offscreen", MPLBACKEND="Agg",
                OCLLA_TUTORIAL_OUT=str(out))


def _figure_names(path: Path) -> list[str]:
    """The figure files a lesson writes: its ``save(fig, NAME)`` plots when matplotlib is
    installed, its ``output_dir() / NAME`` images when the viewer is."""
    text = path.read_text(encoding="utf-8")
    names = []
    if importlib.util.find_spec("matplotlib"):
        names += re.findall(r'save\(fig, "([^"]+)"\)', text)
    if viewer_available():
        names += re.findall(r'output_dir\(\) / "([^"]+\.(?:png|svg|gif))"', text)
    return names


def _assert_lesson_output(path: Path, out: Path, stdout: str) -> None:
    """Every exercise left unanswered was reported so; every figure was written to ``out``."""
    for k in checkers(_checker_module(int(path.name[6:8]))):
        assert f"Exercise {k}: not answered yet" in stdout
    for name in _figure_names(path):
        assert (out / name).stat().st_size > 0, f"{path.name} wrote no {name}"


def _solutions(number: int):
    path = TUTORIALS / "solutions" / f"lesson{number:02d}.py"
    spec = importlib.util.spec_from_file_location(f"solutions_lesson{number:02d}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {int(name.split("_")[1]): value for name, value in vars(module).items()
            if re.fullmatch(r"answer_\d+", name)}


def _checker_module(number: int):
    module = importlib.import_module(f"_checks.lesson{number:02d}")
    absent = missing(getattr(module, "REQUIRES", ()))
    if absent:
        pytest.skip(f"lesson {number} needs {', '.join(absent)}, not available yet")
    return module


def test_every_lesson_is_here():
    assert NUMBERS == list(range(1, len(LESSONS) + 1)) and len(LESSONS) >= 5


@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_is_a_percent_notebook_with_checked_exercises(path):
    number = int(path.name[6:8])
    module = importlib.import_module(f"_checks.lesson{number:02d}")
    text = path.read_text(encoding="utf-8")
    notebook = jupytext.reads(text, fmt="py:percent")
    kinds = [cell.cell_type for cell in notebook.cells]
    assert kinds[0] == "markdown" and kinds.count("markdown") >= 5 and "code" in kinds
    assert notebook.cells[0].source.startswith(f"# Lesson {number} ")
    numbers = sorted(checkers(module))
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 3
    for k in numbers:
        assert f"answer_{k} = None\ncheck_exercise_{k}(answer_{k})" in text
    assert sorted(_solutions(number)) == numbers
    for cell in notebook.cells:            # prose that lost its "# %% [markdown]" marker
        if cell.cell_type == "code":
            assert not re.search(r"^# #+ ", cell.source, re.M), \
                f"a markdown heading inside a code cell:\n{cell.source[:300]}"


@pytest.mark.parametrize("number", NUMBERS)
def test_checkers_accept_solutions_and_reject_wrong_answers(number, capsys):
    module = _checker_module(number)
    solutions = _solutions(number)
    for k, check in sorted(checkers(module).items()):
        assert check(solutions[k]) is True, f"lesson {number} exercise {k} rejects its solution"
        assert (number, k) in WRONG, f"no wrong answer to test lesson {number} exercise {k}"
        for i, wrong in enumerate(WRONG[number, k]):
            assert check(wrong) is False, \
                f"lesson {number} exercise {k} accepts wrong answer {i}: {wrong!r}"
        for i, right in enumerate(ALSO_RIGHT.get((number, k), ())):
            assert check(right) is True, \
                f"lesson {number} exercise {k} refuses right answer {i}: {right!r}"
        assert check(None) is False
    out = capsys.readouterr().out
    assert "correct!" in out and "not yet" in out and "not answered yet" in out


def test_a_crashing_answer_is_reported_not_raised(capsys):
    from _checks.lesson03 import check_exercise_1

    assert check_exercise_1(lambda n, k: 1 / 0) is False
    assert "raised ZeroDivisionError" in capsys.readouterr().out
    assert check_exercise_1(SimpleNamespace()) is False          # not a function


#: Runs each lesson given as an argument as ``__main__`` (as ``python FILE`` would, with
#: tutorials/ first on the import path), one after the other in this one child, each in
#: its own folder (the working directory and ``OCLLA_TUTORIAL_OUT``) with its own stdout
#: and stderr; writes ``[exit code, stdout, stderr]`` to ``<folder>.json`` as it ends.
_RUN_LESSONS = """
import contextlib, io, json, os, runpy, sys, traceback
tutorials, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, tutorials)
for path in sys.argv[3:]:
    folder = os.path.join(root, os.path.basename(path)[:-3])
    os.makedirs(folder)
    os.chdir(folder)
    os.environ["OCLLA_TUTORIAL_OUT"] = folder
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
        except BaseException:
            code = 1
            traceback.print_exc()
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    with open(folder + ".json", "w") as fh:
        json.dump([code, out.getvalue(), err.getvalue()], fh)
"""


@pytest.fixture(scope="module")
def lessons_run(tmp_path_factory):
    """Every lesson that can run, run as a script in one child process (one interpreter
    start, one set of imports and kernel builds instead of one per lesson): the folder
    holding each lesson's output folder and ``<lesson>.json``, and the child's stderr."""
    root = tmp_path_factory.mktemp("lessons")
    paths = [str(p) for p in LESSONS
             if not missing(getattr(importlib.import_module(f"_checks.{p.stem[:8]}"),
                                    "REQUIRES", ()))]
    done = _run_lessons(paths, root, timeout=LESSON_TIMEOUT_S * len(paths))
    return root, done.stdout[-3000:] + done.stderr[-3000:]


def _run_lessons(paths, root: Path, *, prelude: str = "", env: dict | None = None,
                 timeout: float) -> subprocess.CompletedProcess:
    """The child of :data:`_RUN_LESSONS` over ``paths``, writing under ``root``, after
    ``prelude`` (Python code run first in the child)."""
    return subprocess.run([sys.executable, "-c", prelude + _RUN_LESSONS, str(TUTORIALS),
                           str(root), *map(str, paths)], env=env or _lesson_env(root),
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_as_a_script(path, lessons_run):
    """``python tutorials/lessonNN_*.py`` exits 0 with nothing on stderr that is a
    traceback, reports every exercise unanswered and writes its figures (each lesson run
    as ``__main__`` in its own folder; all of them in one child, see :func:`lessons_run`)."""
    _checker_module(int(path.name[6:8]))
    root, child = lessons_run
    result = root / f"{path.stem}.json"
    assert result.exists(), f"the child ended before {path.name} did:\n{child}"
    code, stdout, stderr = json.loads(result.read_text(encoding="utf-8"))
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    assert "Traceback" not in stderr
    _assert_lesson_output(path, root / path.stem, stdout)


def _run_alone(path: Path, root: Path, prelude: str = "", env: dict | None = None,
               timeout: float = LESSON_TIMEOUT_S):
    """[exit code, stdout, stderr] of one lesson run as :func:`lessons_run` runs it, after
    ``prelude`` (Python code run first in the child)."""
    _run_lessons([path], root, prelude=prelude, env=env, timeout=timeout)
    return json.loads((root / f"{path.stem}.json").read_text(encoding="utf-8"))


def test_a_lesson_without_the_viewer_skips_its_figures(tmp_path):
    """Where PySide6 is missing (oclla installed without its viewer extra) a lesson skips
    its viewer figures with a note, in this process and in the viewer's: the viewer
    package itself is always installed, so its presence says nothing."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text('import sys\nsys.modules["PySide6"] = None\n')
    env = _lesson_env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join((str(hide), env["PYTHONPATH"]))
    path = TUTORIALS / "lesson06_cholesky_packed.py"
    figures = re.findall(r'output_dir\(\) / "([^"]+\.(?:png|svg|gif))"', path.read_text())
    assert figures
    code, stdout, stderr = _run_alone(path, tmp_path, env=env)
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    assert stdout.count("skipped: the viewer is not installed") == len(figures)
    assert not any((tmp_path / path.stem / name).exists() for name in figures)


#: A device whose tuned LU factors a matrix of order 1024 as one panel (FLAT_N, register
#: leaves of 256 items holding 4 rows each), as the GPUs' entries do; the child checks that
#: it does.  Its leaf programs take PoCL 25-70 s to build with cold caches.
_FLAT_LU = """
import numpy as np, oclla
from oclla import _params
_params.override("lu", dict(FLAT_N=1024, REG_SLOTS=32, PANEL_WG=256))
with oclla.record() as rec:
    oclla.lu_factor(np.eye(1024, dtype=np.float32))
assert set(rec.runs[-1].phase_totals()) == {"panel"}, rec.runs[-1].phase_totals()
"""


@pytest.mark.slow
def test_lesson_05_where_the_lu_of_1024_is_one_panel(tmp_path):
    """Lesson 5's phase table of the blocked LU (panel, laswp, trsm, gemm) where the
    device's own parameters take n = 1024 as one flat panel, without gemm steps."""
    code, stdout, stderr = _run_alone(TUTORIALS / "lesson05_blocking_roofline.py", tmp_path,
                                      prelude=_FLAT_LU, timeout=4 * LESSON_TIMEOUT_S)
    assert code == 0, stdout[-3000:] + stderr[-3000:]
    assert re.search(r"share of the flops in GEMM: \d", stdout), stdout[-3000:]


#: Runs each solutions file given as an argument as ``__main__`` (as ``python FILE`` would,
#: its folder first on the import path), one after the other in this one child; prints
#: ``{path: [exit code, stdout, traceback or ""]}`` as JSON.
_RUN_SOLUTIONS = """
import contextlib, io, json, runpy, sys, traceback
results = {}
for path in sys.argv[1:]:
    sys.path.insert(0, path.rsplit("/", 1)[0])
    out, code, error = io.StringIO(), 0, ""
    with contextlib.redirect_stdout(out):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
        except BaseException:
            code, error = 1, traceback.format_exc()
    sys.path.pop(0)
    results[path] = [code, out.getvalue(), error]
sys.stdout.write(json.dumps(results))
"""


@pytest.fixture(scope="module")
def solutions_run():
    """Every solutions file whose lesson can run, run as a script in one child process
    (one interpreter start and one set of imports instead of one per lesson)."""
    paths = [str(TUTORIALS / "solutions" / f"lesson{number:02d}.py") for number in NUMBERS
             if not missing(getattr(importlib.import_module(f"_checks.lesson{number:02d}"),
                                    "REQUIRES", ()))]
    done = subprocess.run([sys.executable, "-c", _RUN_SOLUTIONS, *paths], env=_env(),
                          capture_output=True, text=True,
                          timeout=LESSON_TIMEOUT_S * len(paths))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("number", NUMBERS)
def test_solutions_file_runs_as_a_script(number, solutions_run):
    """``python tutorials/solutions/lessonNN.py`` exits 0 with every checker saying correct
    (each file run as ``__main__``; all of them in one child, see :func:`solutions_run`)."""
    _checker_module(number)
    code, stdout, error = solutions_run[str(TUTORIALS / "solutions" / f"lesson{number:02d}.py")]
    assert code == 0 and not error, stdout + error
    assert stdout.count("correct!") == len(checkers(_checker_module(number)))
