"""``oclla-viewer``: the window, or a headless render of one step or of every step.

Examples::

    oclla-viewer                                   # the window
    oclla-viewer --replay lu.oclrec                # open a recording
    oclla-viewer --algorithm lu --variant pivot --n 16 --seed 1 --step 5 --export out.png
    oclla-viewer --algorithm lu --variant pivot --n 8 --export run.gif     # every step
    oclla-viewer --replay lu.oclrec --export timings.csv

With ``--export`` nothing is shown: the run (or the replay) is rendered
offscreen and written by the file's extension: ``.png``/``.svg`` one step
(``--step``, default the last), ``.gif``/``.mp4`` every step (or
``--steps A-B``), ``.csv`` kernel timings, ``.json`` a Chrome/Perfetto trace,
``.oclrec`` the recording.  Exit status: 0 done, 1 a bad file or a failed
run or export, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from . import matrices, registry
from .runner import DTYPES, RunRequest

EXPORT_TYPES = (".png", ".svg", ".gif", ".mp4", ".csv", ".json", ".oclrec")
VIEW_NAMES = ("window", "matrix", "compare", "timeline", "steps", "details")


class CliError(Exception):
    """A failure to report on stderr with exit status ``code``."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def build_parser() -> argparse.ArgumentParser:
    from oclla import __version__      # not oclla.cli: its imports need pyopencl
    p = argparse.ArgumentParser(
        prog="oclla-viewer",
        description="Watch oclla's factorizations step by step and see where the time goes.",
        epilog="Without --export the window opens; with it the view is rendered headless.")
    p.add_argument("--version", action="version", version=f"oclla-viewer {__version__}")
    src = p.add_argument_group("what to show")
    src.add_argument("--replay", metavar="FILE", help="open a saved recording")
    src.add_argument("--algorithm", choices=[a.key for a in registry.ALGORITHMS],
                     help="run this algorithm (needs an OpenCL device)")
    src.add_argument("--pick", choices=("click", "partial", "complete", "diagonal"),
                     help="eliminate with pivots picked by clicks (or by this rule) on the "
                          "--matrix, or on --family/--n/--seed (needs an OpenCL device)")
    src.add_argument("--variant",
                     help="variant of the algorithm, as the API names it (LU: inplace, crout, "
                          "window, faithful, blocked; default: its first)")
    src.add_argument("--pivoting", choices=("partial", "none"),
                     help="pivoting of an LU (default: the variant's, partial where it can)")
    src.add_argument("--block", type=int, metavar="NB",
                     help="block size of a blocked variant (default: the device's)")
    src.add_argument("--n", type=int, default=16, help="matrix order (default 16)")
    src.add_argument("--rank", type=int, metavar="K",
                     help="columns of V of an update or downdate (default "
                          f"{registry.DEFAULT_RANK})")
    src.add_argument("--fail", action="store_true",
                     help="a downdate whose V breaks positive definiteness at order n/2 + 1")
    src.add_argument("--dtype", choices=DTYPES, default="float64",
                     help="element type (default float64)")
    src.add_argument("--family", choices=(*matrices.GENERATED, *registry.SPARSE_FAMILIES),
                     help="matrix family (default: what suits the algorithm)")
    src.add_argument("--ordering", choices=registry.SPARSE_ORDERINGS,
                     help="sparse Cholesky: the fill-reducing ordering (default metis)")
    src.add_argument("--large", type=float, metavar="FLOPS",
                     help="sparse Cholesky: flops from which a supernode takes the BLAS-3 route")
    src.add_argument("--compare-ordering", choices=registry.SPARSE_ORDERINGS,
                     help="sparse Cholesky: B's ordering (with --compare-variant)")
    src.add_argument("--cond", type=float, default=1e3, metavar="KAPPA",
                     help="condition number for --family cond (default 1e3)")
    src.add_argument("--matrix", metavar="FILE", help="a .npy or .mtx matrix instead of --family")
    src.add_argument("--values", metavar="ROWS",
                     help="the matrix typed in, rows separated by ';' (e.g. \"4 1; 1 3\")")
    src.add_argument("--solve", action="store_true",
                     help="LU: then solve Ax = b (b seeded), forward and back substitution "
                          "shown as steps")
    src.add_argument("--seed", type=int, default=0, help="seed of the matrix (default 0)")
    src.add_argument("--device", help="OpenCL device index or name substring (default: "
                                      "oclla's selection order)")
    src.add_argument("--no-warmup", action="store_true",
                     help="record the very first call (kernel builds included) instead of "
                          "running once untimed first")
    src.add_argument("--compare-variant", metavar="V",
                     help="also run variant V on the same matrix and show both side by side")
    src.add_argument("--compare-pivoting", choices=("partial", "none"),
                     help="pivoting of the compared run (default: as --pivoting)")
    src.add_argument("--compare-replay", metavar="FILE", help="compare with a saved recording")
    src.add_argument("--run", type=int, metavar="I",
                     help="which run of a recording with several to show (default: the "
                          "first with snapshots)")
    src.add_argument("--compare-run", type=int, metavar="J",
                     help="compare with run J of the same recording")
    src.add_argument("--sync", choices=("column", "step"), default="column",
                     help="how a comparison follows the main run: the same finished columns "
                          "(default) or the same step number")
    out = p.add_argument_group("headless export")
    out.add_argument("--export", metavar="PATH",
                     help="write PATH and exit (" + ", ".join(EXPORT_TYPES) + ")")
    out.add_argument("--step", type=int, help="step to render (0 = the matrix before the first "
                                              "step; default: the last)")
    out.add_argument("--steps", metavar="A-B", help="step range of an animation (default all)")
    out.add_argument("--view", choices=VIEW_NAMES, default="window",
                     help="what to render (default: the whole window)")
    out.add_argument("--size", default="1280x820", metavar="WxH",
                     help="window size in pixels (default 1280x820)")
    out.add_argument("--theme", choices=("light", "dark"), default="light",
                     help="theme of a headless render (default light)")
    out.add_argument("--presentation", action="store_true",
                     help="the matrix fills the window: large numbers, high contrast")
    out.add_argument("--decimals", type=int, metavar="D",
                     help="digits after the point of the numbers in cells (default 2)")
    out.add_argument("--substeps", action="store_true",
                     help="LU sub-steps (search, swap, multipliers, update) with L, U and P")
    out.add_argument("--sub", type=int, metavar="K",
                     help="with --substeps: show sub-step K of --step (0 = the pivot search)")
    out.add_argument("--fps", type=float, default=4.0,
                     help="animation frames per second, in (0, 60] (default 4)")
    return p


