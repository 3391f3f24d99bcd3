"""``oclla bench``: GFLOP/s of oclla against the vendor or CPU reference, same run.

Usage::

    oclla bench [lu|gemm|syrk|getrf|potrf] [--sizes 512,1024] [--dtype float32,float64]
                [--repeat 3] [--device SPEC] [--reference auto|cpu|cuda]
                [--max-pivot-n 4096] [--json [FILE.json]] [--plot FILE.png]
    oclla bench wls ...        (Jung & O'Leary's Tables 1 and 2: oclla bench wls --help)
    oclla bench update ...     (rank-k Cholesky update against refactorization)
    oclla bench potri ...      (the inverse from a Cholesky factor; also logdet)
    oclla bench sparse ...     (sparse Cholesky on Laplacians: oclla bench sparse --help)

What each routine measures (LAPACK flop counts):

``lu``     the LU variants (per-pivot faithful, in place, Crout and windowed; blocked)
           and the reference ``lu_factor``; 2n³/3 flops
``getrf``  the blocked LU and the reference; 2n³/3
``gemm``   C = A·B, n x n; 2n³
``syrk``   one triangle of C = A·Aᵀ, n x n; n²(n+1)
``potrf``  Cholesky (``oclla.cholesky``); n³/3

The reference runs in the same process on the same inputs: cuBLAS/cuSOLVER
through CuPy (``cupy.matmul``, ``cupy.cublas.syrk``,
``cupyx.scipy.linalg.lu_factor``, ``cupy.linalg.cholesky``; CuPy's default
math mode, so no TF32) when CuPy and a CUDA device are present, else
NumPy/SciPy on the CPU.  oclla works on device-resident arrays (the result
stays on the device), so neither side pays host transfers; each timing ends
when the device is idle.  The repetitions of all implementations are
interleaved and the best time of each is kept, which keeps a shared or
throttling machine from favouring whichever ran first.

``--json`` alone prints the results as one JSON document on stdout instead of
the table; ``--json FILE.json`` writes the document to the file and prints
the table.  The document records the command line and the commit of the
checkout it ran from (when there is one), so that ``benchmarks/table.py``
can say what made each number.  Progress (one line per size) goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

ROUTINES = ("lu", "gemm", "syrk", "getrf", "potrf", "getrs", "potrs")
#: the solves' routines: --nrhs right-hand sides (default one), the factor made once, untimed
SOLVES = ("getrs", "potrs")
PLOT_TYPES = (".png", ".svg", ".pdf")
ROUTINE_HELP = ("lu: every LU variant, per-pivot and blocked; getrf: the blocked LU; gemm: "
                "C = A·B; syrk: one triangle of A·Aᵀ; potrf: Cholesky; getrs, potrs: "
                "lu_solve and cho_solve of --nrhs right-hand sides with the factor already "
                "made (default lu). "
                "oclla bench wls reproduces Jung & O'Leary's tables (oclla bench wls --help); "
                "oclla bench update, potri and logdet measure the Cholesky update, inverse "
                "and log-determinant (their own --help)")

# Vector (non-tensor-core) peaks in GFLOP/s of the SXM parts, by name substring.
PEAKS = {
    "H100": {"float32": 66900.0, "float64": 33500.0},
    "H200": {"float32": 66900.0, "float64": 33500.0},
}


def flops(routine: str, n: int, nrhs: int = 1) -> float:
    """LAPACK's operation count of ``routine`` on order n (the solves: of ``nrhs``
    right-hand sides)."""
    if routine in ("lu", "getrf"):
        return 2.0 * n ** 3 / 3.0 - n ** 2 / 2.0 - n / 6.0
    if routine == "gemm":
        return 2.0 * n ** 3
    if routine == "syrk":
        return float(n) * n * (n + 1)
    if routine == "potrf":
        return n ** 3 / 3.0 + n ** 2 / 2.0 + n / 6.0
    if routine in SOLVES:
        return 2.0 * n * n * nrhs
    raise ValueError(routine)


def _right_hand_side(n: int, dtype, nrhs: int) -> np.ndarray:
    """The solves' right-hand side, seeded: a vector (``nrhs`` 1) or n x nrhs."""
    shape = (n,) if nrhs == 1 else (n, nrhs)
    return np.random.default_rng(1).standard_normal(shape).astype(dtype)


