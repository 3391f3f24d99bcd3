"""Where one blocked LU's time goes between its panels (profiling clock, one recorded call).

    python benchmarks/lu_timeline.py float32:4096 float64:8192 [--window 5]

For each dtype:order the device's span, the time it ran some kernel (both queues of
the look-ahead together) and the time it ran none, the gaps grouped by the kernels
on either side; then the panels (getrf_grid, getf2_rows, getf2_leaf, leaf_columns):
their kernel time, the time from each panel's end to the next one's start (what
the panels wait for, grouped by the first kernels in between), and with
``--window k`` every kernel that overlaps the k-th grid panel or the time up to
the next one (start and end relative to that panel's end, in us, and when the host
enqueued it: a kernel enqueued after the one before it ended waited for the host).
"""

import argparse
import collections

import numpy as np
import pyopencl.array as cl_array
import oclla

PANELS = ("getrf_grid", "getf2_rows", "getf2_leaf", "leaf_columns")


def recorded(queue, n: int, dtype) -> list:
    """The kernels of one lu_factor of a random matrix (after two unrecorded calls), by
    start, each with its step's phase."""
    a = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
    src = cl_array.to_device(queue, a)
    for _ in range(2):
        oclla.lu_factor(src.copy(), overwrite_a=True, check_finite=False)
    queue.finish()
    with oclla.record() as rec:
        oclla.lu_factor(src.copy(), overwrite_a=True, check_finite=False)
        queue.finish()
    kernels = [(k, s.phase) for s in rec.runs[-1].steps for k in s.kernels if k.start and k.end]
    return sorted(kernels, key=lambda t: t[0].start)


def idle_gaps(kernels) -> tuple:
    """(busy ns, {"before -> after[phase]": (ns, count)}) over the union of the kernels'
    intervals."""
    busy, gaps = 0, collections.defaultdict(lambda: [0, 0])
    first, last = kernels[0][0], kernels[0][0]
    start, until = first.start, first.end
    for k, phase in kernels[1:]:
        if k.start > until:
            gap = gaps[f"{last.name} -> {k.name}[{phase}]"]
            gap[0] += k.start - until
            gap[1] += 1
            busy += until - start
            start = k.start
        if k.end > until:
            until, last = k.end, k
    return busy + until - start, gaps


def report(kernels, window: int | None) -> None:
    t0, t1 = kernels[0][0].start, max(k.end for k, _ in kernels)
    busy, gaps = idle_gaps(kernels)
    print(f"   span {(t1 - t0) / 1e6:.2f} ms, some kernel running {busy / 1e6:.2f} ms, "
          f"none {(t1 - t0 - busy) / 1e6:.2f} ms, {len(kernels)} kernels")
    for key, (ns, count) in sorted(gaps.items(), key=lambda kv: -kv[1][0])[:6]:
        print(f"      none {ns / 1e6:6.2f} ms x{count:4d}  {key}")
    panels = [k for k, _ in kernels if k.name in PANELS]
    between, count = collections.Counter(), collections.Counter()
    for p, q in zip(panels, panels[1:]):
        fill = " ".join(f"{k.name}[{ph}]" for k, ph in kernels if p.end <= k.start < q.start)
        key = " ".join(fill.split()[:6])
        between[key] += q.start - p.end
        count[key] += 1
    print(f"   panels {len(panels)}: kernels {sum(k.end - k.start for k in panels) / 1e6:.2f} ms, "
          f"from each end to the next start {sum(between.values()) / 1e6:.2f} ms")
    for key, ns in between.most_common(4):
        print(f"      {ns / 1e6:6.2f} ms x{count[key]:4d} (mean {ns / count[key] / 1e3:6.1f} us) "
              f"{key or '(nothing)'}")
    grid = [k for k, _ in kernels if k.name == "getrf_grid"]
    if window is not None and window + 1 < len(grid):
        p, q = grid[window], grid[window + 1]
        print(f"   grid panel {window}: {(p.end - p.start) / 1e3:.1f} us, "
              f"the next starts {(q.start - p.end) / 1e3:.1f} us after its end")
        for k, phase in kernels:
            if k.end > p.start and k.start < q.start and k is not p:
                print(f"      {k.name:14s} [{phase:6s}] {str(k.global_size):16s} "
                      f"{(k.start - p.end) / 1e3:8.1f} .. {(k.end - p.end) / 1e3:8.1f} us, "
                      f"enqueued at {(k.queued - p.end) / 1e3:8.1f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+", metavar="DTYPE:N")
    ap.add_argument("--window", type=int, default=None, metavar="K")
    args = ap.parse_args(argv)
    queue = oclla.get_queue()
    info = oclla.device_info(queue)
    print(f"{info.name} (driver {info.driver_version}), blocked lu_factor, one recorded call")
    for case in args.cases:
        dtype, n = case.split(":")
        print(f"{dtype} n = {n}:")
        report(recorded(queue, int(n), np.dtype(dtype)), args.window)


if __name__ == "__main__":
    main()