def _parse_range(text: str, last: int) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split("-"))
    except ValueError:
        raise CliError(f"--steps wants A-B (two step numbers), got {text!r}", 2) from None
    if a > b:
        raise CliError(f"--steps {text}: the first step is after the last (write A-B "
                       f"with A <= B)", 2)
    if not 0 <= a <= b <= last:
        raise CliError(f"--steps {text} is outside the run's steps 0-{last}", 2)
    return a, b


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
        if w < 200 or h < 150:
            raise ValueError
    except ValueError:
        raise CliError(f"--size wants WxH with W >= 200 and H >= 150, got {text!r}", 2) \
            from None
    return w, h


def request_from_args(args, variant: str | None = None,
                      pivoting: str | None = None, ordering: str | None = None) -> RunRequest:
    """The RunRequest the arguments describe (CliError for a bad combination)."""
    try:
        spec = registry.algorithm(args.algorithm)
        v = spec.variant(_variant_key(spec, variant or args.variant or spec.variants[0].key))
    except KeyError as exc:
        raise CliError(str(exc.args[0]), 2) from None
    if spec.missing():
        raise CliError(f"{spec.label} cannot run: {spec.missing()}", 2)
    if args.n < 1:
        raise CliError(f"--n must be at least 1, got {args.n}", 2)
    req = RunRequest(algorithm=spec.key, variant=v.key, n=args.n, dtype=args.dtype,
                     family=args.family or spec.family, seed=args.seed, kappa=args.cond,
                     pivoting=pivoting or args.pivoting, block=args.block, device=args.device,
                     warmup=not args.no_warmup, solve=args.solve and spec.key == "lu",
                     rank=args.rank if spec.rank else None,
                     fail=args.fail and bool(spec.failing),
                     ordering=(ordering or args.ordering) if spec.orderings else None,
                     large=args.large if spec.orderings else None)
    if args.matrix:
        try:
            req.matrix = matrices.load_matrix(args.matrix)
        except matrices.MatrixError as exc:
            raise CliError(str(exc)) from None
        req.family, req.n = "file", req.matrix.shape[0]
        req.source_name = os.path.basename(args.matrix)
    elif args.values:
        try:
            req.matrix = matrices.parse_matrix(args.values)
        except matrices.MatrixError as exc:
            raise CliError(f"--values: {exc}", 2) from None
        req.family, req.n = "typed", req.matrix.shape[0]
    elif req.family == "sycl4":
        req.n = 4
    return req


