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
# # Lesson 3 — Why the first version is slow
#
# The blog post of Lesson 2 ends by naming its own two problems:
#
# > "after each iteration I'm performing large copy from U into A. Also as
# > dimension of operable sub-matrix keeps decreasing after each iteration,
# > lots of work-items are just doing nothing useful."
#
# Here we *measure* both on the trace, then look at oclla's improved
# per-pivot variant and find the next bottleneck: **launch overhead**. You
# will learn to read a trace the way a performance engineer does: count the
# work, time the kernels, and look at the gaps between them.

# %%
import time

import numpy as np

import oclla
from _checks.lesson03 import (check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, pyplot, save, viewer_export


def test_matrix(n, seed=0):
    """A random float32 matrix made diagonally dominant, so no pivoting is needed."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, n)) + n * np.eye(n)).astype(np.float32)


def recorded_lu(a, variant, repeats=2):
    """Factor ``a`` with a per-pivot variant; return the fastest run's trace and wall time."""
    oclla.lu_factor(a, method="pivot", variant=variant)      # warm-up: builds the kernels
    best = None
    for _ in range(repeats):
        with oclla.record() as rec:
            t = time.perf_counter()
            oclla.lu_factor(a, method="pivot", variant=variant)
            wall = time.perf_counter() - t
        if best is None or wall < best[1]:
            best = (rec.runs[-1], wall)
    return best


# %% [markdown]
# ## 1. Idle work-items
#
# For pivot column $k$ the faithful variant launches `eliminate` over all
# $n^2$ entries, but only the entries with $r > k$ and $c \ge k$ change: an
# $(n-k-1) \times (n-k)$ block. The trace records both numbers for every
# `eliminate` step (`info["ndrange_items"]` and `info["active_items"]`).

# %%
def eliminations(run):
    """The run's per-pivot steps, in pivot order (the faithful run also has setup/combine)."""
    return [s for s in run.steps if s.phase == "eliminate"]


n = 256
faithful, wall_faithful = recorded_lu(test_matrix(n), "faithful")
print(f"{'pivot':>5} {'launched':>9} {'active':>9} {'useful':>7}   global size of eliminate")
for k in (0, 64, 128, 192, 254):
    step = eliminations(faithful)[k]
    launched, active = step.info["ndrange_items"], step.info["active_items"]
    gsize = next(kr.global_size for kr in step.kernels if kr.name == "eliminate")
    print(f"{k:5d} {launched:9d} {active:9d} {active / launched:7.1%}   {gsize}")

# %% [markdown]
# Summed over the whole run,
#
# $$\frac{\text{useful}}{\text{launched}}
#   = \frac{\sum_{k=0}^{n-2} (n-k-1)(n-k)}{(n-1)\,n^2}.$$
#
# Evaluating the sum in closed form, and its limit for large $n$, is
# Exercise 2; the trace gives the value for this run. Every work-item that is
# not useful does nothing but check its indices and return. (The true count
# is a little worse still: the NDRange is rounded up to a multiple of the
# work-group size, as in Lesson 1.)

# %%
steps = eliminations(faithful)
useful = sum(s.info["active_items"] for s in steps) / sum(s.info["ndrange_items"] for s in steps)
print(f"n = {n}: useful share of the launched work-items, measured on the trace: {useful:.4f}")

# %% [markdown]
# ## 2. The copy of U into A
#
# After each step the post copies the whole $U$ into $A$: $n^2$ numbers, even
# though only the active block changed. The trace lists the copy as its own
# command, `copy U->A`, with profiling times like any kernel.

# %%
def device_ms(run, name):
    """Total device time (ms) of the commands called ``name`` in ``run``."""
    return sum(k.duration_ns for k in run.kernels if k.name == name) / 1e6


elim_ms, copy_ms = device_ms(faithful, "eliminate"), device_ms(faithful, "copy U->A")
copies = sum(k.name == "copy U->A" for k in faithful.kernels)
copied = copies * n * n * 4                       # bytes: each copy moves n² float32
print(f"n = {n}: eliminate {elim_ms:.2f} ms, copy U->A {copy_ms:.2f} ms "
      f"({copy_ms / (elim_ms + copy_ms):.0%} of the device time)")
print(f"{copies} copies, {copied / 1e6:.0f} MB in total, "
      f"{2 * copied / (copy_ms * 1e-3) / 1e9:.0f} GB/s (counting one read and one write per byte)")

# %% [markdown]
# On a CPU device the "copy" is a memcpy between caches; on a discrete GPU it
# moves through device memory, and in the post's run ($n = 1024$) the copies
# alone move gigabytes (Exercise 3).
#
# ## 3. The improved per-pivot variant
#
# `variant="inplace"` (the default of `method="pivot"`) keeps the same host
# loop over pivots but fixes both problems, and adds partial pivoting:
#
# * **in place**: $L$ and $U$ overwrite $A$ (the packed layout), so there is
#   nothing to copy back;
# * **shrinking NDRange**: `pivot_step` applies the rank-1 update
#   $a_{rc} \leftarrow a_{rc} - l_r a_{kc}$ to the active
#   $(n-k-1) \times (n-k-1)$ block only. It does not launch one work-item per
#   entry: each work-item updates a strip of adjacent columns over many rows
#   (how many is a per-device parameter), and the launch has just enough
#   work-groups to tile the active block. So the global size is much smaller
#   than the block, and shrinks with it, down to one work-group near the end
#   (the cell below prints the sizes and the entries per work-item);
# * **pivot on the device**: while updating column $k+1$, the work-groups
#   also search it for the largest $|a_{r,k+1}|$; the last work-group to
#   finish
#   swaps the rows and divides the column by the pivot, so the host never
#   waits between pivots. `pivot_first` does this for column 0.

# %%
inplace, wall_inplace = recorded_lu(test_matrix(n), "inplace")
for k in (0, 128, 254):
    step_k = eliminations(inplace)[k]
    launch = next(kr for kr in step_k.kernels if kr.name == "pivot_step")
    items = int(np.prod(launch.global_size))
    print(f"pivot {k:3d}: active block {n - k - 1:3d} x {n - k - 1:3d}; "
          + ", ".join(f"{kr.name} global={kr.global_size} local={kr.local_size}"
                      for kr in step_k.kernels)
          + f"; {(n - k - 1) ** 2 / items:.3g} entries per pivot_step work-item")
print(f"\nn = {n}   device time: faithful {faithful.device_ns / 1e6:.2f} ms, "
      f"inplace {inplace.device_ns / 1e6:.2f} ms")

# %% [markdown]
# ### The same loop in another order: left-looking (Crout)
#
# `inplace` is **right-looking**: pivot $k$ at once updates the whole active
# block to its right and below. The loop can also look **left**: leave the
# active block alone and, at pivot $k$, form only what pivot $k+1$ needs from
# the parts of $L$ and $U$ that are already finished:
#
# $$u_{kj} = a_{kj} - \sum_{m<k} l_{km} u_{mj} \;(j > k), \qquad
#   l_{ik} = \Big(a_{ik} - \sum_{m<k} l_{im} u_{mk}\Big) \Big/ u_{kk} \;(i > k).$$
#
# Same arithmetic, summed in another order. `variant="crout"` does this, still
# one launch per pivot. Count the entries each order moves:

# %%
def entries_moved(n):
    """(right-looking reads + writes, Crout reads) summed over the pivots."""
    right = sum(2 * (n - k - 1) ** 2 for k in range(n - 1))
    crout = sum(2 * k * (n - k) for k in range(n - 1))
    return right, crout


for size in (256, 1024, 4096):
    right, crout = entries_moved(size)
    print(f"n = {size:5d}: right-looking {right / 1e9:6.2f} G entries read and written, "
          f"Crout {crout / 1e9:6.2f} G read")

crout_run, wall_crout = recorded_lu(test_matrix(n), "crout")
lu_inplace, _ = oclla.lu_factor(test_matrix(n), method="pivot", variant="inplace")
lu_crout, _ = oclla.lu_factor(test_matrix(n), method="pivot", variant="crout")
print(f"\nn = {n}   device time: inplace {inplace.device_ns / 1e6:.2f} ms, "
      f"crout {crout_run.device_ns / 1e6:.2f} ms; factors agree to "
      f"{np.abs(lu_inplace - lu_crout).max() / np.abs(lu_inplace).max():.1e} (relative)")

# %% [markdown]
# Half the traffic, and none of it rewrites the active block. But each
# launch now has two sums to split over work-groups and to add up again (a
# counter per block: the last work-group to finish adds the partial sums), so
# it synchronizes more. Which order wins depends on the device; compare the
# two device times printed above for yours (on a GPU, see the box "Going
# further" at the end of this section). That is why `inplace` stays the
# default: it is the safe choice on every device.

# %% [markdown]
# ### Delaying the updates: a window of pivots
#
# Crout's sums grow with $k$: at pivot $k$ they run over all $k$ finished
# columns. Right-looking order has no sums but rewrites the active block at
# every pivot. `variant="window"` takes the middle road. Inside a **window**
# of $W$ pivots it works in Crout order, but its sums run only over the
# $t < W$ pivots of the current window: the entries to the right and below
# already hold the updates of all earlier windows. After the window's last
# pivot, one GEMM applies the whole window to the trailing matrix at once:
#
# $$A_{22} \leftarrow A_{22} - L_{21} U_{12}, \qquad L_{21}: (n-k) \times W,\;
#   U_{12}: W \times (n-k).$$
#
# Still one launch per pivot, but each launch reads about $2t(n-k)$ entries
# instead of $2k(n-k)$, and every $W$ pivots there are two more commands (the
# window's row interchanges and the GEMM). This is the step from a per-pivot
# loop to blocking (Lesson 5): the rank-$W$ update is where the arithmetic
# goes, and a GEMM does it at full speed.

# %%
window_run, wall_window = recorded_lu(test_matrix(n), "window")
lu_window, _ = oclla.lu_factor(test_matrix(n), method="pivot", variant="window")
names = [kr.name for kr in window_run.kernels]
print(f"n = {n}, W = {window_run.params['window']}: "
      + ", ".join(f"{name} x{names.count(name)}" for name in sorted(set(names))))
print(f"device time: crout {crout_run.device_ns / 1e6:.2f} ms, "
      f"window {window_run.device_ns / 1e6:.2f} ms; factors agree to "
      f"{np.abs(lu_window - lu_crout).max() / np.abs(lu_crout).max():.1e} (relative)")

# %% [markdown]
# > **Going further: the same variants on a GPU.** The numbers above are your
# > device's. On an NVIDIA H100 at $n = 4096$ (the project's README, best of
# > 3 on quiet hosts) the order is reversed: window 41–43 ms, Crout 76–77 ms,
# > in place 129 ms, faithful 444–452 ms. The window variant is then limited
# > by something no kernel can fix: enqueueing one kernel costs the host 7 to
# > 10 µs in NVIDIA's OpenCL driver (more for each buffer argument), so 4096
# > launches cost 30 to 40 ms whatever they compute. Section 4 measures that
# > cost on your device.

# %% [markdown]
# Device time per step shows the shrinking active block. How much an idle
# work-item costs depends on the device: a GPU schedules every one of them,
# while a CPU device such as PoCL runs a work-group's items as a loop on one
# core, so an idle item costs little more than its index check. Either way the
# faithful variant keeps paying for its full NDRange and its copy, so its
# curve stays above the improved one.

# %%
plt = pyplot()
if plt is not None:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for run, label in ((faithful, "faithful (full NDRange + copy)"),
                       (inplace, "inplace (shrinking NDRange)")):
        ax.plot([s.pivot[1] for s in eliminations(run)],
                [s.device_ns / 1e3 for s in eliminations(run)],
                ".", markersize=3, label=label)
    ax.set_xlabel("pivot column")
    ax.set_ylabel("device time per step (µs)")
    ax.set_title(f"per-pivot LU, n = {n}, {faithful.device}")
    ax.legend()
    save(fig, "lesson03_time_per_step.png")

# %% [markdown]
# The viewer draws the kernel timeline of a recording (queued, start and end
# of every command) and can overlay a second run. Here are both variants at
# $n = 64$:

# %%
paths = {}
for variant in ("faithful", "inplace"):
    with oclla.record() as rec:
        oclla.lu_factor(test_matrix(64), method="pivot", variant=variant)
    paths[variant] = output_dir() / f"lesson03_{variant}_64.oclrec"
    rec.save(paths[variant])
viewer_export(paths["faithful"], output_dir() / "lesson03_timeline.png", view="timeline",
              compare=paths["inplace"])

# %% [markdown]
# ## 4. Launch overhead against device time
#
# Less device work is not automatically less waiting. Compare the wall-clock
# times at $n = 256$:

# %%
print(f"n = {n}   wall time: faithful {wall_faithful * 1e3:.1f} ms, "
      f"inplace {wall_inplace * 1e3:.1f} ms")

# %% [markdown]
# Each launch costs something beyond the kernel itself: the host prepares
# arguments and enqueues; the driver submits; the device wakes up its
# workers. When kernels are long, the host runs ahead and the queue never
# empties, so these costs hide behind device work. When kernels are short,
# the device finishes each one and waits for the next: **idle gaps**.
#
# From the trace: the device was **busy** for the sum of the kernel times,
# and the run **spanned** from the first start to the last end. The
# difference is idle time.
#
# $$\text{idle} = \text{span} - \text{busy}, \qquad
#   \text{idle per launch} = \frac{\text{idle}}{\text{number of kernels}}.$$
#
# **Predict first.** The table below times both variants for $n$ from 32 to
# 1024. From what you have seen (the faithful variant does about three times
# the work plus a copy; the improved one launches shorter kernels), guess the
# smallest $n$ from which `inplace` has the shorter *wall* time, and write it
# down here before you run the cell:

# %%
predicted_crossover = None      # your guess: one of 32, 64, 128, 256, 512, 1024

# %%
sizes = (32, 64, 128, 256, 512, 1024)
table = {}
print(f"{'n':>5} {'variant':<9} {'kernels':>7} {'per pivot':>9} {'busy ms':>8} {'span ms':>8} "
      f"{'idle':>6} {'idle/launch µs':>14} {'wall ms':>8}")
for size in sizes:
    for variant in ("faithful", "inplace"):
        run, wall = recorded_lu(test_matrix(size), variant, repeats=2 if size < 1024 else 1)
        ks = run.kernels
        busy = run.device_ns
        span = max(k.end for k in ks) - min(k.start for k in ks)
        table[size, variant] = dict(kernels=len(ks), wall=wall)
        print(f"{size:5d} {variant:<9} {len(ks):7d} {len(ks) / (size - 1):9.2f} "
              f"{busy / 1e6:8.2f} {span / 1e6:8.2f} {(span - busy) / span:6.0%} "
              f"{(span - busy) / len(ks) / 1e3:14.1f} {wall * 1e3:8.1f}")
faster = [s for s in sizes if table[s, "inplace"]["wall"] < table[s, "faithful"]["wall"]]
crossover = next((s for s in sizes if all(t in faster for t in sizes if t >= s)), None)
print(f"\ninplace has the shorter wall time from n = {crossover} on (this run); "
      f"you predicted {predicted_crossover}")

# %% [markdown]
# Read the table column by column:
#
# * the number of kernels grows linearly with $n$, a fixed number per pivot
#   (the "per pivot" column counts commands per pivot column): the faithful
#   variant's host loop enqueues `eliminate` and the copy, the improved one a
#   single launch per pivot (plus the first column's), or two on devices
#   where the next pivot is chosen by a separate launch;
# * busy time grows like $n^3$ (each step touches up to $n^2$ entries);
# * so for small $n$ the device is mostly **idle**, waiting for launches;
#   only for large $n$ does the work hide the launch cost;
# * the improved variant does less device work and wins clearly for large
#   $n$. For small $n$ its wall time can even be *worse* than the faithful
#   one's: its kernels are so short (the pivot kernel is a single work-group)
#   that the device finishes each before the host has enqueued the next, and
#   waits. The bottleneck moved from the device to the launches.
#
# **A trap in the profiling times.** `start - queued` looks like "launch
# overhead", but in an in-order queue it also counts the time a command
# waited behind the ones before it. When the host enqueues far ahead, that
# wait is huge and says nothing about the launch itself:

# %%
big, _ = recorded_lu(test_matrix(512), "faithful")
waits = np.array([k.start - k.queued for k in big.kernels]) / 1e3
print(f"faithful, n = 512: median queued->start {np.median(waits):.0f} µs, "
      f"median kernel time {np.median([k.duration_ns for k in big.kernels]) / 1e3:.0f} µs")

# %% [markdown]
# Measure launch cost with the gaps between kernels instead, as above.
#
# The way out is to launch **fewer, bigger** kernels that each do more work
# per byte: blocking, in Lesson 5.
#
# ## Exercises
#
# **Exercise 1.** Write `active_fraction(n, k)`: the fraction of the
# faithful variant's $n^2$ work-items that do useful work when it eliminates
# pivot column $k$ ($0 \le k \le n-2$).

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** Over a whole factorization, what fraction of the launched
# work-items is useful when $n \to \infty$? (A number.)

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** The post factored a $1024 \times 1024$ float32 matrix. How
# many bytes do its `copy U->A` commands copy in total?

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** Write `copy_share(run)`: the fraction of a recorded run's
# device time spent in its `copy U->A` commands. (`run.kernels` lists every
# command with `.name` and `.duration_ns`.) The checker records its own
# faithful run and compares.

# %%
answer_4 = None
check_exercise_4(answer_4)