def peak(device_name: str, dtype: str) -> float | None:
    for key, values in PEAKS.items():
        if key in device_name:
            return values.get(dtype)
    return None


# ---- references -----------------------------------------------------------------------

def _cuda_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:                                   # no CuPy, no driver, no device
        return False


class _Reference:
    """What both references share: the solves' operands, made once per matrix."""

    def __init__(self):
        self._held = None                     # (matrix, its factor, b) of the last solve

    def solve_operands(self, a, make) -> tuple:
        """(factor, b) for the matrix ``a``: ``make(a)`` at the first call with it (the
        untimed warm-up), kept for the timed calls after it (only the last matrix's)."""
        if self._held is None or self._held[0] is not a:
            self._held = (a, *make(a))
        return self._held[1:]


class _CpuReference(_Reference):
    name = "numpy/scipy (CPU)"

    def prepare(self, host):
        return host

    def run(self, routine, a, nrhs=1):
        import scipy.linalg as sl
        from scipy.linalg import blas
        if routine in SOLVES:
            factor, b = self.solve_operands(a, lambda a: (
                sl.lu_factor(a, check_finite=False) if routine == "getrs"
                else (sl.cholesky(a, lower=True, check_finite=False), True),
                _right_hand_side(a.shape[0], a.dtype, nrhs)))
            solve = sl.lu_solve if routine == "getrs" else sl.cho_solve
            return solve(factor, b, check_finite=False)
        if routine in ("lu", "getrf"):
            return sl.lu_factor(a, check_finite=False)
        if routine == "gemm":
            return a @ a
        if routine == "syrk":
            syrk = blas.ssyrk if a.dtype == np.float32 else blas.dsyrk
            return syrk(1.0, a, lower=1)
        if routine == "potrf":
            return sl.cholesky(a, lower=True, check_finite=False)
        raise ValueError(routine)

    def sync(self):
        pass


class _CudaReference(_Reference):
    name = "CuPy (cuBLAS/cuSOLVER)"

    def __init__(self):
        import cupy
        super().__init__()
        self.cupy = cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        self.name = f"CuPy (cuBLAS/cuSOLVER) on {props['name'].decode()}"

    def prepare(self, host):
        return self.cupy.asarray(host)

    def run(self, routine, a, nrhs=1):
        cp = self.cupy
        if routine in SOLVES:
            import cupyx.scipy.linalg as csl
            factor, b = self.solve_operands(a, lambda a: (
                csl.lu_factor(a, check_finite=False) if routine == "getrs"
                else cp.linalg.cholesky(a),
                cp.asarray(_right_hand_side(a.shape[0], a.dtype, nrhs))))
            if routine == "getrs":
                return csl.lu_solve(factor, b, check_finite=False)
            y = csl.solve_triangular(factor, b, lower=True, check_finite=False)
            return csl.solve_triangular(factor, y, lower=True, trans="T", check_finite=False)
        if routine in ("lu", "getrf"):
            import cupyx.scipy.linalg as csl
            return csl.lu_factor(a, check_finite=False)
        if routine == "gemm":
            return cp.matmul(a, a)
        if routine == "syrk":
            from cupy import cublas
            return cublas.syrk("N", a, lower=True)
        if routine == "potrf":
            return cp.linalg.cholesky(a)
        raise ValueError(routine)

    def sync(self):
        self.cupy.cuda.Device().synchronize()


def reference(kind: str):
    """The reference implementation for ``kind`` ("auto", "cpu" or "cuda")."""
    if kind == "cuda" or (kind == "auto" and _cuda_available()):
        return _CudaReference()
    return _CpuReference()


# ---- oclla side -----------------------------------------------------------------------