def _variant_key(spec, name: str) -> str:
    """The registry key of variant ``name``, which may also be spelled as the API's
    ``variant=`` argument (``--variant inplace`` for the LU's per-pivot loop in place)."""
    if any(v.key == name for v in spec.variants):
        return name
    for v in spec.variants:
        if v.kwargs.get("variant") == name:
            return v.key
    return name


def _check_args(args, parser) -> None:
    if args.cond < 1 or args.cond != args.cond or args.cond == float("inf"):
        parser.error(f"--cond is a condition number: finite and at least 1, got {args.cond:g}")
    if not 0 < args.fps <= 60:
        parser.error(f"--fps must lie in (0, 60], got {args.fps:g}")
    if args.block is not None and args.block < 1:
        parser.error(f"--block must be at least 1, got {args.block}")
    if args.rank is not None and args.rank < 1:
        parser.error(f"--rank must be at least 1, got {args.rank}")
    if args.export and not (args.replay or args.algorithm or args.pick):
        parser.error("--export needs something to show: --replay FILE, --algorithm NAME "
                     "or --pick RULE")
    if args.replay and args.algorithm:
        parser.error("give either --replay or --algorithm, not both")
    if args.matrix and args.values:
        parser.error("give either --matrix FILE or --values ROWS, not both")
    if args.pick and (args.replay or (args.algorithm and args.algorithm != "lu")):
        parser.error("--pick eliminates a matrix (LU): give --matrix or --family, "
                     "not --replay or another --algorithm")
    if args.export:
        ext = os.path.splitext(args.export)[1].lower()
        if ext not in EXPORT_TYPES:
            parser.error(f"--export {args.export}: unknown type {ext or '(none)'}; "
                         f"use one of {', '.join(EXPORT_TYPES)}")
    if args.compare_variant and not args.algorithm:
        parser.error("--compare-variant needs --algorithm")
    if args.sub is not None and not args.substeps:
        parser.error("--sub needs --substeps")
    if args.replay and not os.path.exists(args.replay):
        raise CliError(f"--replay {args.replay}: no such file")


QUIET_QT_MESSAGES = ("propagateSizeHints",)
"""Qt messages the offscreen platform prints for every window; they mean nothing here."""


def _quiet_offscreen(mode, context, message) -> None:
    if not any(q in message for q in QUIET_QT_MESSAGES):
        print(message, file=sys.stderr)


def _qt_app(headless: bool):
    if headless:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    elif sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                   or os.environ.get("WAYLAND_DISPLAY")
                                                   or os.environ.get("QT_QPA_PLATFORM")):
        raise CliError("no display to open a window on (DISPLAY is not set); use --export "
                       "to render headless, or set QT_QPA_PLATFORM=offscreen")
    from PySide6 import QtCore, QtWidgets
    app = QtWidgets.QApplication.instance()
    created = app is None
    if created:
        if headless:
            QtCore.qInstallMessageHandler(_quiet_offscreen)
        app = QtWidgets.QApplication(sys.argv[:1])
        app.setOrganizationName("oclla")
        app.setApplicationName("oclla-viewer")
    return app, created


def _run_now(window, request: RunRequest, purpose: str) -> None:
    """Run synchronously (headless) and show the result like the window would."""
    from .runner import execute
    from . import analysis
    outcome = execute(request)
    if not outcome.showable:
        raise CliError(outcome.error or "the run recorded no steps")
    run = analysis.viewable_runs(outcome.recording)[0]
    if purpose == "compare":
        window.model.set_compare(run)
    else:
        window.model.set_recording(outcome.recording)
    if outcome.error:
        print(f"oclla-viewer: note: {outcome.error}", file=sys.stderr)


