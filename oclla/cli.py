"""The ``oclla`` command: ``devices``, ``demo``, ``warmup``, ``bench``, ``tune``.

``oclla demo`` is the main job: it factors one seeded matrix with every LU
variant on the chosen device, prints where the time went (per phase, from
the OpenCL profiling events), the backward error and GFLOP/s, and writes a
recording that ``oclla-viewer --replay`` opens.

Errors are one line on stderr: exit status 2 for a bad argument (as argparse
does), 1 for a failure (no such device, a file that cannot be written, a
missing optional package); every argument is checked before anything is
measured.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time

import numpy as np

from . import accuracy
from ._notices import LOGGER, forwarded
from ._device import DeviceError, build_hint, build_problem, devices, get_queue, \
    nvidia_icd_hint, select_device, device_info
from ._prebuilt import status as prebuilt_status
from .lu import lu_factor, lu_flops
from .trace import record

DESCRIPTION = "Portable OpenCL linear algebra: devices, the demo, benchmarks and tuning."

DEMO_VARIANTS = (
    ("faithful", dict(method="pivot", variant="faithful")),
    ("inplace", dict(method="pivot", variant="inplace")),
    ("crout", dict(method="pivot", variant="crout")),
    ("window", dict(method="pivot", variant="window")),
    ("blocked", dict(method="blocked")),
)
DEMO_SUMMARY = (f"LU of one seeded matrix with each variant "
                f"({', '.join(name for name, _ in DEMO_VARIANTS)}): time per phase, "
                f"backward error, a recording for the viewer")


class CommandError(Exception):
    """A failure that the command reports as one line on stderr, with exit status 1."""


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (a device error may carry a build log)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def report_errors(prog: str, command, *args) -> int:
    """Run ``command(*args)``; a :class:`CommandError`, :class:`DeviceError` or
    :class:`OSError` becomes one line ``PROG: error: ...`` on stderr and exit status 1."""
    try:
        return command(*args)
    except (CommandError, DeviceError, OSError) as exc:
        print(f"{prog}: error: {one_line(exc)}", file=sys.stderr)
        return 1


def check_writable(path: str, option: str) -> None:
    """Raise :class:`CommandError` unless a file can be written at ``path`` (checked
    before any work, so that a long run does not fail at its end)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CommandError(f"{option} {path}: is a directory")
    if not os.path.isdir(folder):
        raise CommandError(f"{option} {path}: no such directory {folder}")
    if not os.access(folder, os.W_OK) or (os.path.exists(path)
                                          and not os.access(path, os.W_OK)):
        raise CommandError(f"{option} {path}: not writable")


def version_text(prog: str) -> str:
    """``PROG VERSION`` for ``--version``."""
    from . import __version__
    return f"{prog} {__version__}"


DEVICE_HELP = ("OpenCL device, index or name substring (default: the selection order: "
               "OCLLA_DEVICE, PYOPENCL_CTX, first GPU, first CPU; see oclla devices)")


def add_device_option(parser) -> None:
    """The ``--device`` option every command that runs kernels takes."""
    parser.add_argument("--device", default=None, help=DEVICE_HELP)


def _cmd_devices(args) -> int:
    found = devices()
    if not found:
        print("no OpenCL device found")
    usable = 0
    for info, dev in zip(found, _cl_devices()):
        problem = build_problem(dev)
        status = "compiles kernels" if problem is None else "CANNOT compile kernels"
        usable += problem is None
        print(info.describe())
        print(f"    {status}")
        shipped = prebuilt_status(dev)
        if shipped is not None:
            print(f"    programs shipped prebuilt for it: {shipped[0]}, {shipped[1]} of them "
                  f"for the kernels as they are (built from those binaries, not compiled)")
        if problem is not None:
            first = problem.strip().splitlines()
            detail = next((line for line in first if "error" in line.lower()), first[0])
            print(f"    {detail.strip()}")
            hint = build_hint(problem)
            if hint:
                print(f"    fix: {hint}")
    hint = nvidia_icd_hint()
    if hint:
        print(hint)
    try:
        chosen = select_device(args.device)
        print(f"default device: {chosen.name.strip()} ({device_info(chosen).kind})")
    except DeviceError as exc:
        print(f"no usable default device: {exc}")
        return 1
    if not args.check:
        return 0
    targets = [d for d in _cl_devices() if build_problem(d) is None] if args.all else [chosen]
    failed = 0
    for dev in targets:
        failed += _print_check(dev)
    return 0 if usable and not failed else 1


