"""Jung & O'Leary's Tables 1 and 2: weighted least squares with mixed-precision refinement.

Problems (the paper's section 5.3): A of m x n, n = 2m, and b uniform in
[0, 1]; D² uniform in [0, 1] (Table 1) or with diagonal 10^(−4+8i/(n−1)),
i = 0..n−1 (Table 2, ill-conditioned).  tol = 1e-8, at most 100 refinement
steps.  Columns, for each m, ours beside the paper's:

* relative error ‖x − x_CPU‖/‖x_CPU‖ of x0 (float32 factor) and of the
  refined x, against a float64 CPU solution;
* refinement steps;
* device times: x0 (transfer of A and d2, assembly, factorization, first
  solve), refinement, total;
* CPU time of the float64 normal-equations solve (numpy product for
  A·D²·Aᵀ, scipy ``cho_factor``/``cho_solve``) and the speedup CPU / total.

When CuPy sees a CUDA device, a line gives the float64 normal-equations solve
on it (cuBLAS product, cuSOLVER Cholesky) in the same run.

Run as ``oclla bench wls --sizes 512,1024`` (or ``python -m oclla.bench_wls``,
or through ``benchmarks/wls_tables.py``); :func:`main` takes the argument
list.  ``--json`` follows ``oclla bench``: alone it prints the rows as JSON
instead of the tables, with a file it writes them there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
import scipy.linalg as sla
from scipy.linalg import LinAlgWarning

from ._bench import cupy_best_of, cupy_or_none
from ._device import device_info, get_queue
from .wls import wls_solve

PAPER_SIZES = (512, 1024, 1536, 2048)
COLUMNS = ("err_x0", "err_refined", "iterations", "x0_s", "refine_s", "total_s", "cpu_s",
           "speedup")
#: The paper's Tables 1 and 2 (GeForce 7800 GTX against a 3.0 GHz Xeon running MATLAB/MKL).
PAPER = {
    1: {512: (3.11e-04, 3.37e-13, 4, 0.39, 0.02, 0.41, 0.20, 0.49),
        1024: (3.10e-04, 4.25e-13, 4, 0.49, 0.04, 0.53, 1.03, 1.94),
        1536: (4.61e-04, 6.96e-13, 4, 1.33, 0.09, 1.42, 3.41, 2.40),
        2048: (1.01e-03, 1.76e-12, 5, 2.99, 0.22, 3.21, 7.95, 2.48)},
    2: {512: (2.92e-02, 1.16e-10, 7, 0.36, 0.02, 0.38, 0.20, 0.53),
        1024: (7.19e-02, 2.01e-10, 10, 0.48, 0.10, 0.58, 1.05, 1.81),
        1536: (9.35e-02, 2.37e-10, 13, 1.33, 0.30, 1.63, 3.41, 2.09),
        2048: (1.13e-01, 3.41e-10, 15, 3.00, 0.66, 3.66, 7.98, 2.18)},
}
TITLES = {1: "Table 1: randomly generated weighted least squares",
          2: "Table 2: randomly generated ill-conditioned weighted least squares"}


def problem(m: int, table: int, seed: int = 0):
    """(A, d2, b) of the paper's generator for Table 1 or 2, n = 2m, float64."""
    n = 2 * m
    rng = np.random.default_rng(seed + 1000 * table + m)
    a = rng.random((m, n))
    b = rng.random(n)
    if table == 1:
        d2 = rng.random(n)
    else:
        d2 = 10.0 ** (-4.0 + 8.0 * np.arange(n) / max(n - 1, 1))
    return a, d2, b


def cpu_solve(a, d2, b):
    """The float64 CPU solution of the normal equations and its wall time."""
    t = time.perf_counter()
    c = (a * d2) @ a.T
    x = sla.cho_solve(sla.cho_factor(c, lower=True, check_finite=False), a @ (d2 * b),
                      check_finite=False)
    return x, time.perf_counter() - t


def cupy_solve_time(cp, a, d2, b) -> float:
    """Wall time of the float64 normal-equations solve on the CUDA device (data resident):
    cuBLAS for A·D²·Aᵀ, cuSOLVER for the Cholesky factor and the triangular solves."""
    from cupyx.scipy.linalg import solve_triangular
    da, dd, db = cp.asarray(a), cp.asarray(d2), cp.asarray(b)

    def solve():
        l = cp.linalg.cholesky((da * dd) @ da.T)
        y = solve_triangular(l, da @ (dd * db), lower=True)
        return solve_triangular(l, y, lower=True, trans="T")
    return cupy_best_of(cp, solve, repeat=3, warmup=1)


def run_row(m: int, table: int, *, queue, seed: int = 0, tol: float = 1e-8,
            max_iter: int = 100, packed: bool = False, cp=None) -> dict:
    """One row of Table 1 or 2: our numbers (and CuPy's time when ``cp`` is given)."""
    a, d2, b = problem(m, table, seed)
    x_cpu, cpu_s = cpu_solve(a, d2, b)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LinAlgWarning)
        res = wls_solve(a, d2, b, tol=tol, max_iter=max_iter, packed=packed, queue=queue)
    ref = np.linalg.norm(x_cpu)
    t = res.timings
    x0_s = t["assembly"] + t["factorization"] + t["solve"]
    row = dict(m=m, n=2 * m, table=table,
               err_x0=float(np.linalg.norm(res.x0 - x_cpu) / ref),
               err_refined=float(np.linalg.norm(res.x - x_cpu) / ref),
               iterations=res.iterations, x0_s=x0_s, refine_s=t["refinement"],
               total_s=t["total"], cpu_s=cpu_s, speedup=cpu_s / t["total"],
               converged=res.converged, dtype=np.dtype(res.dtype).name,
               fallback=res.fallback, timings=dict(t),
               warnings=[str(w.message) for w in caught])
    if cp is not None:
        row["cupy_s"] = cupy_solve_time(cp, a, d2, b)
    return row


