"""What the parts of a large program cost to build: the program and variants of its text.

    python benchmarks/build_variants.py lu_rows syrk_leaf --repeat 2
    python benchmarks/build_variants.py --list

Each variant is a program of kernels_cl/ (its source and -D options, as the library
builds it on an H100/H200 from the shipped tuned entries) with textual edits applied to
its text after the headers are inlined: a part removed (compile-only: the kernels it
gives are wrong), a loop left rolled, a function kept out of line.  Every variant is
built from source ``--repeat`` times in this process with a distinct empty kernel
appended each time (so no driver reuses an earlier build); run it with the compiler
caches off (NVIDIA: ``CUDA_CACHE_DISABLE=1``; PoCL defers most of its compiling to a
kernel's first launch, so its times here say little).  Printed per variant: the best
time and every time.  An edit whose text is not in the source stops the run (the
source changed since the variant was written).
"""

import argparse
import itertools
import os
import sys
import time

import pyopencl as cl

import oclla
from oclla import kernels_cl

LU32 = ("-DARGMAX_SCAN=8 -DINDEX64=0 -DLW=16 -DMAP=1 -DNO_PIVOT=0 -DPRECISION=32 -DPREV=1 "
        "-DROWS=4 -DSTAGE=256 -DTILE_M={tm} -DTILE_N=64 -DWG={wg} -DWPT_M=4 -DWPT_N=4")
LU64 = ("-DARGMAX_SCAN=8 -DINDEX64=0 -DLW=8 -DMAP=1 -DNO_PIVOT=0 -DPRECISION=64 -DPREV=1 "
        "-DROWS=4 -DSTAGE=256 -DTILE_M={tm} -DTILE_N=32 -DWG={wg} -DWPT_M=2 -DWPT_N=2")
SY32 = ("-DINTERLEAVE=0 -DLEAF=64 -DPRECISION=32 -DTILE_K=16 -DTILE_M=64 -DTILE_N=128 "
        "-DVEC_A=4 -DVEC_B=4 -DVEC_LOCAL=4 -DWPT_M=8 -DWPT_N=4")
SY64 = ("-DINTERLEAVE=1 -DLEAF=64 -DPRECISION=64 -DTILE_K=8 -DTILE_M=128 -DTILE_N=64 "
        "-DVEC_A=2 -DVEC_B=2 -DVEC_LOCAL=2 -DWPT_M=8 -DWPT_N=4")


def _gone(*texts):
    """Edits removing each text (a statement or macro use)."""
    return [(t, "") for t in texts]


#: The tiles of the previous leaf's update (flat_update.h): their loop over the leaf's
#: columns, unrolled as shipped.
TILE_LOOP = ("    #pragma unroll\n    for (int k = 0; k < LW; k++)\n        #pragma unroll\n"
             "        for (int i = 0; i < WPT_M; i++)")