def _print_check(dev) -> int:
    """Run every kernel family's self-check on ``dev``; print a table; return the failures."""
    from ._selfcheck import check_device
    queue = get_queue(dev)
    print(f"\ncheck of {dev.name.strip()}: each kernel family built with the parameters "
          f"oclla chooses, run on a tiny case and compared with numpy")
    start = time.perf_counter()
    rows = check_device(queue)
    dtypes = sorted({dtype for _, dtype, _, _ in rows})
    width = max(len(family) for family, *_ in rows)
    print(f"    {'family':<{width}}  " + "  ".join(f"{d:<10}" for d in dtypes))
    by_key = {(family, dtype): (status, detail) for family, dtype, status, detail in rows}
    for family in dict.fromkeys(family for family, *_ in rows):
        cells = [by_key.get((family, d), ("-", ""))[0] for d in dtypes]
        print(f"    {family:<{width}}  " + "  ".join(f"{c:<10}" for c in cells))
    for family, dtype, status, detail in rows:
        if detail:
            print(f"    {family} {dtype} {status}: {detail}")
    failed = sum(status == "failed" for _, _, status, _ in rows)
    print(f"    {len(rows) - failed} of {len(rows)} passed in "
          f"{time.perf_counter() - start:.1f} s" + (f"; {failed} FAILED" if failed else ""))
    return failed


def _cl_devices():
    from ._device import _all_cl_devices
    return _all_cl_devices()


def _demo_matrix(n: int, dtype, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, n)).astype(dtype)


def _phase_table(run) -> list[str]:
    """Per phase: steps, kernels, device time, device idle gaps before them, GFLOP/s."""
    gaps = _idle_gaps(run)
    lines = [f"    {'phase':<10} {'steps':>6} {'kernels':>8} {'device ms':>10} "
             f"{'idle ms':>9} {'GFLOP/s':>9}"]
    for phase, (nsteps, nkernels, ns, flops) in run.phase_totals().items():
        idle = sum(gaps[id(k)] for s in run.steps if s.phase == phase for k in s.kernels)
        rate = flops / ns if ns else 0.0
        lines.append(f"    {phase:<10} {nsteps:>6} {nkernels:>8} {ns / 1e6:>10.2f} "
                     f"{idle / 1e6:>9.2f} {rate:>9.2f}")
    return lines


def _idle_gaps(run) -> dict:
    """Device idle time before each kernel: start minus the previous kernel's end."""
    gaps, previous_end = {}, None
    for k in sorted(run.kernels, key=lambda k: k.start):
        gaps[id(k)] = 0 if previous_end is None else max(0, k.start - previous_end)
        previous_end = k.end if previous_end is None else max(previous_end, k.end)
    return gaps


def _factor_timed(a, queue, options):
    """One untimed call (kernel builds, device warm-up), then one recorded, timed call."""
    try:
        lu_factor(a, queue=queue, **options)
    except np.linalg.LinAlgError:
        pass
    with record(snapshots=a.shape[0] <= 64) as rec:
        t0 = time.perf_counter()
        try:
            lu, piv = lu_factor(a, queue=queue, **options)
            error = accuracy.lu_backward_error(a, lu, piv)
        except np.linalg.LinAlgError as exc:
            error = float("nan")
            print(f"  {exc}")
        wall = time.perf_counter() - t0
    run = rec.runs[-1]
    run.metrics.update(backward_error=error, wall_s=wall,
                       gflops=lu_flops(a.shape[0]) / wall / 1e9)
    return rec, run


@contextlib.contextmanager
def _progress_on_stderr():
    """Within the block, the library's INFO messages (a kernel family's first use on a
    device: its builds and self-check, seconds on a CPU runtime) go to stderr, one
    line each, unless the "oclla" logger already has a handler of the caller's."""
    if logging.getLogger(LOGGER).handlers:
        yield
        return
    with forwarded(lambda text: print(f"oclla: {text}", file=sys.stderr, flush=True)):
        yield


def _cmd_demo(args) -> int:
    check_writable(args.out, "--out")
    queue = get_queue(args.device)
    info = device_info(queue)
    dtype = np.dtype(args.dtype)
    n = args.n
    a = _demo_matrix(n, dtype, args.seed)
    print(f"oclla demo: LU of a seeded {n} x {n} {dtype.name} matrix (seed {args.seed}) "
          f"on {info.name} ({info.kind}, {info.platform})\n")
    combined = record()
    for name, options in DEMO_VARIANTS:
        rec, run = _factor_timed(a, queue, options)
        combined.runs.append(run)
        print(f"{name}: {len(run.steps)} steps, {len(run.kernels)} kernels")
        print("\n".join(_phase_table(run)))
    print(f"\n{'variant':<10} {'wall ms':>9} {'device ms':>10} {'GFLOP/s':>9} "
          f"{'‖PA−LU‖/(n‖A‖ε)':>17}  ok")
    for (name, _), run in zip(DEMO_VARIANTS, combined.runs):
        error = run.metrics["backward_error"]
        print(f"{name:<10} {run.metrics['wall_s'] * 1e3:>9.2f} {run.device_ns / 1e6:>10.2f} "
              f"{run.metrics['gflops']:>9.2f} {error:>17.3g}  "
              f"{'yes' if accuracy.passes(error) else 'NO'}")
    faithful_error = combined.runs[0].metrics["backward_error"]
    if not accuracy.passes(faithful_error):
        print("(the faithful variant does not pivot, as in the post; on a random matrix "
              "its error can grow: that is lesson 4 of the tutorials)")
    stable = [run.metrics["backward_error"] for run in combined.runs[1:]]
    combined.runs.insert(0, _first_replay(queue, dtype, args.seed))
    combined.save(args.out)
    print(f"\nrecording written to {args.out}  (replay: oclla-viewer --replay {args.out}; "
          f"it opens on an {FIRST_REPLAY_N} x {FIRST_REPLAY_N} LU step by step, the timed "
          f"runs follow)")
    return 0 if all(accuracy.passes(e) for e in stable) else 1