def _oclla_runs(routine: str, n: int, dtype, queue, max_pivot_n: int, nrhs: int):
    """{label: callable(device array) -> anything} for the oclla implementations."""
    import oclla
    from oclla.blas import gemm, syrk, view_of
    import pyopencl.array as cl_array

    def lu(method, variant=None, pivoting=None):
        return lambda a: oclla.lu_factor(a, method=method, variant=variant,
                                         pivoting=pivoting, check_finite=False, queue=queue)

    runs = {}
    if routine == "lu" and n <= max_pivot_n:
        runs["pivot faithful"] = lu("pivot", "faithful", "none")
        runs["pivot inplace"] = lu("pivot", "inplace")
        runs["pivot crout"] = lu("pivot", "crout")
        runs["pivot window"] = lu("pivot", "window")
    if routine in ("lu", "getrf"):
        runs["blocked"] = lu("blocked")
    if routine == "gemm":
        def run_gemm(a):
            c = cl_array.empty_like(a)
            gemm(queue, n, n, n, 1.0, view_of(a), view_of(a), 0.0, view_of(c), dtype=dtype)
            return c
        runs["gemm"] = run_gemm
    if routine == "syrk":
        def run_syrk(a):
            c = cl_array.empty_like(a)
            syrk(queue, n, n, 1.0, view_of(a), 0.0, view_of(c), dtype=dtype, lower=True)
            return c
        runs["syrk"] = run_syrk
    if routine == "potrf":
        runs["cholesky"] = lambda a: oclla.cholesky(a, lower=True, queue=queue)
    if routine in SOLVES:
        b = cl_array.to_device(queue, _right_hand_side(n, dtype, nrhs))
        factor = {}

        def solve(a):
            if "made" not in factor:          # the first (warm-up) call factors
                factor["made"] = (oclla.lu_factor(a, check_finite=False, queue=queue)
                                  if routine == "getrs"
                                  else oclla.cho_factor(a, check_finite=False, queue=queue))
            if routine == "getrs":
                return oclla.lu_solve(factor["made"], b, check_finite=False, queue=queue)
            return oclla.cho_solve(factor["made"], b, check_finite=False, queue=queue)
        runs["cho_solve" if routine == "potrs" else "lu_solve"] = solve
    return runs


def _matrix(routine: str, n: int, dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)).astype(dtype)
    if routine in ("potrf", "potrs"):   # symmetric, diagonally dominant: SPD, built in O(n²)
        a = (a + a.T) + np.asarray(2.0 * n, dtype) * np.eye(n, dtype=dtype)
    return a


#: Calls of each implementation back to back in one repetition where a call takes less
#: than :data:`BURST_BELOW` seconds: the repetition's time is their best.  On a GPU that
#: both oclla's OpenCL context and the reference's CUDA context use, the first call after
#: the other context's costs the switch between them, which a program that keeps to one
#: of them never pays (H200, float32 potrf n = 1024, oclla / cuSOLVER: 1.19 / 1.03 ms one
#: call a round, 1.06 / 0.87 ms the best of three back to back, 1.01-1.03 ms oclla alone;
#: benchmarks/results/nvidia-h200-2026-11-29-potrf-small-3.txt).
BURST_CALLS = 3
BURST_BELOW = 0.05


