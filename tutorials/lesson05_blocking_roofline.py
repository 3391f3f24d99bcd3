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
# Lesson 3 left us with a per-pivot LU that launches $2n$ short kernels, each
# reading and writing the whole active block to do two flops per entry. Real
# libraries are much faster because they reorganise the same arithmetic into
# **matrix–matrix products**. In this lesson you will:
#
# 1. count flops and bytes for the three BLAS levels: **arithmetic intensity**;
# 2. measure your device's memory bandwidth and matrix-multiply speed;
# 3. draw its **roofline** and place real kernels on it;
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


def best_of(fn, repeats=3):
    """Shortest wall time of ``fn()`` over a few runs (after one warm-up run)."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


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
# ## 2. Two measurements: bandwidth and GEMM speed
#
# **Bandwidth**: time a large device-to-device copy (every byte read once and
# written once).

# %%
nbytes = 64 << 20
src = cl_array.zeros(queue, nbytes // 4, np.float32)
dst = cl_array.empty_like(src)
copy_ns = []
for _ in range(4):
    event = cl.enqueue_copy(queue, dst.data, src.data)
    event.wait()
    copy_ns.append(event.profile.end - event.profile.start)
bandwidth = 2 * nbytes / min(copy_ns[1:])            # bytes per ns = GB/s
print(f"device memory bandwidth (copy of {nbytes >> 20} MiB): {bandwidth:.1f} GB/s")

# %% [markdown]
# **GEMM speed**: `oclla.blas.matmul` on device arrays runs one GEMM
# kernel (`gemm` or, on CPUs, `gemm_direct`); the trace gives its device time.

# %%
rng = np.random.default_rng(0)
gemm_points = []                      # (n, intensity, GFLOP/s)
for n in (64, 128, 256, 512, 1024):
    a = cl_array.to_device(queue, rng.standard_normal((n, n)).astype(np.float32))
    b = cl_array.to_device(queue, rng.standard_normal((n, n)).astype(np.float32))
    oclla.blas.matmul(a, b, check_finite=False)                    # warm-up
    with oclla.record() as rec:
        oclla.blas.matmul(a, b, check_finite=False)
    ns = min(k.duration_ns for k in rec.kernels if k.name.startswith("gemm"))
    gemm_points.append((n, 2 * n ** 3 / (3 * 4 * n ** 2), 2 * n ** 3 / ns))
    print(f"oclla gemm n = {n:4d}: {2 * n ** 3 / ns:7.1f} GFLOP/s")
peak_oclla = max(g for _, _, g in gemm_points)

# %% [markdown]
# For comparison, the CPU's own BLAS through numpy (on a GPU machine, compare
# with the vendor's library instead):

# %%
n = 1024
x32 = rng.standard_normal((n, n)).astype(np.float32)
peak_host = 2 * n ** 3 / best_of(lambda: x32 @ x32) / 1e9
print(f"numpy (host BLAS) sgemm n = {n}: {peak_host:.1f} GFLOP/s")

# %% [markdown]
# ## 3. The roofline
#
# A kernel with intensity $I$ cannot go faster than the memory can feed it,
# $I \cdot B$, nor faster than the arithmetic units allow, $P$:
#
# $$\text{attainable GFLOP/s} = \min(P,\ I \cdot B).$$
#
# On a log–log plot this is a sloped line (memory-bound) meeting a flat roof
# (compute-bound) at the **ridge point** $I^* = P/B$. Kernels left of the
# ridge are limited by bandwidth, kernels right of it by arithmetic.
#
# We use the best GEMM speed we measured as $P$: an honest, *measured* roof
# for oclla's kernels on this device. Then we place real kernels: the
# rank-1 updates of the per-pivot LU (the trace records flops and bytes per
# step) and the GEMMs.

# %%
m = 512
lu_matrix = rng.standard_normal((m, m)).astype(np.float32)
oclla.lu_factor(lu_matrix, method="pivot")
with oclla.record() as rec:
    oclla.lu_factor(lu_matrix, method="pivot")
pivot_run = rec.runs[-1]
rank1_flops = sum(s.flops for s in pivot_run.steps)
rank1_bytes = sum(s.bytes for s in pivot_run.steps)
rank1_gflops = rank1_flops / pivot_run.device_ns
print(f"per-pivot LU n = {m}: intensity {rank1_flops / rank1_bytes:.3f} flop/byte, "
      f"{rank1_gflops:.2f} GFLOP/s of device time")
print(f"ridge point P/B = {peak_oclla / bandwidth:.2f} flop/byte "
      f"(with the host BLAS as P: {peak_host / bandwidth:.2f})")

# %%
plt = pyplot()
if plt is not None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    intensities = np.logspace(-2, 3, 200)
    ax.loglog(intensities, np.minimum(peak_oclla, intensities * bandwidth), "k-",
              label=f"roof: oclla gemm {peak_oclla:.0f} GFLOP/s, {bandwidth:.0f} GB/s")
    ax.loglog(intensities, np.minimum(peak_host, intensities * bandwidth), "k:",
              label=f"roof with host BLAS peak {peak_host:.0f} GFLOP/s")
    ax.loglog([i for _, i, _ in gemm_points], [g for _, _, g in gemm_points], "o",
              label="oclla gemm, n = 64 … 1024")
    ax.loglog([rank1_flops / rank1_bytes], [rank1_gflops], "s",
              label=f"per-pivot LU (rank-1 updates), n = {m}")
    ax.set_xlabel("arithmetic intensity (flop/byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"roofline of {oclla.device_info(queue).name}")
    ax.legend(fontsize=8)
    save(fig, "lesson05_roofline.png")

# %% [markdown]
# Read the plot from left to right:
#
# * the rank-1 updates sit at a quarter flop per byte. Whatever the tuning,
#   they can never rise above the memory slope $I \cdot B$ there; in fact they
#   sit below it, because their short kernels also pay the launch costs of
#   Lesson 3;
# * the GEMM points lie far to the right: their intensity leaves room all the
#   way up to the compute roof. How close a kernel comes depends on how well
#   its tiles fit the device. (Their intensity here is the ideal one, each
#   matrix moved once; a tiled kernel re-reads $A$ and $B$ once per tile, so
#   its real intensity is lower, but still grows with the tile size.)
# * the dotted roof uses the host's BLAS on the same CPU as $P$: the gap
#   between the two roofs is what a carefully tuned library still gets out of
#   the same silicon;
# * on a CPU device the ridge point is low, so BLAS-2 and BLAS-3 kernels are
#   not far apart. On a GPU, $P/B$ is typically 10 to 100 flop/byte: there a
#   BLAS-2 algorithm leaves nearly all of the arithmetic unused.
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
# The trace's phase totals show where the flops and the time go:

# %%
n = 1024
big = rng.standard_normal((n, n)).astype(np.float32)
oclla.lu_factor(big)
with oclla.record() as rec:
    oclla.lu_factor(big)
blocked = rec.runs[-1]
print(f"blocked LU, n = {n}, block = {blocked.params['block']}: {len(blocked.kernels)} kernels "
      f"(the per-pivot variant launches {2 * (n - 1)})")
print(f"{'phase':<6} {'steps':>5} {'kernels':>7} {'flops':>8} {'device time':>11} {'GFLOP/s':>8}")
for phase, (steps, kernels, ns, flops) in blocked.phase_totals().items():
    rate = f"{flops / ns:8.2f}" if flops else f"{'':8}"
    print(f"{phase:<6} {steps:5d} {kernels:7d} {flops / blocked.flops:8.1%} "
          f"{ns / blocked.device_ns:11.1%} {rate}")

# %% [markdown]
# Most of the flops are in the GEMM phase (about 90% for $n = 1024$ with
# blocks of 64; Exercise 4 asks for another size), which runs at GEMM speed.
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
# ## 5. The race: per-pivot, blocked, scipy
#
# GFLOP/s of an LU use the standard count $\tfrac23 n^3$ (LAPACK's exact
# formula below), so every method is measured against the same work.

# %%
def lu_flops(n):
    return 2 * n ** 3 / 3 - n ** 2 / 2 - n / 6


print(f"{'n':>5} {'per-pivot':>10} {'blocked':>10} {'scipy':>10}   GFLOP/s (blocked/scipy)")
for n in (128, 256, 512, 1024):
    a = rng.standard_normal((n, n)).astype(np.float32)
    t_pivot = best_of(lambda: oclla.lu_factor(a, method="pivot"), repeats=2)
    t_blocked = best_of(lambda: oclla.lu_factor(a))
    t_scipy = best_of(lambda: scipy.linalg.lu_factor(a))
    rates = [lu_flops(n) / t / 1e9 for t in (t_pivot, t_blocked, t_scipy)]
    print(f"{n:5d} {rates[0]:10.2f} {rates[1]:10.2f} {rates[2]:10.2f}   "
          f"({rates[1] / rates[2]:.2f})")

# %% [markdown]
# These are wall times from the host, including copying the matrix to the
# device and back, as a user would see them. Blocking beats the per-pivot
# loop, and the margin grows with $n$. Against scipy the comparison is unfair
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
# **Exercise 1.** What is the arithmetic intensity (flop/byte) of a float32
# product $C = AB$ of $512 \times 512$ matrices, counting each of $A$ and $B$
# read once and $C$ written once?

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** What is the arithmetic intensity of the float32 rank-1
# update $a_{ij} \leftarrow a_{ij} - \ell_i u_j$, per entry of $A$ (one read,
# one write; ignore the vectors)?

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