FIRST_REPLAY_N = 8


def _first_replay(queue, dtype, seed: int):
    """A small per-pivot LU with the matrix after every step: the recording's first run,
    so that a replay opens on something to watch (the timed runs keep no snapshots)."""
    a = _demo_matrix(FIRST_REPLAY_N, dtype, seed)
    with record(snapshots=True) as rec:
        lu_factor(a, queue=queue, method="pivot", variant="inplace")
    return rec.runs[-1]


def _cmd_warmup(args) -> int:
    from ._programs import build_count, build_seconds
    from ._warmup import warmup
    queue = get_queue(args.device)
    dtype = None if args.dtype == "both" else np.dtype(args.dtype)
    start = time.perf_counter()
    done = warmup(dtype, queue=queue, jobs=args.jobs)
    print(f"{queue.device.name.strip()}: {done.programs} programs built in "
          f"{done.seconds:.1f} s ({', '.join(done.dtypes)}; every routine at orders "
          f"{', '.join(map(str, done.orders))}; {time.perf_counter() - start:.1f} s in all)")
    print(f"programs built by this process: {build_count()} in {build_seconds():.1f} s")
    return 0


def _cmd_bench(argv) -> int:
    if argv and argv[0] == "wls":
        from .bench_wls import main as wls_main
        return wls_main(argv[1:])
    if argv and argv[0] == "update":
        from .bench_update import main as update_main
        return update_main(argv[1:])
    if argv and argv[0] in ("potri", "logdet"):
        from .bench_potri import main as potri_main
        return potri_main(argv[0], argv[1:])
    from .bench import main as bench_main
    return bench_main(argv)


def _cmd_tune(argv) -> int:
    from .tune import main as tune_main
    return tune_main(argv)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oclla", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=version_text("oclla"))
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("devices", help="list OpenCL devices and whether they compile kernels")
    add_device_option(p)
    p.add_argument("--check", action="store_true",
                   help="build and run every kernel family on the selected device (or every "
                        "device with --all) and report ok / fell back / failed per family; "
                        "exit with status 1 if any failed or no device compiles kernels")
    p.add_argument("--all", action="store_true", help="with --check: every device listed")
    p = sub.add_parser("demo", help=DEMO_SUMMARY, description=DEMO_SUMMARY)
    p.add_argument("--n", type=int, default=512, help="matrix order (default 512)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                   help="element type (default float32)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random matrix (default 0)")
    add_device_option(p)
    p.add_argument("--out", default="oclla-demo.oclrec",
                   help="recording file to write (default oclla-demo.oclrec)")
    p = sub.add_parser("warmup", help="build every program the library uses on a device "
                                      "once, so that first calls (and the next process, "
                                      "through the driver's cache) start without building")
    p.add_argument("--dtype", choices=("float32", "float64", "both"), default="both",
                   help="element type (default both; float64 where the device has fp64)")
    p.add_argument("--jobs", type=int, default=1,
                   help="build in this many worker processes first (default 1: none); "
                        "their builds reach this process through the compiler's cache")
    add_device_option(p)
    sub.add_parser("bench", help="GFLOP/s against the reference: lu, gemm, syrk, getrf, potrf; "
                                 "wls for Jung & O'Leary's tables; update, potri and logdet "
                                 "(oclla bench --help, oclla bench wls --help, oclla bench "
                                 "update --help, ...)",
                   add_help=False)
    sub.add_parser("tune", help="search kernel parameters for this device (oclla tune --help)",
                   add_help=False)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return _cmd_bench(argv[1:])
    if argv and argv[0] == "tune":
        return _cmd_tune(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo" and args.n < 1:
        parser.error("--n must be at least 1")
    if args.command == "warmup" and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.command == "devices":
        return report_errors("oclla devices", _cmd_devices, args)
    with _progress_on_stderr():
        if args.command == "warmup":
            return report_errors("oclla warmup", _cmd_warmup, args)
        return report_errors("oclla demo", _cmd_demo, args)


if __name__ == "__main__":
    sys.exit(main())
