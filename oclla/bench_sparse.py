"""``oclla bench sparse``: the supernodal sparse Cholesky on Laplacians, against CHOLMOD.

Usage::

    oclla bench sparse [--sizes 2d:300,3d:20] [--methods rl,rlb] [--dtypes float64]
                       [--large 2e6,inf] [--ordering metis] [--merge relaxed,fill]
                       [--repeat 3] [--check-max 30000] [--probes 4]
                       [--device SPEC] [--json [FILE.json]]

(also ``python -m oclla.bench sparse ...`` and ``python benchmarks/sparse.py ...``).

Problems: ``2d:N`` is the 5-point Laplacian on an N x N grid (n = N²), ``3d:N`` the
7-point one on N x N x N (n = N³), ``3d27:N`` the 27-point one
(:mod:`oclla.sparse.gallery`).  Per problem, dtype, method and ``--large`` value
(the flop threshold of the BLAS-3 route, the device kind's
:data:`oclla.sparse.numeric.LARGE_FLOPS` by default; ``inf`` batches every
supernode, ``0`` sends every one to the BLAS route) and ``--merge`` rule (the
supernode merging of the analysis, :mod:`oclla.sparse._merge`: ``relaxed`` by
default, ``fill``, ``none``), one line:

* ``analyze_s``: validation + ordering + symbolic analysis + plan (host, once per
  pattern; the analysis is made once per problem and merging rule and shared by the
  lines of its dtypes, methods and thresholds, only the plan being made again);
* ``first_s``: what a first ``oclla.sparse.cholesky`` call costs: ``analyze_s`` plus
  the first numeric factorization (program builds, uploads of the tables);
* ``factor_s``: the numeric factorization alone (A's values already on the device,
  L's storage allocated once, as ``Factor.refactor`` reuses it: zero L, scatter A into
  it, every supernode; best of ``--repeat``; ends when the device is idle and the
  failure flag is read);
* ``gflops``: flops of the supernode BLAS (potrf + trsm + syrk of every supernode,
  :func:`oclla.sparse.numeric.supernode_flops`) / factor_s;
* ``large_share``: the share of the device time spent on the BLAS-3 route's
  supernodes (from one recorded run; the profiling queue's times);
* ``solve_s``: one solve with one right-hand side;
* ``nnz_l``: entries of L (the supernodal pattern, merged zeros included);
  ``fill`` = nnz_l / ref_nnz_l where the reference is CHOLMOD, whose ``L().nnz``
  counts its supernodal pattern the same way (its relaxed zeros included);
* ``err``: ‖PAPᵀ − LLᵀ‖∞/(n‖A‖∞ε) (:func:`oclla.accuracy.sparse_cholesky_backward_error`,
  ``check`` = ``exact``) where n <= ``--check-max`` (default 30000: forming LLᵀ takes
  minutes at 3-D 50³); above it the same measure on ``--probes`` random sign vectors
  (:func:`oclla.accuracy.sparse_cholesky_probe_error`, ``check`` = ``probe``, a bound
  from below: a few matrix-vector products), none with ``--probes 0``;
* the reference: CHOLMOD through scikit-sparse when it imports (supernodal, METIS
  ordering as ours where the problem's ordering is METIS; ``ref_s`` its numeric
  factorization alone, ``Factor.cholesky_inplace`` on the analysed pattern, best of
  ``--repeat``; ``ref_nnz_l`` its L's entries; ``speedup`` = ref_s / factor_s);
  else scipy's ``splu`` (SuperLU, an LU, COLAMD on A's columns: a rough yardstick
  only, not a Cholesky) and ``ref`` says which.

The device is oclla's default or ``--device``; progress goes to stderr.

A fair reference: CHOLMOD is only as fast as the BLAS it links.  scikit-sparse
(the ``bench-sparse`` extra) uses the distribution's SuiteSparse, which calls
``libblas.so.3``; on Debian that is the reference BLAS unless OpenBLAS is installed:
``apt-get install libopenblas0-pthread`` switches it (check with
``update-alternatives --display libblas.so.3-x86_64-linux-gnu``).  On 2 cores of
an EPYC, 3-D 30³ with METIS, CHOLMOD's numeric factorization took 1.19 s with the
reference BLAS and 0.43 s with OpenBLAS on one thread.  Give CHOLMOD the cores the
OpenCL device has (``OPENBLAS_NUM_THREADS=2`` against PoCL on 2 cores) and say which
BLAS it had.  The METIS ordering needs ``pymetis``; elsewhere pass ``--ordering amd``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

import numpy as np
import scipy.sparse as sp

DEFAULT_SIZES = ("2d:100", "2d:200", "3d:12", "3d:20")
#: Largest order of the exact backward error (LLᵀ formed on the host), and the random
#: vectors of the probe above it (``--check-max``, ``--probes``).
CHECK_MAX = 30000
PROBES = 4
MERGES = {"relaxed": "relaxed", "fill": "fill", "none": False}


def problem(spec: str):
    """The test matrix named ``kind:N`` (float64 CSC)."""
    from .sparse import gallery
    kind, _, size = spec.partition(":")
    if not size.isdigit():
        raise ValueError(f"problem {spec!r}: expected 2d:N, 3d:N or 3d27:N")
    n = int(size)
    if kind == "2d":
        return gallery.laplacian_2d(n)
    if kind == "3d":
        return gallery.laplacian_3d(n)
    if kind == "3d27":
        return gallery.laplacian_3d(n, points=27)
    raise ValueError(f"problem {spec!r}: expected 2d:N, 3d:N or 3d27:N")


def parse_args(argv):
    from .cli import add_device_option
    parser = argparse.ArgumentParser(
        prog="oclla bench sparse",
        description="Supernodal sparse Cholesky (oclla.sparse) on 2-D and 3-D Laplacians: "
                    "factor time, GFLOP/s of the supernode BLAS, share of the large "
                    "supernodes, against CHOLMOD (scikit-sparse) or scipy's splu.")
    parser.add_argument("--sizes", default=",".join(DEFAULT_SIZES),
                        help="problems, comma-separated: 2d:N, 3d:N, 3d27:N "
                             f"(default {','.join(DEFAULT_SIZES)})")
    parser.add_argument("--methods", default="rl,rlb", help="rl, rlb or both (default)")
    parser.add_argument("--dtypes", default="float64", help="float32, float64 or both")
    parser.add_argument("--large", default="default",
                        help="flop thresholds of the BLAS-3 route, comma-separated "
                             "('default', a number, 'inf')")
    parser.add_argument("--ordering", default="metis")
    parser.add_argument("--merge", default="relaxed",
                        help="supernode merging rules, comma-separated: relaxed (CHOLMOD's "
                             "relaxed amalgamation, the default), fill (the paper's 25 %% "
                             "least-fill rule), none")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check-max", type=int, default=CHECK_MAX,
                        help="the exact backward error up to this order (default "
                             f"{CHECK_MAX}), above it the probe's")
    parser.add_argument("--probes", type=int, default=PROBES,
                        help="random sign vectors of the check above --check-max "
                             f"(default {PROBES}; 0: no check there)")
    parser.add_argument("--no-reference", action="store_true", help="skip CHOLMOD/splu")
    parser.add_argument("--json", nargs="?", const="-", default=None,
                        help="alone: print JSON instead of the table; FILE: also write it")
    add_device_option(parser)
    args = parser.parse_args(argv)
    args.sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    args.dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    args.large = [None if v.strip() == "default" else float(v)
                  for v in args.large.split(",") if v.strip()]
    args.merge = [m.strip() for m in args.merge.split(",") if m.strip()]
    for rule in args.merge:
        if rule not in MERGES:
            parser.error(f"--merge: {rule!r} is not one of {', '.join(MERGES)}")
    for spec in args.sizes:
        problem_kind_ok(spec, parser)
    return args


def problem_kind_ok(spec: str, parser) -> None:
    kind, _, size = spec.partition(":")
    if kind not in ("2d", "3d", "3d27") or not size.isdigit():
        parser.error(f"--sizes: {spec!r} is not 2d:N, 3d:N or 3d27:N")


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def reference(a, ordering: str, repeat: int) -> dict:
    """CHOLMOD's factor time and fill (scikit-sparse), else scipy splu's time."""
    try:
        from sksparse.cholmod import cholesky as cholmod
    except ImportError:
        cholmod = None
    if cholmod is not None:
        method = {"metis": "metis", "amd": "amd", "natural": "natural"}.get(ordering, "best")
        a = sp.csc_matrix(a)
        f = cholmod(a, ordering_method=method, mode="supernodal")
        t = best_time(lambda: f.cholesky_inplace(a), repeat)     # numeric factorization
        return dict(ref="cholmod", ref_s=t, ref_nnz_l=int(f.L().nnz))
    from scipy.sparse.linalg import splu
    t = best_time(lambda: splu(sp.csc_matrix(a)), repeat)
    return dict(ref="splu", ref_s=t, ref_nnz_l=None)


def analysis(spec: str, ordering: str, merge: str = "relaxed") -> dict:
    """Problem ``spec``'s matrix, its validated lower triangle and its analysis (timed)
    with the merging rule ``merge`` (a key of :data:`MERGES`), made once per problem and
    rule and shared by every dtype, method and threshold."""
    from .sparse._input import lower_triangle
    from .sparse.symbolic import analyze_lower
    a = problem(spec)
    start = time.perf_counter()
    a_low = lower_triangle(a)
    sym = analyze_lower(a_low, ordering=ordering, merge=MERGES[merge])
    return dict(a=a, a_low=a_low, sym=sym, analyze_s=time.perf_counter() - start,
                merge=merge)


def measure(spec: str, dtype, method: str, large, *, queue, ordering: str, repeat: int,
            check_max: int, ref: dict | None, cached: dict | None = None,
            probes: int = PROBES) -> dict:
    import oclla
    import pyopencl.array as cl_array

    from . import accuracy
    from .sparse import factor, numeric
    cached = cached or analysis(spec, ordering)
    a = cached["a"].astype(dtype)
    a_low = cached["a_low"].astype(dtype)
    sym = cached["sym"]
    n = a.shape[0]
    threshold = numeric.large_threshold(queue) if large is None else large
    start = time.perf_counter()
    plan = numeric.make_plan(sym, large=threshold)
    analyze_s = cached["analyze_s"] + time.perf_counter() - start
    start = time.perf_counter()
    f = factor.Factor(sym, plan, factor._numeric(queue, sym, plan, a_low.data, a_low.dtype,
                                                 method),
                      a_low, method=method, queue=queue)
    first = analyze_s + time.perf_counter() - start
    values = cl_array.to_device(queue, a_low.data)
    storage = numeric.l_storage(queue, sym, dtype)

    def numeric_only():
        return numeric.factor(queue, sym, plan, values, dtype=dtype, method=method,
                              out=storage)

    t = best_time(numeric_only, repeat)
    with oclla.record() as rec:
        numeric_only()
    run = [r for r in rec.runs if r.algorithm == "sparse_cholesky"][-1]
    total = sum(s.device_ns for s in run.steps) or 1
    big = sum(s.device_ns for s in run.steps if s.info.get("route") == "large")
    b = np.ones(n, dtype)
    f.solve(b)
    solve_s = best_time(lambda: f.solve(b), repeat)
    flops = float(plan.flops.sum())
    row = dict(problem=spec, n=n, dtype=np.dtype(dtype).name, method=method,
               merge=cached["merge"], large=threshold, analyze_s=analyze_s,
               supernodes=f.supernodes, large_supernodes=int(plan.large.sum()),
               levels=len(plan.levels), nnz_l=f.nnz, flops=flops,
               first_s=first, factor_s=t, gflops=flops / t / 1e9, large_share=big / total,
               solve_s=solve_s)
    if n <= check_max:
        row["err"] = accuracy.sparse_cholesky_backward_error(a, f.L(), f.P())
        row["check"] = "exact"
    elif probes > 0:
        row["err"] = accuracy.sparse_cholesky_probe_error(a, f.L(), f.P(), vectors=probes)
        row["check"] = "probe"
    if ref:
        row.update(ref)
        row["speedup"] = ref["ref_s"] / t
        if ref.get("ref_nnz_l"):
            row["fill"] = f.nnz / ref["ref_nnz_l"]
    return row


COLUMNS = (("problem", "{:>9}"), ("n", "{:>8}"), ("dtype", "{:>8}"), ("method", "{:>4}"),
           ("merge", "{:>7}"),
           ("large", "{:>8.2g}"), ("supernodes", "{:>7}"), ("large_supernodes", "{:>5}"),
           ("nnz_l", "{:>10}"), ("analyze_s", "{:>9.3f}"), ("factor_s", "{:>9.4f}"),
           ("gflops", "{:>7.2f}"),
           ("large_share", "{:>6.2f}"), ("solve_s", "{:>8.4f}"), ("err", "{:>7.3f}"),
           ("check", "{:>5}"),
           ("ref", "{:>8}"), ("ref_s", "{:>8.4f}"), ("ref_nnz_l", "{:>10}"),
           ("speedup", "{:>6.2f}"), ("fill", "{:>5.3f}"))
HEADS = ("problem", "n", "dtype", "meth", "merge", "large", "snodes", "big", "nnz(L)", "analyze s",
         "factor s",
         "GFLOP/s", "big%", "solve s", "err", "check", "ref", "ref s", "ref nnz", "ref/us", "fill")


def table(rows) -> str:
    widths = [len(fmt.format(0) if "f" in fmt or "g" in fmt else fmt.format("x"))
              for _, fmt in COLUMNS]
    lines = ["  ".join(h.rjust(w) for h, w in zip(HEADS, widths))]
    for r in rows:
        cells = []
        for (key, fmt), w in zip(COLUMNS, widths):
            v = r.get(key)
            cells.append("-".rjust(w) if v is None else fmt.format(v))
        lines.append("  ".join(cells))
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    from .cli import report_errors
    return report_errors("oclla bench sparse", _run, args, argv)


def _run(args, argv) -> int:
    import oclla
    from .bench import commit
    queue = oclla.get_queue(args.device)
    info = oclla.device_info(queue)
    rows = []
    for spec in args.sizes:
        ref = None
        for merge in args.merge:
            cached = analysis(spec, args.ordering, merge)
            if ref is None and not args.no_reference:
                ref = reference(cached["a"], args.ordering, args.repeat)
            for dtype in args.dtypes:
                if dtype == "float64" and not info.fp64:
                    continue
                for method in args.methods:
                    for large in args.large:
                        row = measure(spec, np.dtype(dtype), method, large, queue=queue,
                                      ordering=args.ordering, repeat=args.repeat,
                                      check_max=args.check_max, ref=ref, cached=cached,
                                      probes=args.probes)
                        rows.append(row)
                        print(f"oclla bench sparse: {spec} {dtype} {method} {merge} "
                              f"large={row['large']:g} {row['factor_s']:.4f} s",
                              file=sys.stderr, flush=True)
    header = dict(device=info.name, driver=info.driver_version, platform=info.platform,
                  date=datetime.date.today().isoformat(), routine="sparse",
                  command=" ".join(["oclla bench sparse"] + argv), commit=commit())
    document = json.dumps(dict(header, records=rows), indent=1)
    if args.json == "-":
        print(document)
        return 0
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(document + "\n")
    print(f"{info.name.strip()} ({info.platform}); ordering {args.ordering}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
