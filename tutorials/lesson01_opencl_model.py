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
# # Lesson 1 — The OpenCL model, through oclla
#
# A GPU (or a multicore CPU) does not run your Python loop. It runs a small C
# function, a **kernel**, many times at once: one copy per **work-item**, and
# every work-item asks "who am I?" to find the piece of data it owns.
#
# In this lesson you will:
#
# 1. list the **platforms** and **devices** OpenCL can see;
# 2. make a **context** and a **command queue** with profiling switched on;
# 3. launch a kernel over an **NDRange** cut into **work-groups**, and see the
#    ids each work-item receives;
# 4. build a real kernel from oclla's `kernels_cl/` folder into a **program**,
#    and use it to run one LU factorization by hand;
# 5. read the **profiling events**: when a command was queued, submitted,
#    started and finished;
# 6. do the same in one line with oclla, and read the same facts from its trace.
#
# Everything here runs on any OpenCL 1.2 device. In class we use PoCL, an
# OpenCL implementation for CPUs, so a laptop is enough.

# %%
import logging

import numpy as np
import pyopencl as cl

from oclla import kernels_cl
import oclla
from _figures import output_dir
from _checks.lesson01 import (check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)

# %% [markdown]
# ## 1. Platforms and devices
#
# A **platform** is one vendor's OpenCL driver (NVIDIA, AMD, Intel, PoCL, ...).
# Each platform offers one or more **devices**. A machine can have several
# platforms at once; the ICD loader finds them all.

# %%
for platform in cl.get_platforms():
    print(f"platform: {platform.name} ({platform.version})")
    for dev in platform.get_devices():
        print(f"    device: {dev.name.strip()}  type={cl.device_type.to_string(dev.type)}  "
              f"compute units={dev.max_compute_units}  "
              f"max work-group size={dev.max_work_group_size}")

# %% [markdown]
# oclla keeps the same list, with the capabilities its kernels care about:
# double precision (`fp64`), local memory, the largest work-group, memory sizes.

# %%
for info in oclla.devices():
    print(info.describe())

# %% [markdown]
# ## 2. Context and command queue
#
# A **context** groups devices with the memory they share; buffers and programs
# belong to a context. A **command queue** feeds one device: you *enqueue*
# commands (copy this, run that kernel) and the device executes them, by
# default in order. Enqueueing returns at once: the host and the device work
# at the same time until the host waits for a result.
#
# We let oclla pick the device (it skips drivers that cannot compile on this
# machine) and then build our own context and queue on it.

# %%
device = oclla.get_queue().device
context = cl.Context([device])
queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
print("our device:", device.name.strip())

# %% [markdown]
# ## 3. NDRange, work-groups and ids
#
# A launch names a **global size**, the index space of work-items, in up to
# three dimensions: the **NDRange**. It is cut into **work-groups** of the
# **local size**. Work-items of one group run on one compute unit, can share
# fast `__local` memory and can wait for each other at a `barrier`; different
# groups cannot. Inside the kernel each work-item asks:
#
# | call | meaning |
# |---|---|
# | `get_global_id(d)` | my index in dimension d, $0 \le$ id $<$ global size |
# | `get_local_id(d)` | my index inside my work-group |
# | `get_group_id(d)` | which work-group I belong to |
#
# and in every dimension
#
# $$\text{global id} = \text{group id}\cdot\text{local size} + \text{local id}.$$
#
# Here is a kernel whose only job is to write those ids down. We launch it on
# a global size of $8 \times 6$ with work-groups of $4 \times 2$.

# %%
WHO_AM_I = """
__kernel void who_am_i(__global int *group, __global int *local_id)
{
    const int x = get_global_id(0), y = get_global_id(1);
    const int width = get_global_size(0);
    group[y * width + x] = get_group_id(1) * get_num_groups(0) + get_group_id(0);
    local_id[y * width + x] = get_local_id(1) * get_local_size(0) + get_local_id(0);
}
"""
program = cl.Program(context, WHO_AM_I).build()
who_am_i = cl.Kernel(program, "who_am_i")