def _export(window, args) -> None:
    from . import export
    m = window.model
    ext = os.path.splitext(args.export)[1].lower()
    last = m.last_position
    if args.step is not None and not 0 <= args.step <= last:
        raise CliError(f"--step {args.step} is outside the run's steps 0-{last}", 2)
    m.go_to(last if args.step is None else args.step)
    if args.sub is not None:
        frames = m.frames(m.position)
        if not 0 <= args.sub < len(frames):
            raise CliError(f"--sub {args.sub}: step {m.position} has "
                           f"{len(frames)} sub-step(s)", 2)
        m.go_to(m.position, sub=args.sub)
    window.focus_view(args.view)
    try:
        if ext in (".png", ".svg"):
            window.export_image(args.export, args.view)
        elif ext in (".gif", ".mp4"):
            first, end = _parse_range(args.steps, last) if args.steps else (0, last)
            frames = window.export_animation(args.export, first, end, args.view)
            print(f"wrote {args.export}: {frames} frames (steps {first}-{end})")
            return
        elif ext == ".csv":
            export.save_csv(m.recording, args.export)
        elif ext == ".json":
            m.recording.to_chrome_trace(args.export)
        else:
            m.recording.save(args.export)
    except (export.ExportError, OSError) as exc:
        raise CliError(f"cannot write {args.export}: {exc}") from None
    print(f"wrote {args.export}")


def _pick(window, args) -> None:
    """--pick: the pick-the-pivot elimination; a rule picks every pivot at once."""
    from .runner import build_matrix
    args.algorithm = args.algorithm or "lu"
    req = request_from_args(args)
    try:
        a = build_matrix(req)
    except matrices.MatrixError as exc:
        raise CliError(str(exc)) from None
    window.start_picking(a, args.pick)
    if window.game is None:
        raise CliError(window.message.text())
    if args.pick != "click":
        window.game.finish()
        window.show_game()


def _populate(window, args, headless: bool) -> None:
    if args.replay:
        if not window.open_recording(args.replay):
            raise CliError(window.message.text())
    elif args.pick:
        _pick(window, args)
    elif args.algorithm:
        req = request_from_args(args)
        if headless:
            _run_now(window, req, "main")
        else:
            window.start_run(req, "main")
    runs = window.model.runs
    if args.run is not None:
        if not 0 <= args.run < len(runs):
            raise CliError(f"--run {args.run}: the recording has {len(runs)} run(s)", 2)
        window.model.set_run(args.run)
    if args.compare_run is not None:
        if not 0 <= args.compare_run < len(runs):
            raise CliError(f"--compare-run {args.compare_run}: the recording has "
                           f"{len(runs)} run(s)", 2)
        window.model.set_compare(runs[args.compare_run])
    if args.compare_replay and not window.compare_recording(args.compare_replay):
        raise CliError(window.message.text())
    if args.compare_variant:
        req = request_from_args(args, args.compare_variant,
                                args.compare_pivoting or args.pivoting, args.compare_ordering)
        if headless:
            _run_now(window, req, "compare")
        else:
            window.wait_for_run()
            window.start_run(req, "compare")
    window.model.set_sync(args.sync)


def _check_qt() -> None:
    """CliError naming the extra to install when the Qt packages are missing."""
    try:
        import PySide6  # noqa: F401
        import pyqtgraph  # noqa: F401
    except ImportError as exc:
        raise CliError(f"the viewer needs PySide6 and pyqtgraph ({exc}): pip install "
                       f"\"oclla[viewer]\" (from a checkout: pip install \".[viewer]\")") \
            from None


def main(argv=None) -> int:
    """Entry point of ``oclla-viewer``; returns the exit status (0, 1 a failure, 2 bad
    arguments)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    headless = bool(args.export)
    try:
        _check_args(args, parser)
        size = _size(args.size)
        _check_qt()
        app, created = _qt_app(headless)
        from PySide6 import QtCore
        from .settings import Settings
        from .window import MainWindow
        if headless:      # a fixed look, independent of the user's saved settings
            tmp = tempfile.TemporaryDirectory()
            q = QtCore.QSettings(os.path.join(tmp.name, "viewer.ini"),
                                 QtCore.QSettings.Format.IniFormat)
            q.setValue("view/theme", args.theme)
            settings = Settings(q)
            if args.decimals is not None:
                settings.decimals = args.decimals
        else:
            settings = Settings()
        window = MainWindow(settings)
        try:
            window.resize(*size)
            if args.presentation:
                window.model.set_presentation(True)
            if args.substeps:
                window.model.set_substeps(True)
            window.show()
            _populate(window, args, headless)
            if headless:
                _export(window, args)
                return 0
            return app.exec()
        finally:
            if headless:
                window.close()
                window.deleteLater()
                app.processEvents()
                tmp.cleanup()
    except CliError as exc:
        print(f"oclla-viewer: error: {exc}", file=sys.stderr)
        return exc.code
