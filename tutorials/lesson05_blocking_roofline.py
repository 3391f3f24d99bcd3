# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lesson 5 — Blocking: BLAS-3, arithmetic intensity and the roofline
#
# Lesson 3 left us with a per-pivot LU that launches one or two short kernels
# per pivot, each
# reading and writing the whole active block to do two flops per entry. Real
# libraries are much faster because they reorganise the same arithmetic into
# **matrix–matrix products**. In this lesson you will:
#
# 1. count flops and bytes for the three BLAS levels: **arithmetic intensity**;
# 2. measure your device's ceilings: bandwidth from cache and from main
#    memory, and arithmetic speed, each with a kernel written for the purpose;
# 3. draw its **roofline**, predict where the per-pivot LU lands, and check;
# 4. see how **blocked LU** turns most of its work into GEMM, and race it
#    against scipy (LAPACK on the CPU).

# %%
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.linalg

import oclla
from _checks.lesson05 import (check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import pyplot, save

queue = oclla.get_queue()
print("device:", oclla.device_info(queue).describe())
rng = np.random.default_rng(0)


def wall_times(fn, runs):
    """Wall times of ``runs`` calls of ``fn()``, after one warm-up call."""
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def best_of(fn, repeats=3):
    """Shortest wall time of ``fn()`` over a few runs."""
    return min(wall_times(fn, repeats))


# %% [markdown]
# ## 1. Flops per byte
#
# The **arithmetic intensity** of a computation is the number of floating
# point operations it does per byte it must move to or from memory:
#
# $$I = \frac{\text{flops}}{\text{bytes}}.$$
#
# With $n$-vectors and $n \times n$ matrices of 4-byte floats, each input read
# once and each output written once:
#
# | level | example | flops | bytes | intensity |
# |---|---|---|---|---|
# | BLAS-1 | $y \leftarrow \alpha x + y$ | $2n$ | $3 \cdot 4n$ | $1/6$ |
# | BLAS-2 | rank-1 update $A \leftarrow A - \ell u^T$ | $2n^2$ | $2 \cdot 4n^2$ | $1/4$ |
# | BLAS-3 | $C \leftarrow A B$ | $2n^3$ | $3 \cdot 4 n^2$ | $n/6$ |
#
# Levels 1 and 2 do a fixed, small amount of work per byte, whatever $n$.
# Level 3 does $O(n)$ flops per byte: each number loaded can be reused $n$
# times, if the kernel keeps it in fast memory (registers, local memory,
# cache) between uses. That is what `kernels_cl/gemm.cl` does with its tiles.
#
# The per-pivot LU of Lesson 3 is a sequence of rank-1 updates: BLAS-2.
#
# ## 2. Measuring the ceilings
#
# A roofline needs two kinds of ceiling, both *measured* on this device, each
# with a kernel written for that purpose (not the kernels we want to judge):
#
# * **bandwidth**: a streaming kernel that does almost no arithmetic;
# * **compute**: a kernel that does almost nothing but arithmetic.
#
# Both are short OpenCL kernels, built here with pyopencl. The streaming one
# computes $y \leftarrow a x + y$ on `float4` vectors (12 bytes moved per
# 2 flops per number), one work-item per vector: thousands of work-groups,
# which the device spreads over all its cores or multiprocessors. (On a CPU
# device a work-group runs as a loop over its items on one core, so adjacent
# items touch adjacent memory there too.)

# %%
STREAM_SRC = """
__kernel void stream_axpy(const float a, __global const float4 *x, __global float4 *y,
                          const int n4)
{
    const int i = get_global_id(0);
    if (i < n4)
        y[i] = a * x[i] + y[i];             /* 2 flops per number, 12 bytes moved */
}
"""

# Compute ceiling: each work-item keeps 8 independent chains of float8 multiply-adds in
# registers (independent, so the arithmetic units never wait for a previous result).
# Written as * and +, not mad(): the compiler fuses them where the hardware can, while
# mad() is a library call on targets without fused multiply-add (PoCL's generic x86-64
# CPU target is one, and runs it more than ten times slower).
FMA_SRC = """
__kernel void fma_chains(__global float *out, const int iters, const float s)
{
    float8 v0 = (float8)(get_global_id(0)), v1 = v0 + 1, v2 = v0 + 2, v3 = v0 + 3,
           v4 = v0 + 4, v5 = v0 + 5, v6 = v0 + 6, v7 = v0 + 7;
    for (int i = 0; i < iters; ++i) {   /* 8 chains x 8 lanes x 2 flops per iteration */
        v0 = v0 * s + s; v1 = v1 * s + s; v2 = v2 * s + s; v3 = v3 * s + s;
        v4 = v4 * s + s; v5 = v5 * s + s; v6 = v6 * s + s; v7 = v7 * s + s;
    }
    float8 t = v0 + v1 + v2 + v3 + v4 + v5 + v6 + v7;
    out[get_global_id(0)] = t.s0 + t.s7;    /* uses the result: nothing is optimized away */
}
"""
program = cl.Program(queue.context, STREAM_SRC + FMA_SRC).build()
stream_kernel = cl.Kernel(program, "stream_axpy")
fma_kernel = cl.Kernel(program, "fma_chains")
dev = queue.device
local = min(256, dev.max_work_group_size)


def median_spread(samples):
    """(median, min, max) of a list of timings."""
    return float(np.median(samples)), float(min(samples)), float(max(samples))


def stream_gbs(total_bytes, runs=7):
    """Median, min and max GB/s of stream_axpy with x and y of total_bytes together."""
    n4 = total_bytes // 2 // 16
    x = cl_array.zeros(queue, n4 * 4, np.float32)
    y = cl_array.zeros(queue, n4 * 4, np.float32)
    stream_kernel.set_args(np.float32(0.5), x.data, y.data, np.int32(n4))
    ns = []
    for _ in range(runs + 1):                      # the first run warms up
        ev = cl.enqueue_nd_range_kernel(queue, stream_kernel, (-(-n4 // local) * local,),
                                        (local,))
        ev.wait()
        ns.append(ev.profile.end - ev.profile.start)
    rates = [3 * 16 * n4 / t for t in ns[1:]]        # bytes per ns = GB/s
    return median_spread(rates)


sizes_mib = (0.25, 1, 4, 16, 64, 256)
stream = {}
print(f"{'x and y':>9} {'GB/s median':>12} {'(min – max of 7)':>18}")
for mib in sizes_mib:
    stream[mib] = stream_gbs(int(mib * 2 ** 20))
    med, lo, hi = stream[mib]
    print(f"{mib:7.2f} MiB {med:12.1f}   ({lo:6.1f} – {hi:6.1f})")
bw_dram = stream[sizes_mib[-1]][0]
bw_cache = max(stream[mib][0] for mib in sizes_mib)

# %% [markdown]
# Small arrays stay in the caches between runs, so the kernel streams from
# cache; from some size on they no longer fit and every byte comes from main
# memory (DRAM). That gives **two bandwidth ceilings**: the best cache rate
# and the rate of the largest arrays. Which one limits a kernel depends on
# the size of *its* data.
#
# Now the compute ceiling, median of 7 launches:

# %%
items = 8 * dev.max_compute_units * local          # a few work-groups per compute unit
out = cl_array.empty(queue, items, np.float32)
iters = 2048
fma_kernel.set_args(out.data, np.int32(iters), np.float32(0.999))
ns = []
for _ in range(8):
    ev = cl.enqueue_nd_range_kernel(queue, fma_kernel, (items,), (local,))
    ev.wait()
    ns.append(ev.profile.end - ev.profile.start)
peak, peak_lo, peak_hi = median_spread([items * iters * 8 * 8 * 2 / t for t in ns[1:]])
print(f"compute ceiling (float32 multiply-add chains): {peak:.1f} GFLOP/s "
      f"(min – max of 7: {peak_lo:.1f} – {peak_hi:.1f})")

n = 1024
x32 = rng.standard_normal((n, n)).astype(np.float32)
host_blas = 2 * n ** 3 / best_of(lambda: x32 @ x32) / 1e9
print(f"for reference, the host's BLAS (numpy sgemm n = {n}): {host_blas:.1f} GFLOP/s")
print(f"ridge points P/B: {peak / bw_cache:.2f} flop/byte from cache, "
      f"{peak / bw_dram:.2f} from DRAM")

# %% [markdown]
# (If the host's BLAS beats the compute ceiling, the OpenCL compiler did not
# use the widest vector instructions for the chains; the host BLAS then shows
# what the same silicon can do. Either is a *measured* roof; a datasheet peak
# is an upper bound few kernels reach.)
#
# ## 3. The roofline
#
# A kernel with intensity $I$ cannot go faster than the memory can feed it,
# $I \cdot B$, nor faster than the arithmetic units allow, $P$:
#
# $$\text{attainable GFLOP/s} = \min(P,\ I \cdot B).$$
#
# On a log–log plot this is a sloped line (memory-bound) meeting a flat roof
# (compute-bound) at the **ridge point** $I^* = P/B$. With two bandwidths
# there are two slopes: data in cache, data in DRAM.
#
# **Predict first.** The per-pivot LU of Lesson 3 is a sequence of rank-1
# updates of intensity about $1/4$ flop/byte (section 1). A float32 matrix
# of order 512 takes 1 MiB, one of order 1024 takes 4 MiB. Using the ceilings
# just measured, predict the GFLOP/s of each (over device time), and write
# them down before running the next cell:

# %%
predicted_pivot_gflops = {512: None, 1024: None}     # your predictions

# %%
def blocked_lu_bytes(n, nb):
    """Bytes a blocked LU must move at least: each block step reads and writes its
    trailing matrix once (and reads the panel and the block row that update it)."""
    total = 0
    for j in range(0, n, nb):
        rest = n - j
        total += 4 * (2 * rest * rest + 2 * rest * nb)
    return total


def lu_points(n, method, runs=5, **kw):
    """Intensity, and median/min/max GFLOP/s over device time, of 5 recorded LUs."""
    a = rng.standard_normal((n, n)).astype(np.float32)
    oclla.lu_factor(a, method=method, **kw)                       # warm-up
    rates = []
    for _ in range(runs):
        with oclla.record() as rec:
            oclla.lu_factor(a, method=method, **kw)
        run = rec.runs[-1]
        rates.append(run.flops / run.device_ns)
    moved = sum(s.bytes for s in run.steps)            # the per-pivot trace counts bytes
    if not moved:                                      # the blocked one does not: estimate
        moved = blocked_lu_bytes(n, run.params["block"])
    return run.flops / moved, median_spread(rates), run


points = {}
for n in (512, 1024):
    points["per-pivot", n] = lu_points(n, "pivot")
points["blocked", 1024] = lu_points(1024, "blocked")
pivot_launches = len(points["per-pivot", 1024][2].kernels)
print(f"{'LU':<10} {'n':>5} {'MiB':>5} {'flop/byte':>9} {'GFLOP/s median':>15} "
      f"{'(min – max)':>16} {'ceiling here':>12} {'of ceiling':>10}")
for (kind, n), (intensity, (med, lo, hi), _) in points.items():
    mib = n * n * 4 / 2 ** 20
    bw = stream[min(sizes_mib, key=lambda s: abs(np.log(s / mib)))][0]   # nearest size
    ceiling = min(peak, intensity * bw)
    print(f"{kind:<10} {n:5d} {mib:5.0f} {intensity:9.3f} {med:15.2f}   "
          f"({lo:5.2f} – {hi:5.2f}) {ceiling:12.2f} {med / ceiling:10.0%}")
for n, guess in predicted_pivot_gflops.items():
    if guess is not None:
        print(f"per-pivot n = {n}: you predicted {guess}, measured "
              f"{points['per-pivot', n][1][0]:.2f} GFLOP/s")

# %%
plt = pyplot()
if plt is not None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    intensities = np.logspace(-2, 3, 200)
    ax.loglog(intensities, np.minimum(peak, intensities * bw_cache), "k-",
              label=f"cache {bw_cache:.0f} GB/s, compute {peak:.0f} GFLOP/s")
    ax.loglog(intensities, np.minimum(peak, intensities * bw_dram), "k--",
              label=f"DRAM {bw_dram:.0f} GB/s")
    ax.axhline(host_blas, color="grey", lw=0.8, ls=":", label="host BLAS sgemm (reference)")
    for (kind, n), (intensity, (med, lo, hi), _) in points.items():
        ax.errorbar([intensity], [med], yerr=[[med - lo], [hi - med]], fmt="s" if
                    kind == "per-pivot" else "o", capsize=3, label=f"{kind} LU, n = {n}")
    ax.set_xlabel("arithmetic intensity (flop/byte)")
    ax.set_ylabel("GFLOP/s (median of 5, bars: min – max)")
    ax.set_title(f"roofline of {oclla.device_info(queue).name}")
    ax.legend(fontsize=7)
    save(fig, "lesson05_roofline.png")

# %% [markdown]
# Read the table and the plot against your prediction:
#
# * the per-pivot LU sits at about a quarter flop per byte. Its ceiling is the
#   bandwidth *at its own size*: its matrix shrinks step by step and a 1 MiB
#   or 4 MiB matrix stays in cache, so the DRAM slope is the wrong roof for
#   it. Compare its measured GFLOP/s with the "ceiling here" column: the gap
#   is what its short launches cost (Lesson 3). (A share above 100% would
#   say the roof is still wrong: the data sat in a faster cache than the
#   stream sizes measured, or the kernel reuses entries between steps);
# * the blocked LU's intensity is far higher: `blocked_lu_bytes` counts one
#   read and one write of the trailing matrix per block column, so the
#   intensity is about $n_b/4$ flop/byte instead of $1/4$, because the GEMM
#   reuses every number it loads $n_b$ times. It is no longer
#   bound by the bandwidth; how close it gets to the compute ceiling depends
#   on how well its tiles fit the device and on its panels (section 4);
# * the ridge points printed in section 2 say how much of the arithmetic a
#   kernel of intensity $1/4$ can use: at most a fraction $1/(4 I^*)$ of the
#   compute ceiling. On a CPU device they are a few flop/byte at most; on a
#   GPU, $P/B$ is typically 10 to 100 flop/byte, and a BLAS-2 algorithm
#   leaves nearly all of the arithmetic unused.
#
# ## 4. Blocked LU
#
# Split off a panel of $n_b$ columns:
#
# $$\begin{pmatrix} A_{11} & A_{12} \\ A_{21} & A_{22} \end{pmatrix}
#   = \begin{pmatrix} L_{11} & 0 \\ L_{21} & I \end{pmatrix}
#     \begin{pmatrix} U_{11} & U_{12} \\ 0 & S \end{pmatrix}.$$
#
# 1. **panel**: factor the tall $n \times n_b$ block $\begin{pmatrix}A_{11}\\A_{21}\end{pmatrix}
#    = \begin{pmatrix}L_{11}\\L_{21}\end{pmatrix} U_{11}$ (with pivoting; small, BLAS-2 inside);
# 2. **laswp**: apply the panel's row interchanges to the other columns;
# 3. **trsm**: $U_{12} = L_{11}^{-1} A_{12}$ (a triangular solve with $n_b$ rows);
# 4. **gemm**: $S = A_{22} - L_{21}\,U_{12}$, a matrix product with inner
#    dimension $n_b$: BLAS-3 with intensity growing with $n_b$;
# 5. repeat on $S$.
#
# The arithmetic is exactly that of Gaussian elimination, in another order.
# The trace's phase totals show where the flops and the time go. Where a
# device's tuned parameters say so (GPUs), `lu_factor` takes a matrix this
# small as one panel, leaf after leaf (the end of this section says how), and
# its trace has no separate `gemm` steps; asking for the block size
# (`block=128`) takes the five steps above on every device:

# %%
n = 1024
_, _, blocked = lu_points(n, "blocked", runs=1, block=128)    # one recorded run
print(f"blocked LU, n = {n}, block = {blocked.params['block']}: {len(blocked.kernels)} kernels "
      f"(the per-pivot LU of section 3 launched {pivot_launches})")
print(f"{'phase':<6} {'steps':>5} {'kernels':>7} {'flops':>8} {'device time':>11} {'GFLOP/s':>8}")
for phase, (steps, kernels, ns, flops) in blocked.phase_totals().items():
    rate = f"{flops / ns:8.2f}" if flops else f"{'':8}"
    print(f"{phase:<6} {steps:5d} {kernels:7d} {flops / blocked.flops:8.1%} "
          f"{ns / blocked.device_ns:11.1%} {rate}")

# %%
totals = blocked.phase_totals()
print(f"share of the flops in GEMM: {totals['gemm'][3] / blocked.flops:.1%}, "
      f"of the device time: {totals['gemm'][2] / blocked.device_ns:.1%}")

# %% [markdown]
# Most of the flops are in the GEMM phase (the share printed above;
# Exercise 4 asks for another size), which runs at GEMM speed.
# What is left costs more than its flops suggest: the panel, a narrow BLAS-2
# factorization on the critical path, and `laswp`, pure data movement with no
# flops at all. Fast libraries hide them behind the GEMM of the previous
# block ("look-ahead"). The row interchanges can also be left undone: keep a
# row map (which memory row holds logical row $i$), let every kernel read and
# write rows through it, and move the rows once at the end. Then a panel's
# pivoting permutes $n$ integers instead of $n^2$ matrix entries. oclla's GPU
# path does this for its last panel (`kernels_cl/lu_flat.cl`), where the
# leaves are short and a pass over all columns per leaf would cost as much as
# the leaf itself. Its look-ahead is a single launch: each leaf's launch also
# carries the previous leaf's update, the leaf's own work-group applying it to
# the leaf's columns as it loads them while the other work-groups update the
# rest, so the update costs no launch and hides behind the leaf.
#
# ### The block size is a trade-off
#
# Count the work for $n_b$: the panels do about $n^2 n_b/2$ flops, all
# BLAS-2 and on the critical path; the trailing GEMMs do the rest, with inner
# dimension $n_b$, so their intensity grows with $n_b$ (each loaded number is
# reused about $n_b$ times). Small $n_b$: fast panels, but GEMMs that are
# nearly rank-1 updates (we are back at Lesson 3). Large $n_b$: efficient
# GEMMs, but more of the work in the slow panel and fewer, larger steps.
# In the limit $n_b = n$ everything is one panel. Recursive LU splits the
# panel itself in two halves the same way, down to a few columns, so that
# even the panel's work is mostly GEMM. Measure the trade-off (device time,
# median of 3):

# %%
print(f"{'block':>5} {'steps':>5} {'kernels':>7} {'panel share of time':>19} "
      f"{'GFLOP/s':>8}")
a = rng.standard_normal((1024, 1024)).astype(np.float32)
for nb in (16, 32, 64, 128, 256):
    oclla.lu_factor(a, block=nb)                  # warm-up (builds the kernels)
    runs = []
    for _ in range(3):
        with oclla.record() as rec:
            oclla.lu_factor(a, block=nb)
        runs.append(rec.runs[-1])
    run = sorted(runs, key=lambda r: r.device_ns)[1]
    phases = run.phase_totals()
    print(f"{nb:5d} {phases['panel'][0]:5d} {len(run.kernels):7d} "
          f"{phases['panel'][2] / run.device_ns:19.1%} {run.flops / run.device_ns:8.2f}")

# %% [markdown]
# oclla's default block size is the one its tuning found best for the device;
# the table shows how flat or steep the optimum is on yours.
#
# ## 5. The race: per-pivot, blocked, scipy
#
# GFLOP/s of an LU use the standard count $\tfrac23 n^3$ (LAPACK's exact
# formula below), so every method is measured against the same work.

# %%
def lu_flops(n):
    return 2 * n ** 3 / 3 - n ** 2 / 2 - n / 6


def median_wall(fn, runs=5):
    """Median wall time of ``fn()`` over ``runs`` runs after a warm-up."""
    return float(np.median(wall_times(fn, runs)))


print(f"{'n':>5} {'per-pivot':>10} {'blocked':>10} {'scipy':>10}   GFLOP/s, median of 5 "
      f"(blocked/per-pivot, blocked/scipy)")
margins = {}
for n in (256, 512, 1024):
    a = rng.standard_normal((n, n)).astype(np.float32)
    t_pivot = median_wall(lambda: oclla.lu_factor(a, method="pivot"), runs=5 if n < 1024 else 3)
    t_blocked = median_wall(lambda: oclla.lu_factor(a))
    t_scipy = median_wall(lambda: scipy.linalg.lu_factor(a))
    rates = [lu_flops(n) / t / 1e9 for t in (t_pivot, t_blocked, t_scipy)]
    margins[n] = rates[1] / rates[0]
    print(f"{n:5d} {rates[0]:10.2f} {rates[1]:10.2f} {rates[2]:10.2f}   "
          f"({margins[n]:.1f}, {rates[1] / rates[2]:.2f})")
ordered = [margins[n] for n in sorted(margins)]
print("blocked over per-pivot:", " -> ".join(f"{v:.1f}x" for v in ordered),
      "(grows with n)" if all(b > a for a, b in zip(ordered, ordered[1:]))
      else "(not monotonic in n on this run)")

# %% [markdown]
# These are wall times from the host, including copying the matrix to the
# device and back, as a user would see them. Blocking beats the per-pivot
# loop; whether the margin grows steadily with $n$ depends on the device and
# on how busy it is (the last line says what this run shows: on a shared
# CPU, caches and other programs make it jump). Against scipy the comparison is unfair
# on purpose: here both run on the *same CPU*, LAPACK with hand-tuned assembly
# kernels, oclla through a portable OpenCL compiler. On a GPU, which has far
# more arithmetic than the host, the blocked variant is the one that can use
# it.
#
# **The vendor library.** On an NVIDIA machine with CuPy installed, the
# next cell adds cuSOLVER's LU (through `cupyx.scipy.linalg.lu_factor`) to the
# race; elsewhere it says so and moves on.

# %%
try:
    import cupy
    import cupyx.scipy.linalg as cupy_linalg
    have_cupy = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:      # not installed, or no CUDA device
    have_cupy = False
if have_cupy:
    for n in (1024, 4096):
        a_gpu = cupy.asarray(rng.standard_normal((n, n)).astype(np.float32))

        def vendor_lu(a_gpu=a_gpu):
            cupy_linalg.lu_factor(a_gpu)
            cupy.cuda.Device().synchronize()

        print(f"cuSOLVER LU n = {n}: {lu_flops(n) / best_of(vendor_lu) / 1e9:.1f} GFLOP/s")
else:
    print("CuPy with a CUDA device is not available here: no vendor GPU library to compare.")

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** The blocked LU's trailing update
# $S = A_{22} - L_{21}U_{12}$, in float32, with $A_{22}$ of order $m = 1024$
# and $n_b = 64$: what is its arithmetic intensity (flop/byte), counting
# $A_{22}$ read once and $S$ written once (over it), $L_{21}$ and $U_{12}$ read
# once? (Section 3 said "about $n_b/4$"; give the exact value.)

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** The per-pivot LU in *float64*: what is the arithmetic
# intensity of its rank-1 update $a_{ij} \leftarrow a_{ij} - \ell_i u_j$, per
# entry of $A$ (one read, one write; ignore the vectors)?

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Write `attainable_gflops(intensity, peak_gflops,
# bandwidth_gbs)`: the roofline's bound for a kernel of the given intensity.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** Record a blocked LU of a $512 \times 512$ float32 matrix
# with `block=64` and give the fraction of its flops done in the `gemm`
# phase. (`run.phase_totals()` and `run.flops` help.)

# %%
answer_4 = None
check_exercise_4(answer_4)
