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
# # Lesson 8 — The viewer and recordings in class
#
# Every figure in this course came from a **recording**: a file that keeps
# what an algorithm did, step by step, with its kernel timings and (for small
# matrices) the matrix after every step. This lesson is the workflow that
# makes those files useful in a classroom:
#
# 1. record on the machine with the interesting device (a GPU server);
# 2. hand the files to students, who **replay** them on laptops with no GPU;
# 3. **compare** two runs side by side;
# 4. **export** figures, animations and timing tables for slides;
# 5. analyse a recording in Python, as the viewer does.
#
# The viewer is a window (`oclla-viewer`); everything below uses its
# headless mode (`--export`), so it also runs on a server or in CI.

# %%
import csv
import shlex
from pathlib import Path

import numpy as np

import oclla
from _checks import missing
from _checks.lesson08 import (REQUIRES, check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, viewer_export

if missing(REQUIRES):
    raise SystemExit(f"This lesson needs {', '.join(missing(REQUIRES))}: "
                     f"`pip install oclla[viewer]`.")

# %% [markdown]
# ## 1. What a recording holds
#
# `oclla.record()` collects one **run** per algorithm call; a run has
# **steps** (phase, pivot, active region, flops and bytes), each step the
# **kernels** it launched with their profiling times, and with
# `snapshots=True` a copy of the matrix after every step.

# %%
rng = np.random.default_rng(8)
a16 = rng.standard_normal((16, 16))
with oclla.record(snapshots=True) as rec:
    oclla.lu_factor(a16, method="pivot")
run = rec.runs[-1]
print(f"run: {run.algorithm}/{run.variant} {run.shape} {run.dtype} on {run.device}")
print(f"{len(run.steps)} steps, {len(run.kernels)} kernels, {len(run.snapshots)} snapshots "
      f"(+ the input), params {run.params}")
step = run.steps[3]
print(f"step 3: phase {step.phase}, pivot {step.pivot}, region {step.region}, "
      f"{step.flops:.0f} flops, swaps {step.info.get('swaps')}")
for k in step.kernels:
    print(f"   {k.name}: global {k.global_size}, launch {k.launch_ns / 1e3:.1f} µs, "
          f"device {k.duration_ns / 1e3:.1f} µs")

# %% [markdown]
# Snapshots cost memory: one $n \times n$ copy per step. Keep them for the
# teaching sizes (the viewer's step view goes up to $n = 512$) and record
# large runs without them: the timings are all a timeline needs.
#
# ## 2. Record once, on the interesting device
#
# On the GPU server, pick the device (`oclla devices` lists them) with the
# environment variable `OCLLA_DEVICE` (an index or part of the name), or in
# Python with `queue = oclla.get_queue("nvidia")` and `queue=queue` in every
# call. A recording remembers its device by name.
#
# A small script that writes a **lecture pack**, one file per demonstration
# (here on this machine's default device; run it with `OCLLA_DEVICE=nvidia` on
# a GPU server). Each demonstration runs once before it is recorded: the
# first call of a kernel includes building it, which would show up as a huge
# launch time in the timeline.

# %%
def lecture_pack(folder):
    """Record the course's demonstrations into ``folder``; return {name: path}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    post = np.array([[2, 4, 3, 5], [-4, -7, -5, 8], [6, 8, 2, 9], [4, 9, -2, 14]], np.float32)
    a = rng.standard_normal((16, 16))
    dominant = a + 16 * np.eye(16)
    m = rng.standard_normal((12, 12))
    spd = m @ m.T / 12 + np.eye(12)
    demos = {
        "post_4x4_faithful": lambda: oclla.lu_factor(post, method="pivot", variant="faithful"),
        "lu16_faithful": lambda: oclla.lu_factor(dominant, method="pivot", variant="faithful"),
        "lu16_inplace": lambda: oclla.lu_factor(dominant, method="pivot"),
        "lu16_no_pivoting": lambda: oclla.lu_factor(a, method="pivot", pivoting="none"),
        "lu16_partial": lambda: oclla.lu_factor(a, method="pivot"),
        "lu64_blocked": lambda: oclla.lu_factor(rng.standard_normal((64, 64)), block=16),
    }
    if not missing(("oclla:cholesky", "oclla.rfp:cholesky")):
        demos["chol12_pivot"] = lambda: oclla.cholesky(spd, lower=True, method="pivot")
        demos["chol12_packed_pivot"] = lambda: oclla.rfp.cholesky(
            oclla.rfp.pack(spd), 12, method="pivot")
    paths = {}
    for name, demo in demos.items():
        demo()              # warm-up: the first call builds the kernels (slow launches)
        with oclla.record(snapshots=True) as rec:
            demo()
        for run in rec.runs:
            # the viewer titles a run "algorithm variant": name the pivoting too, so
            # that the two LUs of a pivoting comparison do not carry the same title
            if run.params.get("pivoting"):
                run.variant = f"{run.variant}, pivoting {run.params['pivoting']}"
        paths[name] = folder / f"{name}.oclrec"
        rec.save(paths[name])
    return paths


pack = lecture_pack(output_dir() / "lecture_pack")
for name, path in pack.items():
    print(f"{path.name:<28} {path.stat().st_size / 1024:7.1f} KiB")

# %% [markdown]
# ## 3. Replay anywhere
#
# Students need oclla and the viewer, not a GPU: replaying reads the file and
# never touches OpenCL. The commands to give them:

# %%
for name in ("post_4x4_faithful", "lu16_inplace"):
    print("oclla-viewer --replay", shlex.quote(str(pack[name])))

# %% [markdown]
# In the window: Space plays, ← and → step (backwards is instant), Home and
# End jump, the scrub bar marks row swaps and slow kernels, P switches to
# presentation mode for the projector, `?` lists every shortcut. Clicking a
# kernel in the timeline jumps to its step, and the other way round.
#
# The same file loads in Python, for homework that asks for numbers:

# %%
replayed = oclla.load_recording(pack["lu16_inplace"])
r = replayed.runs[-1]
print(f"recorded on {r.device}: {len(r.steps)} steps, snapshot after step 5:")
print(np.round(r.snapshot_at(5)[:5, :5], 2))

# %% [markdown]
# ## 4. Compare two runs
#
# Two recordings side by side, synchronized step by step: the post's
# algorithm against the improved one (Lessons 2–3), no pivoting against
# partial pivoting (Lesson 4), full against packed Cholesky (Lesson 6).

# %%
viewer_export(pack["lu16_faithful"], output_dir() / "lesson08_compare.png", after_step=5,
              view="compare", compare=pack["lu16_inplace"])
viewer_export(pack["lu16_no_pivoting"], output_dir() / "lesson08_timelines.png",
              view="timeline", compare=pack["lu16_partial"])

# %% [markdown]
# ## 5. Figures for slides
#
# `--export` writes by extension: `.png`/`.svg` one step, `.gif` an animation
# of a step range, `.csv` the kernel timings, `.json` a Chrome/Perfetto trace.
# `--presentation` uses large fonts and strong contrast, `--theme dark` suits
# dark slides, `--size` sets the pixels.

# %%
slide = viewer_export(pack["post_4x4_faithful"], output_dir() / "lesson08_slide.png",
                      after_step=2, view="matrix",
                      args=("--presentation", "--size", "1280x720"))
viewer_export(pack["lu16_inplace"], output_dir() / "lesson08_dark.svg", after_step=3,
              view="matrix", args=("--theme", "dark"))

# %% [markdown]
# An animation of every step of the post's example, and of the first six
# steps of the 16 × 16 run (a GIF has one frame per step, the input
# included):

# %%
gif = viewer_export(pack["post_4x4_faithful"], output_dir() / "lesson08_post.gif",
                    args=("--fps", "2"))
viewer_export(pack["lu16_inplace"], output_dir() / "lesson08_first_steps.gif",
              args=("--steps", "0-6"))
if gif is not None:
    from PIL import Image
    with Image.open(gif) as im:
        print(f"{gif.name}: {im.n_frames} frames for "
              f"{len(oclla.load_recording(pack['post_4x4_faithful']).runs[-1].steps)} steps")

# %% [markdown]
# Kernel timings as a table, for a spreadsheet or a plot of your own:

# %%
timings = viewer_export(pack["lu64_blocked"], output_dir() / "lesson08_timings.csv")
if timings is not None:
    with open(timings, newline="") as fh:
        table = list(csv.reader(fh))
    print(f"{len(table) - 1} rows; columns: {', '.join(table[0])}")
    for row in table[1:4]:
        print("   ", row)

# %% [markdown]
# ## 6. Analysing a recording yourself
#
# Everything the viewer shows comes from the public trace, so you can compute
# it too: time per step, GFLOP/s per phase, where the launches wait. The
# exercises ask for two such functions.
#
# **Predict first.** In the pack's `lu16_inplace` (a per-pivot LU of order
# 16), is the typical kernel's device time longer or shorter than the time it
# waited between being queued and starting? By what factor?

# %%
predicted_wait_over_run = None     # your guess: median wait / median device time

# %%
lu16 = oclla.load_recording(pack["lu16_inplace"]).runs[-1]
wait = np.median([k.start - k.queued for k in lu16.kernels])
ran = np.median([k.duration_ns for k in lu16.kernels])
print(f"{len(lu16.kernels)} kernels: median wait {wait / 1e3:.1f} µs, median device time "
      f"{ran / 1e3:.1f} µs, ratio {wait / ran:.3g} (you predicted {predicted_wait_over_run})")

# %% [markdown]
# A ratio above 1 means the kernels waited longer than they ran: the host
# enqueued ahead and each waited behind the ones before it (Lesson 3's trap),
# so `start - queued` says little about the cost of one launch. The recording
# keeps the numbers, so the same question can be asked of a GPU run replayed
# on a laptop.
#
# A checklist for a lecture:
#
# * make the pack the day before, on the device you want to talk about;
# * check every file opens: `oclla-viewer --replay FILE --export check.png`;
# * export the slides' figures from the same files, so the slides and the
#   live demo agree;
# * give students the pack and the commands; they need no GPU.
#
# ## Exercises
#
# **Exercise 1.** How many snapshots (not counting the input) does a
# recording with `snapshots=True` of `oclla.lu_factor(a, method="pivot")`
# hold for a $10 \times 10$ matrix?

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** How many bytes do the snapshots of a per-pivot LU of a
# float64 matrix of order 512 take in memory (one $n \times n$ copy after each
# step)?

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Write `slowest_step(run)`: the index of the step with the
# largest device time (`step.device_ns`).

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** Write `gflops_by_phase(run)`: a dict from each phase that
# has flops to its GFLOP/s over device time (total flops of the phase divided
# by its total device nanoseconds).

# %%
answer_4 = None
check_exercise_4(answer_4)