global_size, local_size = (8, 6), (4, 2)
group_ids = np.zeros((6, 8), np.int32)          # rows = dimension 1, columns = dimension 0
local_ids = np.zeros((6, 8), np.int32)
mf = cl.mem_flags
group_buf = cl.Buffer(context, mf.WRITE_ONLY, group_ids.nbytes)
local_buf = cl.Buffer(context, mf.WRITE_ONLY, local_ids.nbytes)
who_am_i.set_args(group_buf, local_buf)
cl.enqueue_nd_range_kernel(queue, who_am_i, global_size, local_size)
cl.enqueue_copy(queue, group_ids, group_buf)
cl.enqueue_copy(queue, local_ids, local_buf)   # copies to the host wait for the result
print("work-group of each work-item:\n", group_ids)
print("local id (flattened) of each work-item:\n", local_ids)

# %% [markdown]
# Six blocks of $4 \times 2$: $8/4 = 2$ groups across and $6/2 = 3$ down.
# The global size must be a multiple of the local size in OpenCL 1.2, so
# libraries **round the global size up** and let the extra work-items return
# early. Keep that in mind for Lesson 3: those work-items cost time while
# doing nothing.
#
# ## 4. A real kernel from `kernels_cl/`
#
# oclla's kernels are plain OpenCL C files. `kernels_cl.read_source` returns
# one with the shared header `common.h` pasted in. `lu_faithful.cl` is the
# per-pivot LU of a SYCL blog post we study in Lesson 2. Read the `eliminate`
# kernel: one work-item per matrix entry $(r, c)$, and only the entries below
# and right of the pivot do anything.

# %%
source = kernels_cl.read_source("lu_faithful.cl")
start = source.index("__kernel void eliminate")
print(source[start:source.index("\n}\n", start) + 3])

# %% [markdown]
# The type `real` is `float` or `double`, chosen by the macro `PRECISION` that
# we pass as a compiler option. Building turns the source into a **program**
# for our device; `cl.Kernel(program, name)` takes one kernel out of it.
# (Keep the kernel object and reuse it: looking it up again for every launch is
# surprisingly slow on some drivers.)

# %%
program = cl.Program(context, source).build(options=["-DPRECISION=32"])
eliminate = cl.Kernel(program, "eliminate")

# %% [markdown]
# Now the whole factorization by hand. The host loops over the pivot columns;
# for each column it launches `eliminate` over the full $n \times n$ NDRange and
# copies $U$ back into $A$, exactly as the blog post does. $L$ starts as the
# identity and $U$ as $A$.

# %%
A = np.array([[2, 4, 3, 5],
              [-4, -7, -5, 8],
              [6, 8, 2, 9],
              [4, 9, -2, 14]], dtype=np.float32)
n = A.shape[0]
A_buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=A)
L_buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.eye(n, dtype=np.float32))
U_buf = cl.Buffer(context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=A)

events = []
for col in range(n - 1):
    eliminate.set_args(A_buf, L_buf, U_buf, np.int32(n), np.int32(col))
    events.append(("eliminate", cl.enqueue_nd_range_kernel(queue, eliminate, (n, n), (2, 2))))
    events.append(("copy U->A", cl.enqueue_copy(queue, A_buf, U_buf)))

L, U = np.empty_like(A), np.empty_like(A)
cl.enqueue_copy(queue, L, L_buf)
cl.enqueue_copy(queue, U, U_buf)
print("L =\n", L, "\nU =\n", U)
print("L @ U == A:", np.array_equal(L @ U, A))

# %% [markdown]
# ## 5. Profiling events
#
# Every enqueue returns an **event**. With a profiling queue the event carries
# four timestamps in nanoseconds:
#
# * `queued`: the host enqueued the command;
# * `submit`: the driver handed it to the device;
# * `start`, `end`: the device ran it.
#
# $\text{end} - \text{start}$ is the device time. The gap from `queued` to
# `start` is time spent before running: driver work, and waiting behind the
# commands ahead in the queue.
#
# **Predict first.** From the first `queued` to the last `end`, what fraction
# of the time did the device spend running our six commands (the sum of
# their $\text{end} - \text{start}$)? Write down a guess between 0 and 1:

# %%
predicted_busy_fraction = None    # your guess