def _line(label: str, values, extra: str = "") -> str:
    e0, e1, it, x0, rf, tot, cpu, sp = values
    return (f"{label:>12} {e0:10.2e} {e1:12.2e} {it:6d} {x0:9.3f} {rf:9.3f} {tot:9.3f} "
            f"{cpu:8.3f} {sp:8.2f}{extra}")


def format_table(table: int, rows: list, device: str) -> str:
    head = (f"{'m':>5} {'':>6} {'err(x0)':>10} {'err(refined)':>12} {'iters':>6} "
            f"{'x0 [s]':>9} {'refine[s]':>9} {'total[s]':>9} {'CPU [s]':>8} {'speedup':>8}")
    out = [TITLES[table], f"ours: {device}; paper: GeForce 7800 GTX vs 3.0 GHz Xeon (MATLAB)",
           head]
    for row in rows:
        note = ""
        if row["fallback"]:
            note = f"  [{row['dtype']} fallback]"
        elif not row["converged"]:
            note = "  [not converged]"
        out.append(f"{row['m']:>5}" + _line("ours", [row[c] for c in COLUMNS], note)[5:])
        paper = PAPER[table].get(row["m"])
        if paper:
            out.append(" " * 5 + _line("paper", paper)[5:])
        if "cupy_s" in row:
            out.append(" " * 5 + f"{'cupy f64':>12}   total {row['cupy_s']:.3f} s "
                       f"(speedup vs CPU {row['cpu_s'] / row['cupy_s']:.2f})")
    return "\n".join(out)


def _sizes(text: str) -> list:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes integers separated by commas, "
                                         f"got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError("--sizes needs at least one positive size")
    return sizes


def _tables(text: str) -> list:
    try:
        tables = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        tables = []
    if not tables or not set(tables) <= {1, 2}:
        raise argparse.ArgumentTypeError(f"--tables takes 1, 2 or 1,2, got {text!r}")
    return tables


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``oclla bench wls``."""
    from .cli import add_device_option, version_text
    p = argparse.ArgumentParser(
        prog="oclla bench wls",
        description="Jung & O'Leary's Tables 1 and 2: weighted least squares with "
                    "mixed-precision refinement, ours beside the paper's.")
    p.add_argument("--version", action="version", version=version_text("oclla bench wls"))
    p.add_argument("--sizes", type=_sizes, default=list(PAPER_SIZES),
                   help="m values, comma separated; A is m x 2m (default 512,1024,1536,2048)")
    p.add_argument("--tables", type=_tables, default=[1, 2],
                   help="which tables: 1, 2 or 1,2 (default 1,2)")
    p.add_argument("--tol", type=float, default=1e-8,
                   help="stopping tolerance of the refinement (default 1e-8)")
    p.add_argument("--max-iter", type=int, default=100,
                   help="most refinement steps (default 100)")
    p.add_argument("--packed", action="store_true",
                   help="RFP (packed) storage on the device (default: full storage)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the problem generator (default 0)")
    add_device_option(p)
    p.add_argument("--no-cupy", action="store_true",
                   help="skip the CuPy reference (default: run it when CuPy sees a CUDA "
                        "device)")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE.json",
                   help="the rows as JSON: alone, on stdout instead of the tables; with a "
                        "file, written there (default: the tables only)")
    return p


def main(argv=None) -> int:
    """Print Tables 1 and 2 (ours beside the paper's); return the exit status."""
    p = parser()
    args = p.parse_args(argv)
    if not 0 < args.tol < 1:
        p.error(f"--tol must lie in (0, 1), got {args.tol}")
    if args.max_iter < 0:
        p.error(f"--max-iter must not be negative, got {args.max_iter}")
    if args.json not in (None, "-") and not args.json.endswith(".json"):
        p.error(f"--json takes a file ending in .json, got {args.json!r}")
    from .cli import report_errors
    return report_errors("oclla bench wls", _run, args)


def _run(args) -> int:
    from .cli import check_writable
    if args.json not in (None, "-"):
        check_writable(args.json, "--json")
    queue = get_queue(args.device)
    info = device_info(queue)
    cp = None if args.no_cupy else cupy_or_none()
    # build every kernel once, outside the timings (more than one block of the
    # blocked potrf, so its TRSM and SYRK kernels are built too)
    warm = problem(160, 1, args.seed)
    wls_solve(*warm, packed=args.packed, queue=queue)
    cpu_solve(*warm)
    results = []
    for table in args.tables:
        rows = [run_row(m, table, queue=queue, seed=args.seed, tol=args.tol,
                        max_iter=args.max_iter, packed=args.packed, cp=cp)
                for m in args.sizes]
        results.extend(rows)
        if args.json != "-":
            print(format_table(table, rows, f"{info.name} ({info.platform})"
                               + (", packed" if args.packed else "")))
            print()
    if args.json:
        document = json.dumps({"device": info.as_dict(), "rows": results}, indent=1)
        if args.json == "-":
            print(document)
        else:
            with open(args.json, "w", encoding="utf-8") as fh:
                fh.write(document + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
