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
# # Lesson 9 — Don't refactor, update
#
# Data that arrive over time change a matrix a little at a time: a few rows
# enter a least-squares problem, a few old ones leave. Refactoring after every
# change costs $O(n^3)$; changing the Cholesky factor itself costs $O(kn^2)$
# for $k$ rows. In this lesson you will:
#
# 1. follow a **sliding-window least-squares** fit whose factor is *updated*
#    when rows enter and *downdated* when they leave;
# 2. see what an update does (Walder's hyperbolic rotations, one row of the
#    factor at a time), on a recorded run;
# 3. **measure the crossover** between updating and refactoring ($k$ against
#    $n$) on your device, and compare it with the flop count;
# 4. watch a downdate **fail cleanly**: an error that names the order where
#    positive definiteness was lost, and a factor left untouched; and see
#    why downdates near that boundary lose digits.

# %%
import re
import time

import numpy as np
import scipy.linalg

import oclla
from oclla import accuracy
from _checks import missing
from _checks.lesson09 import (REQUIRES, check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, pyplot, save, viewer_export

if missing(REQUIRES):
    raise SystemExit(f"This lesson needs {', '.join(missing(REQUIRES))}: update oclla.")


def best_of(fn, repeats=3):
    """Shortest wall time of ``fn()`` over a few runs (after one warm-up run)."""
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def device_time(fn, repeats=2):
    """Device time of ``fn()``: the sum of its kernels' end - start, from the recorder
    (the shortest of a few runs, after one warm-up run)."""
    fn()
    times = []
    for _ in range(repeats):
        with oclla.record() as rec:
            fn()
        times.append(sum(run.device_ns for run in rec.runs) * 1e-9)
    return min(times)


# %% [markdown]
# ## 1. A sliding window
#
# A sensor reports $y_t = \varphi_t^T x + \text{noise}$ for a parameter
# vector $x$ of $n$ numbers that **drifts** slowly. A fit over all the past
# would average old and new behaviour; a fit over the last $W$ measurements
# follows the drift. With the window's rows $\varphi_t^T$ stacked in $X$
# ($W \times n$), the least-squares solution solves the normal equations
#
# $$G\,x = g, \qquad G = X^T X = \sum_{t \in \text{window}} \varphi_t\varphi_t^T,
#   \qquad g = X^T y = \sum_{t \in \text{window}} y_t\,\varphi_t ,$$
#
# with $G = R^T R$ (scipy's upper factor). When the window moves by $k$
# rows, $k$ rows $V_+ = (\varphi_{\text{new}})$ enter and $k$ rows $V_-$
# leave:
#
# $$G \;\leftarrow\; G + V_+ V_+^T - V_- V_-^T :$$
#
# a rank-$k$ **update** and a rank-$k$ **downdate**. `oclla.cholesky_update(R, V,
# sign=±1)` turns the factor of $G$ into the factor of $G \pm VV^T$ without
# forming $G$ at all. ($g$ changes the same way, with vector additions; and
# a Kalman filter's information form is the same computation with a
# forgetting factor instead of a window.)

# %%
rng = np.random.default_rng(9)
n, W, k, steps = 6, 48, 4, 60                    # unknowns, window rows, rows per move, moves
T = W + k * steps
t_axis = np.arange(T)
truth = np.stack([np.sin(2 * np.pi * (t_axis / (2 * T) + j / n)) for j in range(n)], axis=1)
phi = rng.standard_normal((T, n))                 # regressors: row t is φ_t
y = np.einsum("ti,ti->t", phi, truth) + 0.05 * rng.standard_normal(T)

R = oclla.cholesky(phi[:W].T @ phi[:W])            # the first window, factored once
g = phi[:W].T @ y[:W]
R_all, g_all = R.copy(), g.copy()                  # for comparison: all the past, no window
worst_difference, errors, errors_middle, errors_all = 0.0, [], [], []
for s in range(steps):
    new = slice(W + s * k, W + (s + 1) * k)      # the rows that enter ...
    old = slice(s * k, (s + 1) * k)              # ... and those that leave
    R = oclla.cholesky_update(R, phi[new].T)               # G + V₊V₊ᵀ
    R = oclla.cholesky_update(R, phi[old].T, sign=-1)      # G − V₋V₋ᵀ
    g += phi[new].T @ y[new] - phi[old].T @ y[old]
    x = oclla.cho_solve((R, False), g)
    window = slice(old.stop, new.stop)
    x_lstsq = np.linalg.lstsq(phi[window], y[window], rcond=None)[0]
    worst_difference = max(worst_difference,
                           np.linalg.norm(x - x_lstsq) / np.linalg.norm(x_lstsq))
    errors.append(np.linalg.norm(x - truth[new.stop - 1]))
    errors_middle.append(np.linalg.norm(x - truth[(window.start + window.stop) // 2]))
    R_all = oclla.cholesky_update(R_all, phi[new].T)       # updates only: a growing window
    g_all += phi[new].T @ y[new]
    errors_all.append(np.linalg.norm(oclla.cho_solve((R_all, False), g_all)
                                     - truth[new.stop - 1]))

G_last = phi[window].T @ phi[window]
print(f"{steps} moves of the window, {2 * steps} rank-{k} modifications, no refactorization")
print(f"largest relative difference from numpy's lstsq on the same window: "
      f"{worst_difference:.1e}")
print(f"backward error of the final factor against the window's G: "
      f"{accuracy.cholesky_backward_error(G_last, R, False):.2f} nε")
print(f"median distance from the drifting x: {np.median(errors):.3f} (x now), "
      f"{np.median(errors_middle):.3f} (x in the middle of the window); "
      f"a fit to all the past: {np.median(errors_all):.3f}")

# %% [markdown]
# After 120 modifications the factor is still the factor of the window's
# $G$ to a backward error of a few $n\|G\|\varepsilon$: updates and downdates
# of a well-conditioned matrix do not accumulate error the way one might fear.
# The window follows the drift, unlike a fit to all the past (updates only,
# never a downdate), though it lags: a window of $W$ rows estimates $x$ as
# it was in the window's middle, $W/2$ measurements ago. Shorter windows lag
# less and are noisier; the factor does not care, each move costs
# $O(kn^2)$ whatever $W$ is.
#
# ## 2. What an update does
#
# Walder's gpucholmod (the hyperbolic method, its Algorithm 1) walks down the
# rows of $R$. For row $i$ and each column $p$ of $V$, with
# $\sigma = \pm 1$:
#
# $$\textbf{Compute:}\quad w = \sqrt{r_{ii}^2 + \sigma\, v_{ip}^2},\quad
#   c = w / r_{ii},\quad s = v_{ip}/r_{ii},\quad r_{ii} \leftarrow w$$
#
# $$\textbf{Apply } (j > i):\quad r_{ij} \leftarrow (r_{ij} + \sigma\, s\, v_{jp})/c,\qquad
#   v_{jp} \leftarrow c\, v_{jp} - s\, r_{ij} .$$
#
# For $\sigma = +1$ this is an ordinary rotation of row $i$ of $R$ against
# $V$; for $\sigma = -1$ a *hyperbolic* one (it preserves
# $r^2 - v^2$ instead of $r^2 + v^2$). Row $i$ is final once its $k$
# rotations are applied: the work is $k$ rotations of rows of length
# $n - i$, about $3kn^2$ flops in all. The teaching variant
# (`method="pivot"`) launches Compute and Apply for each row; the recorder
# sees both:

# %%
n_small = 8
a_small = phi[:W, :n].T @ phi[:W, :n]
a_small = np.block([[a_small, np.zeros((n, 2))], [np.zeros((2, n)), 4 * np.eye(2)]])
r_small = oclla.cholesky(a_small)
v_small = rng.standard_normal((n_small, 2))
with oclla.record(snapshots=True) as rec:
    r_up = oclla.cholesky_update(r_small, v_small, method="pivot")
run = rec.runs[-1]
for step in run.steps[:4]:
    print(f"step {step.index}: {step.phase:<8} region {step.region} "
          f"kernel {step.kernels[0].name} global={step.kernels[0].global_size}")
print(f"... {len(run.steps)} steps = 2 per row ({n_small} rows), the last row only Compute")
a_up = a_small + v_small @ v_small.T
print("equals scipy's factor of A + VVᵀ:", np.allclose(r_up, scipy.linalg.cholesky(a_up)))
rec_path = output_dir() / "lesson09_update_pivot.oclrec"
rec.save(rec_path)
viewer_export(rec_path, output_dir() / "lesson09_update.png", after_step=5)

# %% [markdown]
# In the figure, row 2 has just been rotated (the outlined row): the rows
# above it are the new factor's, the rows below still the old one's, and the
# step panel names the phase (Compute or Apply) and the kernel that ran it.
# The fast variant (the default, `method="blocked"`) does the same
# arithmetic panel by panel: one work-group forms the rotations of a panel
# of rows, and every work-item of the next launch applies them to its own
# columns: two launches per panel instead of two per row.  On a GPU it does
# updates ($\sigma = +1$, rank up to 128) another way, without rotations
# passed from row to row: Gill, Golub, Murray and Saunders' product form
# ($W = L^{-1}V$ by one triangular solve, then every row of the new factor
# from $W$ at once, 16 columns of $V$ a pass; `method="product"` asks for it
# on any device).
#
# ## 3. Update or refactor? The crossover
#
# Count the flops for an $n \times n$ factor and $k$ columns:
#
# * update: $3k\,n^2$ (6 flops per Apply, $kn^2/2$ of them);
# * refactor: form $G + VV^T$ ($k n^2$ for one triangle) and factor it
#   ($n^3/3$).
#
# On flops alone the update wins while $3kn^2 < n^3/3 + kn^2$, that is for
# $k < n/6$. But flops are not seconds (Lesson 5): the two algorithms reach
# different speeds on a device, and small problems pay fixed costs.
#
# **Predict first.** On your device, for $n = 256$, up to which $k$ will the
# update be faster than oclla's own blocked Cholesky of the modified matrix?

# %%
predicted_crossover = None        # your guess: a k

# %% [markdown]
# The measurement: device time (the kernels' own times, from the recorder),
# refactoring with `oclla.cholesky` on the same device (the time to form
# $G + VV^T$ is left out, in refactoring's favour), and the update with
# `oclla.cholesky_update`, for $k$ from 1 to $2n$ (each the shortest of two runs):

# %%
sizes = (128, 256)
t_refactor, t_update, crossover = {}, {}, {}
print(f"device: {oclla.device_info(oclla.get_queue()).name}")
print(f"{'n':>4} {'k':>5} {'update ms':>10} {'refactor ms':>11} {'ratio':>6}")
for n_c in sizes:
    a_c = accuracy.spd_with_condition(n_c, 100.0, rng=n_c)
    r_c = oclla.cholesky(a_c)
    t_refactor[n_c] = device_time(lambda: oclla.cholesky(a_c))
    t_update[n_c], crossover[n_c] = {}, None
    for k_c in (1, 4, 16, n_c // 4, n_c // 2, n_c, 2 * n_c):
        v_c = 0.1 * rng.standard_normal((n_c, k_c))
        t = t_update[n_c][k_c] = device_time(lambda: oclla.cholesky_update(r_c, v_c))
        print(f"{n_c:4d} {k_c:5d} {t * 1e3:10.2f} {t_refactor[n_c] * 1e3:11.2f} "
              f"{t_refactor[n_c] / t:6.1f}")
        if crossover[n_c] is None and t >= t_refactor[n_c]:
            crossover[n_c] = k_c
for n_c, k_star in crossover.items():
    where = (f"k ≈ {k_star} (k/n = {k_star / n_c:.2f})" if k_star is not None
             else f"beyond k = {2 * n_c} (2n)")
    print(f"n = {n_c}: refactoring first wins at {where}; flop count: k ≈ n/6 = {n_c // 6}. "
          f"Cholesky ran at {n_c ** 3 / 3 / t_refactor[n_c] * 1e-9:.2f} GFLOP/s, the update "
          f"at {6 * n_c ** 3 / t_update[n_c][2 * n_c] * 1e-9:.2f} GFLOP/s (k = 2n)")
print(f"you predicted k ≈ {predicted_crossover} for n = 256")

plt = pyplot()
if plt is not None:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for i, n_c in enumerate(sizes):
        ks = np.array(sorted(t_update[n_c]))
        ax.loglog(ks, [t_update[n_c][kk] * 1e3 for kk in ks], "o-", color=f"C{i}",
                  label=f"update, n = {n_c}")
        ax.axhline(t_refactor[n_c] * 1e3, color=f"C{i}", ls="--",
                   label=f"refactor, n = {n_c}")
        ax.axvline(n_c / 6, color=f"C{i}", ls=":", lw=1)
    ax.set_xlabel("k (columns of V); dotted: the flop count's crossover n/6")
    ax.set_ylabel("device ms")
    ax.legend(fontsize=8)
    save(fig, "lesson09_crossover.png")

# %% [markdown]
# The flop count predicts $k \approx n/6$; the measurement lands wherever the
# two *speeds* put it, and they differ a lot. Where does the refactorization's
# time go? The recorder knows, kernel by kernel:

# %%
with oclla.record() as rec:
    oclla.cholesky(accuracy.spd_with_condition(256, 100.0, rng=256))
by_kernel = {}
for kernel in rec.runs[-1].kernels:
    by_kernel[kernel.name] = by_kernel.get(kernel.name, 0) + kernel.duration_ns
total = sum(by_kernel.values())
for name, ns in sorted(by_kernel.items(), key=lambda item: -item[1])[:3]:
    print(f"{name:<20} {ns * 1e-6:7.2f} ms  {ns / total:5.1%} of the factorization's device time")

# %% [markdown]
# At these small orders, on PoCL, the kernel that factors the diagonal
# blocks (`potf2_rows`, one work-item per row of the block) takes a large
# share beside the GEMMs, though it does a sliver of the flops: one
# work-group that goes pivot after pivot with a barrier between them, the
# sequential part of Lessons 3 and 5 (on PoCL a barrier among a work-group's
# items is a costly thread synchronization). The GEMMs do nearly all the
# flops in about as much time. The update
# has no such sequential kernel; it streams through the factor at a few
# GFLOP/s. So on a two-core CPU device the crossover moves far beyond
# $n/6$: around $k \approx n$ to $2n$ (the lines above the plot say where this
# run put it; on a busy machine single points jump, so rerun before you
# conclude). As $n$ grows the GEMMs take over the refactorization and the
# crossover moves towards the flop count; on a GPU, with its own balance of
# launch costs and speeds, measure it with `OCLLA_DEVICE=...` (and add
# larger orders to `sizes`).
#
# One more honest comparison. Device time leaves out copying the factor to
# the device and back, and the launches; the host's LAPACK
# (`scipy.linalg.cholesky`, hand-tuned assembly) pays none of that:

# %%
n_c = 256
a_c = accuracy.spd_with_condition(n_c, 100.0, rng=n_c)
r_c = oclla.cholesky(a_c)
v_1 = 0.1 * rng.standard_normal((n_c, 1))
print(f"rank-1 update, n = {n_c}: wall "
      f"{best_of(lambda: oclla.cholesky_update(r_c, v_1)) * 1e3:.2f} ms, device "
      f"{device_time(lambda: oclla.cholesky_update(r_c, v_1)) * 1e3:.2f} ms")
print(f"scipy's refactorization on the host: "
      f"{best_of(lambda: scipy.linalg.cholesky(a_c)) * 1e3:.2f} ms")

# %% [markdown]
# At these small orders LAPACK on the host refactors about as fast as one
# round trip to the device: an update pays off against it only for larger
# $n$, where $O(n^3)$ against $O(kn^2)$ takes over (`oclla bench update`
# measures $n = 1000 \dots 4000$). Choose by measuring, on your machine.

# %% [markdown]
# ## 4. A downdate that fails
#
# An update of a positive definite matrix always exists. A downdate
# $G - VV^T$ exists only while the result stays positive definite: remove a
# row that was never in the window (a bookkeeping bug), or remove one twice,
# and it is not. Compute then meets $r_{ii}^2 - v_{ip}^2 \le 0$ and there is
# no real square root. oclla stops there, raises `LinAlgError` with the order
# of the first leading minor of $G - VV^T$ that is not positive (LAPACK's
# `info`, as `cholesky` of $G - VV^T$ would), and leaves your factor as it
# was:

# %%
R_before = R.copy()
stranger = 4 * phi[-1] + 3.0                      # a row that was never in the window
try:
    oclla.cholesky_update(R, stranger, sign=-1)
except np.linalg.LinAlgError as err:
    print("LinAlgError:", err)
    order = int(re.search(r"order (\d+)", str(err)).group(1))
print("factor untouched:", np.array_equal(R, R_before))
minors = [np.linalg.eigvalsh((G_last - np.outer(stranger, stranger))[:j, :j]).min()
          for j in range(1, n + 1)]
print("smallest eigenvalue of each leading block of G − vvᵀ:",
      " ".join(f"{m:.3g}" for m in minors))
print(f"first non-positive leading block: order "
      f"{next(j for j, m in enumerate(minors, 1) if m <= 0)}; the error named {order}")

# %% [markdown]
# The caller's array is never written on failure. (With a device array and
# `overwrite_c=True` the factor is modified in place, and a failure leaves it
# partly rotated; the docstring says which rows: keep a copy if you pass that
# permission.)
#
# ### Accuracy near the boundary
#
# A downdate that succeeds can still lose digits. It is stable *relative to
# its input*: the result is the exact factor of $G + \Delta G - VV^T$ with
# $\|\Delta G\|$ of order $n\|G\|\varepsilon$. When the downdate removes
# most of $G$ ($\|G\| \gg \|G - VV^T\|$), that error is large relative to
# what is left, by the factor $\|G\|/\|G - VV^T\|$. Refactoring does not
# escape it: forming $G - VV^T$ in floating point cancels the same digits.
# Downdate a matrix $B + VV^T$ back to $B$ for growing $V$:

# %%
n_b = 64
m_b = rng.standard_normal((n_b, n_b))
B = m_b @ m_b.T / n_b + np.eye(n_b)
print(f"{'‖A‖/‖B‖':>9} {'downdate':>10} {'refactor':>10}   (backward error against B, nε)")
for scale in (1.0, 1e3, 1e6):
    V = np.sqrt(scale) * rng.standard_normal((n_b, 8))
    A_b = B + V @ V.T
    down = oclla.cholesky_update(scipy.linalg.cholesky(A_b), V, sign=-1)
    refac = scipy.linalg.cholesky(A_b - V @ V.T)
    print(f"{np.linalg.norm(A_b) / np.linalg.norm(B):9.1e} "
          f"{accuracy.cholesky_backward_error(B, down, False):10.3g} "
          f"{accuracy.cholesky_backward_error(B, refac, False):10.3g}")

# %% [markdown]
# Both errors grow with $\|A\|/\|B\|$; the downdate loses about ten times more
# than the refactorization of the (already rounded) $A - VV^T$, the known
# price of hyperbolic rotations. In a sliding window the rows that leave are
# no larger than the rows that stay, so $\|G\|/\|G - VV^T\|$ stays modest and
# so does the error (section 1). If a window ever shrinks to almost nothing,
# refactor.

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** For a factor of order $n = 600$, at which $k$ does a rank-$k$
# update cost as many flops as refactoring: forming $A + VV^T$ ($kn^2$ flops)
# and factoring it ($n^3/3$)? The update costs $3kn^2$.

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** Write `slide(r, enter, leave)`: `r` is the upper Cholesky
# factor of $G$ (numpy, $n \times n$), `enter` and `leave` hold rows
# ($k_1 \times n$ and $k_2 \times n$, one row per measurement). Return the
# upper factor of $G + \text{enter}^T\text{enter} - \text{leave}^T\text{leave}$
# using `oclla.cholesky_update` (no refactorization: the checker looks at the
# recorder). Think about the order of the two calls: the checker includes a
# window where one order fails.

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** $A = 4I$ (order 4, factor $2I$) is downdated by
# $v = (1, 1, 1.5, 1)^T$. Which order will the `LinAlgError` name? Find it
# from the leading minors of $A - vv^T$, then check it with
# `oclla.cholesky_update(2 * np.eye(4), v, sign=-1)`.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** A downdate removes most of a matrix: $\|A\| = 10^6\,\|A - VV^T\|$.
# About how many of float64's decimal digits does the result lose, relative to
# $\|A - VV^T\|$? (Section 4's table.)

# %%
answer_4 = None
check_exercise_4(answer_4)