# %%
t0 = events[0][1].profile.queued
print(f"{'command':<10} {'queued':>8} {'submit':>8} {'start':>8} {'end':>8}"
      "   (µs since the first queued)")
for name, ev in events:
    p = ev.profile
    print(f"{name:<10} {(p.queued - t0) / 1e3:8.1f} {(p.submit - t0) / 1e3:8.1f} "
          f"{(p.start - t0) / 1e3:8.1f} {(p.end - t0) / 1e3:8.1f}")
busy = sum(ev.profile.end - ev.profile.start for _, ev in events)
span = max(ev.profile.end for _, ev in events) - t0
print(f"device busy {busy / 1e3:.1f} µs of {span / 1e3:.1f} µs: {busy / span:.1%} "
      f"(you predicted {predicted_busy_fraction})")

# %% [markdown]
# For a $4\times 4$ matrix the device work is tiny (the busy fraction
# above); the rest of the time goes into launching. The very first launch usually waits
# longest: some drivers (PoCL among them) finish compiling a kernel for its
# work-group size only when it is first launched. Lesson 3 measures launch
# costs properly as $n$ grows.
#
# ## 6. The same through oclla
#
# oclla wraps all of the above: device choice, context and queue
# (`oclla.get_queue()`), building and caching programs, choosing work-group
# sizes from the device's limits, and launching. `oclla.record()` keeps what
# every algorithm did: its **steps**, and for each step the **kernels** with
# their NDRange and profiling times.
#
# The first time a family of kernels runs on a device, oclla builds its
# programs and checks them on a tiny case against numpy (once per device and
# driver; seconds on a CPU). It says so through Python's `logging`, at the
# INFO level, which the first two lines below switch on: on a machine where
# oclla has run before they print nothing.

# %%
logging.basicConfig(format="%(message)s")
logging.getLogger("oclla").setLevel(logging.INFO)
with oclla.record() as rec:
    lu, piv = oclla.lu_factor(A, method="pivot", variant="faithful")
run = rec.runs[-1]
print(f"{run.algorithm} / {run.variant} on {run.device}, {len(run.steps)} steps")
for step in run.steps:
    for k in step.kernels:
        print(f"  step {step.index} {step.phase:<10} {k.name:<10} global={k.global_size} "
              f"local={k.local_size} device time={k.duration_ns / 1e3:.1f} µs")
print("packed result (U on and above the diagonal, L's multipliers below):\n", lu)

# %% [markdown]
# Two things to notice:
#
# * oclla chose its own work-group size from the device's limits and rounded
#   the NDRange up to it, so a $4 \times 4$ matrix launches many more
#   work-items than it has entries; the bounds check `if (r >= n || c >= n)
#   return;` at the top of the kernel makes that safe.
# * The result is *packed*: $U$ on and above the diagonal, the multipliers of
#   $L$ below it (its unit diagonal is not stored), the same layout as
#   `scipy.linalg.lu_factor`.
#
# The trace can also be opened in `chrome://tracing` or
# [ui.perfetto.dev](https://ui.perfetto.dev) as a timeline:

# %%
trace_path = output_dir() / "lesson01_trace.json"
rec.to_chrome_trace(trace_path)
print("Chrome/Perfetto trace written to", trace_path)

# %% [markdown]
# ## Exercises
#
# Each exercise ends with a call to its checker. Replace `None` with your
# answer and run the cell again.
#
# **Exercise 1.** A kernel is launched with global size $(12, 8)$ and local
# size $(4, 4)$. How many work-groups run?

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** Look at `eliminate` again. For $n = 4$ and `col = 1`, how
# many work-items write an entry of `U`?

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Write an OpenCL kernel named `axpy` that computes
# $y \leftarrow \alpha x + y$ for vectors of length `n`, with the signature
#
# ```c
# __kernel void axpy(const float alpha, __global const float *x,
#                    __global float *y, const int n)
# ```
#
# One work-item per entry. The checker launches it on a global size rounded
# up to a multiple of 64, so remember the bounds check. Give the source as a
# Python string.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** Write a function `device_time_us(event)` that returns how
# long a command ran on the device, in microseconds, from its profiling event.

# %%
answer_4 = None
check_exercise_4(answer_4)