LU_EDITS = {
    "ref": [],
    "PREV=0": "-DPREV=1>-DPREV=0",
    "ROWS=2": "-DROWS=4>-DROWS=2",
    "no column-step updates": _gone("EACH_SLOT(UPDATE, j)"),
    "no publish/take": _gone("EACH_SLOT(PUBLISH_J, j)", "EACH_SLOT(PUBLISH_P, j)",
                             "EACH_SLOT(TAKE_J, j)", "EACH_SLOT(TAKE_P, j)"),
    "no slot stores": _gone("EACH_SLOT(STORE_SLOT, js)"),
    "no slot loads": _gone("EACH_SLOT(LOAD_SLOT, js)"),
    "no rotation": _gone("EACH_SLOT(ROTATE, 0)"),
    "no tiles": [("flat_update_tile(a, lda, n, c0 - LW,", "if (0) flat_update_tile(a, lda, n, c0 - LW,")],
    "tiles out of line": [("void flat_update_tile(", "__attribute__((noinline)) void flat_update_tile(")],
    "tiles' loop rolled": [(TILE_LOOP, TILE_LOOP.replace("#pragma unroll\n    for (int k",
                                                         "#pragma unroll 1\n    for (int k", 1))],
}
SYRK_EDITS = {
    "ref": [],
    "LEAF 48": "-DLEAF=64>-DLEAF=48",
    "LEAF 32": "-DLEAF=64>-DLEAF=32",
    "no inverse": [("const int inverse = ldw > 0;", "const int inverse = 0;")],
    "no leaf": [("const int bad = factor_rows(", "const int bad = 0; if (0) factor_rows(")],
    "leaf inline": [("#define LEAF_FN __attribute__((noinline))", "#define LEAF_FN inline")],
    "gemm tile out of line": [("inline void gemm_tile(",
                               "__attribute__((noinline)) void gemm_tile(")],
    "no Z_TURN": _gone("UPTO_LEAF(Z_TURN)"),
    "no ROW_TURN": _gone("UPTO_LEAF(ROW_TURN)"),
    "no stores of the rows": _gone("UPTO_LEAF(ROW_TO_LOCAL)", "UPTO_LEAF(Z_TO_LOCAL)"),
}
SETS = {
    "lu_rows": [(f"lu_rows {d} {wg} items, {label}", "lu_rows.cl", opts.format(tm=tm, wg=wg), e)
                for d, opts in (("f32", LU32), ("f64", LU64))
                for wg, tm in ((256, 64), (512, 128)) for label, e in LU_EDITS.items()],
    "syrk_leaf": [(f"syrk_leaf {d}, {label}", "syrk_leaf.cl", opts, e)
                  for d, opts in (("f32", SY32), ("f64", SY64))
                  for label, e in SYRK_EDITS.items()],
    "others": [("gemm f32", "gemm.cl", "-DDIRECT=0 -DINDEX64=0 " + SY32, []),
               ("gemm f64", "gemm.cl", "-DDIRECT=0 -DINDEX64=0 " + SY64, []),
               ("trsm f32", "trsm.cl", "-DFEW=2 -DINDEX64=0 -DPRECISION=32 -DROWS_WIDTH=16 "
                "-DTRSM_NB=64 -DTRSM_REG=0", []),
               ("lu_grid f32", "lu_grid.cl", "-DCPI=4 -DINDEX64=0 -DNO_PIVOT=0 -DPRECISION=32 "
                "-DRPI=8 -DWX=32 -DWY=8", []),
               ("util f32", "util.cl", "-DINDEX64=0 -DPRECISION=32", [])],
}

_serial = itertools.count()


def variant_text(source: str, options: str, edits) -> tuple[str, str]:
    """(program text, options) of a variant: edits are (old, new) pairs on the text, or
    one "old>new" string on the options."""
    text = kernels_cl.read_source(source)
    if isinstance(edits, str):
        old, new = edits.split(">")
        if old not in options:
            raise SystemExit(f"{source}: option {old} not in {options}")
        return text, options.replace(old, new)
    for old, new in edits:
        if old not in text:
            raise SystemExit(f"{source}: the text to edit is gone:\n{old}")
        text = text.replace(old, new)
    return text, options


def build_seconds(ctx, text: str, options: str) -> float:
    """Seconds to build ``text`` from source (a distinct empty kernel appended)."""
    marked = text + f"\n__kernel void build_probe_{os.getpid()}_{next(_serial)}(void) {{}}\n"
    start = time.perf_counter()
    cl.Program(ctx, marked).build(options=["-cl-std=CL1.2"] + options.split())
    return time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="*", metavar="SET", help=f"of {', '.join(sorted(SETS))} "
                    "(default: all)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="list the variants and stop")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.sets) - set(SETS))
    if unknown:
        ap.error(f"unknown sets {unknown}; choose from {sorted(SETS)}")
    chosen = [v for name in (args.sets or sorted(SETS)) for v in SETS[name]]
    if args.list:
        for label, source, options, edits in chosen:
            print(f"{label:<46} {source} {variant_text(source, options, edits)[1]}")
        return 0
    queue = oclla.get_queue()
    print(f"# {queue.device.name.strip()}, driver {queue.device.driver_version}", flush=True)
    for label, source, options, edits in chosen:
        text, opts = variant_text(source, options, edits)
        times = [build_seconds(queue.context, text, opts) for _ in range(args.repeat)]
        print(f"{min(times):6.2f} s (of {', '.join(f'{t:.2f}' for t in times)})  {label}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