def measure(routine: str, n: int, dtype, *, queue, ref, repeat: int = 3,
            max_pivot_n: int = 4096, nrhs: int = 1) -> list[dict]:
    """Best time of each implementation on order n; one record per implementation.

    ``repeat`` rounds, the implementations interleaved in each; where the slowest
    warm-up call took less than :data:`BURST_BELOW` seconds, each implementation runs
    :data:`BURST_CALLS` calls back to back in a round (its best counts)."""
    import pyopencl.array as cl_array
    from oclla import device_info

    host = _matrix(routine, n, dtype)
    d_a = cl_array.to_device(queue, host)
    r_a = ref.prepare(host)
    runs = _oclla_runs(routine, n, dtype, queue, max_pivot_n, nrhs)
    best = {label: float("inf") for label in runs}
    best["reference"] = float("inf")

    def timed(fn, arg, sync):
        t0 = time.perf_counter()
        fn(arg)
        sync()
        return time.perf_counter() - t0

    warm = [timed(fn, d_a, queue.finish) for fn in runs.values()]   # builds, caches
    warm.append(timed(lambda a: ref.run(routine, a, nrhs), r_a, ref.sync))
    burst = BURST_CALLS if max(warm) < BURST_BELOW else 1
    for _ in range(repeat):
        best["reference"] = min(best["reference"], *(
            timed(lambda a: ref.run(routine, a, nrhs), r_a, ref.sync) for _ in range(burst)))
        for label, fn in runs.items():
            best[label] = min(best[label], *(timed(fn, d_a, queue.finish)
                                             for _ in range(burst)))

    info = device_info(queue)
    dtype_name = np.dtype(dtype).name
    pk = peak(info.name, dtype_name)
    work = flops(routine, n, nrhs)
    ref_gflops = work / best["reference"] / 1e9
    records = []
    for label, seconds in best.items():
        gflops = work / seconds / 1e9
        solves = {"nrhs": nrhs} if routine in SOLVES else {}
        records.append(dict(
            routine=routine, n=n, dtype=dtype_name, **solves,
            impl=ref.name if label == "reference" else f"oclla {label}",
            seconds=seconds, gflops=gflops,
            percent_of_peak=None if pk is None or label == "reference" else 100 * gflops / pk,
            ratio_to_reference=gflops / ref_gflops))
    return records


def _table(records: list[dict]) -> str:
    """The records as a text table; the %peak column only where a peak is known."""
    with_peak = any(r["percent_of_peak"] is not None for r in records)
    lines = [f"{'routine':11s} {'dtype':8s} {'n':>6s}  {'implementation':44s} {'ms':>10s} "
             f"{'GFLOP/s':>10s}" + (f" {'%peak':>6s}" if with_peak else "") + f" {'vs ref':>7s}"]
    for r in records:
        pk = "" if r["percent_of_peak"] is None else f"{r['percent_of_peak']:.1f}"
        name = r["routine"] + (f" x{r['nrhs']}" if r.get("nrhs", 1) > 1 else "")
        lines.append(f"{name:11s} {r['dtype']:8s} {r['n']:6d}  {r['impl'][:44]:44s} "
                     f"{1e3 * r['seconds']:10.2f} {r['gflops']:10.1f}"
                     + (f" {pk:>6s}" if with_peak else "")
                     + f" {r['ratio_to_reference']:7.2f}")
    return "\n".join(lines)


