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
# # Lesson 12 — When the matrix does not fit
#
# Every factorization so far kept the matrix in one device buffer. That stops
# long before the device is full: OpenCL caps a single buffer at
# `CL_DEVICE_MAX_MEM_ALLOC_SIZE`, a quarter of an 80 GB H100 with NVIDIA's
# driver (19.8 GiB: a float64 matrix of order 51 000). Beyond the buffer come
# **tiles** (many buffers on one device); beyond the device's memory,
# **streaming** from host memory; beyond one device, **tasks** on several
# devices or machines. In this lesson you will:
#
# 1. watch `oclla.cholesky` choose one buffer, tiles or streaming as a device's
#    limits shrink (a device-limit profile makes a CPU look small);
# 2. write the tile Cholesky as a **task graph** (potrf, trsm, syrk, gemm), count
#    its tasks and find its critical path;
# 3. derive the **traffic** of the left-looking out-of-core factorization —
#    bytes moved against flops — and measure it;
# 4. decide **when streaming pays** from the device's speed and the bus's;
# 5. run the task graph on a small **Dask** cluster, each worker with its
#    device, and look at its tasks in time.

# %%
import time

import numpy as np

import oclla
from _checks import missing
from _checks.lesson12 import (REQUIRES, check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, pyplot, save, show, viewer_available

if missing(REQUIRES):
    raise SystemExit(f"This lesson needs {', '.join(missing(REQUIRES))}: update oclla "
                     f"and install its dask extra (pip install 'oclla[dask]').")

import oclla.distributed  # noqa: E402  (after the check: a clear message when it is missing)
from oclla import accuracy, out_of_core, tiled  # noqa: E402

queue = oclla.get_queue()
info = oclla.device_info(queue)
print(f"device: {info.name}")
print(f"largest buffer {info.max_alloc_size / 2**30:.1f} GiB, "
      f"memory {info.global_mem_size / 2**30:.1f} GiB")
for dtype in (np.float32, np.float64):
    n_max = int(np.sqrt(info.max_alloc_size / np.dtype(dtype).itemsize))
    print(f"  one {np.dtype(dtype).name} buffer holds a matrix of order {n_max}")


def spd(n, dtype=np.float64, seed=0):
    """A seeded symmetric positive definite matrix (condition number below ~10)."""
    x = np.random.default_rng(seed).standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


# %% [markdown]
# ## 1. One buffer, tiles, or streaming
#
# A **profile** (`oclla.Profile`) imposes smaller limits on the real device,
# so the same code paths run here with a few hundred rows: buffers of 1 MiB
# and 2 MiB of memory. A float64 matrix of order 300 (0.7 MB) still fits one
# buffer; order 450 (1.6 MB) does not, but its lower triangle fits the device
# in tiles; order 700 (3.9 MB, 2 MB for the triangle) fits neither and is
# streamed through the device panel by panel. `oclla.tiled.route` tells which;
# `oclla.cholesky` goes there by itself.

# %%
small = oclla.Profile(name="lesson12", max_alloc_size=1 << 20, global_mem_size=2 << 20)
previous = oclla.set_profile(small)
try:
    q = oclla.get_queue()
    for n in (300, 450, 700):
        a = spd(n)
        route = tiled.route(a, q) or "one buffer"
        t0 = time.perf_counter()
        u = oclla.cholesky(a, queue=q)
        print(f"n = {n}: {a.nbytes / 2**20:.2f} MiB -> {route:<12} "
              f"{time.perf_counter() - t0:.2f} s, backward error "
              f"{accuracy.cholesky_backward_error(a, u, False):.2f} nε")
finally:
    oclla.set_profile(previous)

# %% [markdown]
# ## 2. The tile Cholesky as tasks
#
# Cut $A$ into $t \times t$ tiles of order $b$. The right-looking tile
# algorithm is four kinds of task, each on one tile:
#
# ```
# for k = 0 .. t-1:
#     L[k][k] = potrf(A[k][k])                          A[k][k] = L[k][k]·L[k][k]ᵀ
#     L[i][k] = trsm(L[k][k], A[i][k])        i > k     A[i][k]·L[k][k]⁻ᵀ
#     A[i][i] = syrk(L[i][k], A[i][i])        i > k     A[i][i] − L[i][k]·L[i][k]ᵀ
#     A[i][j] = gemm(L[i][k], L[j][k], A[i][j])  i > j > k
# ```
#
# A task may run as soon as the tasks that wrote its inputs are done: the
# algorithm *is* a directed acyclic graph (DAG), and a scheduler — PLASMA's,
# StarPU's, Dask's — runs it on whatever devices it has.
# `oclla.distributed.task_graph(t)` lists the tasks and what each needs.

# %%
graph = oclla.distributed.task_graph(4)
for task, needs in list(graph.items())[:8]:
    print(f"{task.kind:>5} step {task.k} tile ({task.i}, {task.j})  needs "
          + (", ".join(f"{x.kind} {x.k} ({x.i}, {x.j})" for x in needs) or "nothing"))
n, b = 4096, 512
flops = {kind: 0.0 for kind in oclla.distributed.KINDS}
for task in oclla.distributed.task_graph(n // b):
    flops[task.kind] += oclla.distributed.task_flops(task, n, b)
total = sum(flops.values())
print(f"n = {n} in tiles of {b}: share of the flops "
      + ", ".join(f"{k} {v / total:.0%}" for k, v in flops.items())
      + f" (total n³/3 + n²/2 + n/6 = {total:.4g})")

# %% [markdown]
# Most flops are in gemm: that is why the tiles should be large enough for a
# fast GEMM. But the *order* of the tasks matters too: the **critical path**,
# the longest chain of tasks each needing the one before, bounds the run from
# below however many devices there are.

# %% [markdown]
# ## 3. Streaming: the traffic of the left-looking factorization
#
# When the matrix does not fit the device's memory, it stays in host memory
# and goes through the device a **block column** (panel) of width $b$ at a
# time. Left-looking: panel $j$ (columns $J = j_0 .. j_0 + b$) receives all
# the updates of the panels before it, then is factored:
#
# $$A[j_0{:}n, J] \mathrel{-}= L[j_0{:}n, 0{:}j_0]\; L[J, 0{:}j_0]^T,
# \qquad L[J, J] = \text{chol}(A[J, J]), \qquad
# L[j_0{+}b{:}n, J] = A[j_0{+}b{:}n, J]\, L[J,J]^{-T}.$$
#
# The device holds a few panels; the earlier panels $L[j_0{:}n, 0{:}j_0]$
# stream in from the host again for each panel $j$. Count:
#
# * **flops** of panel $j$'s update: $2\,(n - j_0)\,b\,j_0$;
# * **entries streamed** for it: $(n - j_0)\,j_0$;
# * so **$2b$ flops per entry** streamed, $2b/s$ per byte for $s$-byte
#   entries — independent of $n$.
#
# Summed over the panels, $\sum_j (n - j_0) j_0 \approx n^3/(6b)$ entries
# cross the bus, against $n^3/3$ flops. Compare with the in-core
# factorization: the matrix goes up once and down once ($n^2$ entries for
# $n^3/3$ flops), an intensity of $n/3$ flops per entry that grows with $n$.
# Streaming trades that for $2b$: the panel width, not the matrix, decides.
#
# `oclla.out_of_core.factor_streamed` counts what it moves. Here with
# $n = 768$ in float32 and three panel widths. Predict first: by what factor
# do the bytes uploaded change from $b = 64$ to $b = 128$?

# %%
predicted_traffic_ratio = None    # your guess: bytes at b = 128 / bytes at b = 64

# %%
n = 768
a32 = spd(n, np.float32)
model, measured = [], []
widths = (64, 128, 256)
for width in widths:
    dest = np.zeros_like(a32)
    out_of_core.factor_streamed(a32, dest, lower=True, queue=queue, tile=width)   # build
    stats = out_of_core.factor_streamed(a32, dest, lower=True, queue=queue, tile=width)
    starts = range(0, n, width)
    # panel j: its own rows j0..n uploaded once, every earlier panel but the last streamed
    predicted = sum((n - j0) * (min(width, n - j0) + max(0, j0 - width)) for j0 in starts) * 4
    model.append(predicted)
    measured.append(stats.bytes_up)
    print(f"b = {width:3d}: uploaded {stats.bytes_up / 1e6:6.2f} MB (model "
          f"{predicted / 1e6:6.2f} MB), {stats.flops / stats.bytes_up:5.1f} flop/byte "
          f"(2b/s = {2 * width / 4:5.1f} as n grows), backward error "
          f"{accuracy.cholesky_backward_error(a32, dest, True):.2f} nε")
print(f"you predicted {predicted_traffic_ratio}; measured {measured[1] / measured[0]:.2f}")

# %% [markdown]
# The count matches the derivation to the byte, with two details of the
# implementation: each panel's own rows are uploaded once, and the panel just
# factored stays on the device for the next one (it is not streamed back in).
# Doubling $b$ halves the traffic, and the flops per byte approach $2b/s$ as
# $n/b$ grows (here $n/b$ is only 3 to 12).
#
# ## 4. When streaming pays
#
# A device doing $F$ flop/s fed by a bus of $B$ bytes/s keeps computing while
# the next block arrives when the intensity beats the ratio of the two:
#
# $$\frac{2b}{s} \;\ge\; \frac{F}{B}.$$
#
# Below that width the device waits for the bus (the roofline of Lesson 5,
# with the bus as the memory). The plot puts the streaming intensity of a few
# panel widths against $F/B$ of an H100 in float64 (about 18.7 TFLOP/s for
# the tiled factorization) over pinned PCIe (about 50 GB/s) and over pageable
# memory (about 8 GB/s).

# %%
plt = pyplot()
if plt is not None:
    b_axis = np.array([64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384])
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for s, name in ((4, "float32"), (8, "float64")):
        ax.loglog(b_axis, 2 * b_axis / s, "o-", label=f"streaming, {name}: 2b/s")
    for bus, label in ((50e9, "pinned 50 GB/s"), (8e9, "pageable 8 GB/s")):
        ax.axhline(18.7e12 / bus, ls="--", color="grey")
        ax.text(b_axis[0], 18.7e12 / bus * 1.1, f"F/B, H100 float64, {label}", fontsize=8)
    ax.set_xlabel("panel width b")
    ax.set_ylabel("flop per byte over the bus")
    ax.legend(fontsize=8)
    save(fig, "lesson12_streaming.png")

# %% [markdown]
# ## 5. The tasks on a Dask cluster
#
# `oclla.distributed.cholesky` hands the task graph of Section 2 to Dask: its
# scheduler decides where each task runs and moves the tiles between workers;
# each worker runs its tasks on its own OpenCL device (a worker plugin,
# `OpenCLDevice`, picks it, or `OCLLA_DEVICE` in the worker's environment).
# Here a `LocalCluster` of two workers in this process shares the one device;
# on a real cluster each worker is a process on a host with its GPU
# (`OCLLA_DEVICE=0 dask worker tcp://scheduler:8786 --nthreads 1`), and
# `processes=True` gives each worker its own process here too.
#
# Every task copies its tiles to the device and back: with tiles of 128 the
# run is dominated by that and by the scheduler, not by flops. The factor is
# the same as in one process, to the last bit.

# %%
from distributed import Client, LocalCluster  # noqa: E402

n, b = 512, 128
a = spd(n)
runs = []
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=None) as cluster, Client(cluster) as client:
    client.register_plugin(oclla.distributed.OpenCLDevice())
    oclla.distributed.cholesky(a, lower=True, tile=b, client=client)       # build, warm
    t0 = time.perf_counter()
    factor = oclla.distributed.cholesky(a, lower=True, tile=b, client=client, runs=runs)
    seconds = time.perf_counter() - t0
print(f"n = {n}, tiles of {b}: {len(runs)} tasks in {seconds:.2f} s, backward error "
      f"{accuracy.cholesky_backward_error(a, factor, True):.2f} nε")
print("same factor as in this process:",
      np.array_equal(factor, oclla.distributed.cholesky(a, lower=True, tile=b)))
for lane in sorted({r.lane for r in runs}):
    mine = [r for r in runs if r.lane == lane]
    print(f"  worker {lane}: {len(mine)} tasks, busy {sum(r.stop - r.start for r in mine):.3f} s")

# %% [markdown]
# The viewer's tile-task view draws such a run: the tile grid coloured by the
# last task that wrote each tile, the DAG by depth, and the tasks against time,
# one lane per worker, coloured by their step $k$ (StarVZ's picture). Open it
# with `python -m oclla.viewer.tiles_view --n 512 --tile 128`.

# %%
if viewer_available():
    from PySide6 import QtWidgets

    from oclla.viewer import tiles
    from oclla.viewer.tiles_view import TilesView
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    view = TilesView()
    view.resize(1200, 420)
    view.set_run(tiles.from_runs(n, b, runs))
    view.grab().save(str(output_dir() / "lesson12_tasks.png"))
    show(output_dir() / "lesson12_tasks.png")
else:
    print("(figure skipped: the viewer is not installed; pip install 'oclla[viewer]')")

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** How many tasks does the tile Cholesky of $8 \times 8$ tiles
# run? Count per step, then check with `len(oclla.distributed.task_graph(8))`.

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** The critical path: how many tasks lie on the longest chain
# of the DAG of $8 \times 8$ tiles (each needing the one before)? With enough
# devices, that many task times is as fast as the factorization can go.

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** The left-looking out-of-core Cholesky in float64 with panels
# of $b = 2048$ columns: how many flops does it do per byte it streams from
# host memory (for $n \gg b$)? Derive it from panel $j$'s update.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** A device runs the tiled float64 Cholesky at
# $F = 18.7$ TFLOP/s and its bus carries $B = 50$ GB/s. What is the smallest
# panel width $b$ for which streaming keeps the device busy? (A number; it
# need not be whole.)

# %%
answer_4 = None
check_exercise_4(answer_4)