def _plot(records: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    keys = sorted({(r["routine"], r["dtype"], r["impl"]) for r in records})
    for routine, dtype, impl in keys:
        pts = sorted((r["n"], r["gflops"]) for r in records
                     if (r["routine"], r["dtype"], r["impl"]) == (routine, dtype, impl))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                label=f"{routine} {dtype}: {impl}")
    ax.set_xlabel("n")
    ax.set_ylabel("GFLOP/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``oclla bench``."""
    from .cli import add_device_option
    ap = argparse.ArgumentParser(
        prog="oclla bench",
        description="GFLOP/s of oclla against the vendor or CPU reference, in the same run.")
    ap.add_argument("--version", action="version", version=_version())
    ap.add_argument("routine", nargs="?", default="lu", choices=ROUTINES, help=ROUTINE_HELP)
    ap.add_argument("--sizes", default="256,512,1024",
                    help="comma-separated orders n (default 256,512,1024)")
    ap.add_argument("--dtype", default="float32",
                    help="float32, float64 or both comma-separated (default float32)")
    ap.add_argument("--nrhs", type=int, default=1, metavar="K",
                    help="getrs, potrs: right-hand sides per solve (default 1)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed runs per implementation, best kept (default 3)")
    add_device_option(ap)
    ap.add_argument("--reference", default="auto", choices=("auto", "cpu", "cuda"),
                    help="cuda: cuBLAS/cuSOLVER through CuPy; cpu: NumPy/SciPy; auto: cuda "
                         "when CuPy sees a CUDA device, else cpu (default auto)")
    ap.add_argument("--max-pivot-n", type=int, default=4096, metavar="N",
                    help="largest n for the per-pivot LU variants, which take O(n) launches "
                         "(default 4096)")
    ap.add_argument("--json", nargs="?", const="-", metavar="FILE.json",
                    help="the results as JSON: alone, on stdout instead of the table; with "
                         "a file, written there (default: the table only)")
    ap.add_argument("--plot", metavar="FILE",
                    help="write a GFLOP/s plot to FILE (" + ", ".join(PLOT_TYPES)
                         + "; needs matplotlib: the plot extra)")
    return ap


def _version() -> str:
    from .cli import version_text
    return version_text("oclla bench")


def parse_args(argv):
    """The parsed arguments, checked (exit status 2 and one line for a bad one)."""
    ap = parser()
    args = ap.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if not args.sizes or min(args.sizes) < 1:
        ap.error("--sizes needs positive orders")
    args.dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    for d in args.dtypes:
        if d not in ("float32", "float64"):
            ap.error(f"--dtype must be float32 and/or float64, got {d!r}")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.nrhs < 1:
        ap.error("--nrhs must be at least 1")
    if args.nrhs > 1 and args.routine not in SOLVES:
        ap.error(f"--nrhs is for the solves ({', '.join(SOLVES)}), not {args.routine}")
    if args.max_pivot_n < 0:
        ap.error("--max-pivot-n must not be negative")
    if args.json not in (None, "-") and not args.json.endswith(".json"):
        ap.error(f"--json takes a file ending in .json, got {args.json!r}")
    if args.plot and os.path.splitext(args.plot)[1].lower() not in PLOT_TYPES:
        ap.error(f"--plot {args.plot}: the file must end in one of {', '.join(PLOT_TYPES)}")
    return args


def _check_environment(args) -> None:
    """Everything that would otherwise fail after the measurements (CommandError)."""
    from .cli import CommandError, check_writable
    if args.reference == "cuda" and not _cuda_available():
        raise CommandError("--reference cuda needs CuPy and a CUDA device; neither CuPy nor "
                           "a device was found (use --reference cpu)")
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path not in (None, "-"):
            check_writable(path, option)
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CommandError("--plot needs matplotlib: pip install \"oclla[plot]\" "
                               "(from a checkout: pip install \".[plot]\")") from None


def commit() -> str | None:
    """The git commit of the checkout oclla runs from, with ``-dirty`` when the working
    tree has uncommitted changes (None for an installed copy)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, ".git")):
        return None
    try:
        out = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty",
                              "--abbrev=7"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def main(argv=None) -> int:
    """Entry point of ``oclla bench``; returns the process exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "sparse":
        from .bench_sparse import main as sparse_main
        return sparse_main(argv[1:])
    args = parse_args(argv)
    from .cli import report_errors
    return report_errors("oclla bench", _run, args, argv)


def _run(args, argv) -> int:
    _check_environment(args)
    import oclla
    queue = oclla.get_queue(args.device)
    info = oclla.device_info(queue)
    ref = reference(args.reference)
    notes = []
    dtypes = []
    for dtype in args.dtypes:
        if dtype == "float64" and not info.fp64:
            notes.append(f"{info.name} has no float64: skipped")
        else:
            dtypes.append(dtype)
    records = []
    total, done, start = len(dtypes) * len(args.sizes), 0, time.perf_counter()
    for dtype in dtypes:
        for n in args.sizes:
            records.extend(measure(args.routine, n, np.dtype(dtype), queue=queue, ref=ref,
                                   repeat=args.repeat, max_pivot_n=args.max_pivot_n,
                                   nrhs=args.nrhs))
            done += 1
            print(f"oclla bench: {args.routine} {dtype} n={n} done ({done} of {total}, "
                  f"{time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)
    header = dict(device=info.name, driver=info.driver_version, platform=info.platform,
                  reference=ref.name, date=datetime.date.today().isoformat(),
                  routine=args.routine, command=" ".join(["oclla bench"] + argv),
                  commit=commit(), notes=notes)
    document = json.dumps(dict(header, records=records), indent=1)
    if args.json == "-":
        print(document)
    else:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                fh.write(document + "\n")
        print(f"device: {info.name} ({info.platform}, driver {info.driver_version})")
        print(f"reference: {ref.name}; {header['date']}")
        print(_table(records))
        for note in notes:
            print(f"note: {note}")
    if args.plot:
        _plot(records, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
