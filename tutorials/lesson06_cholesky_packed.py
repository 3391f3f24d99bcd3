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
# # Lesson 6 — Cholesky and packed storage
#
# A symmetric positive definite (SPD) matrix needs no pivoting and has a
# factorization with half the work of LU:
#
# $$A = L\,L^T, \qquad L \text{ lower triangular with a positive diagonal}.$$
#
# Jung and O'Leary ("Exploiting Structure of Symmetric or Triangular Matrices
# on a GPU", 2008) built it from three small kernels, and made it use half the
# *memory* too. In this lesson you will:
#
# 1. derive Cholesky's three steps per pivot and run the paper's three kernels;
# 2. see why a **triangle-shaped NDRange** matters (no idle half square);
# 3. learn LAPACK's **rectangular full packed** (RFP) layout, which stores one
#    triangle in a plain $n(n+1)/2$ array;
# 4. measure that packed storage halves the memory at the same speed.

# %%
import time

import numpy as np
import scipy.linalg

import oclla
from oclla import accuracy, rfp
from _checks import missing
from _checks.lesson06 import (REQUIRES, check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, viewer_export

if missing(REQUIRES):
    raise SystemExit(f"This lesson needs {', '.join(missing(REQUIRES))}: update oclla.")


def spd_matrix(n, dtype=np.float64, seed=0):
    """A random symmetric positive definite matrix (well conditioned)."""
    m = np.random.default_rng(seed).standard_normal((n, n))
    return (m @ m.T / n + np.eye(n)).astype(dtype)


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
# ## 1. Three steps per pivot
#
# Write $A$ and $L$ in blocks around the first pivot:
#
# $$\begin{pmatrix} a_{00} & a_{10}^T \\ a_{10} & A_{11} \end{pmatrix}
#   = \begin{pmatrix} \ell_{00} & 0 \\ \ell_{10} & L_{11} \end{pmatrix}
#     \begin{pmatrix} \ell_{00} & \ell_{10}^T \\ 0 & L_{11}^T \end{pmatrix}
#   = \begin{pmatrix} \ell_{00}^2 & \ell_{00}\ell_{10}^T \\
#                     \ell_{00}\ell_{10} & \ell_{10}\ell_{10}^T + L_{11}L_{11}^T \end{pmatrix}.$$
#
# Reading off the blocks gives the paper's Algorithm 4, one pivot at a time:
#
# 1. **square root**: $\ell_{00} = \sqrt{a_{00}}$;
# 2. **normalize** the column below it: $\ell_{10} = a_{10} / \ell_{00}$;
# 3. **outer product subtraction** on the trailing *lower triangle* only:
#    $A_{11} \leftarrow A_{11} - \ell_{10}\ell_{10}^T$; then repeat on $A_{11}$.
#
# Symmetry means only one triangle is ever read or written. A negative or
# zero number under the square root means $A$ is not positive definite: the
# factorization stops and says at which order.
#
# On the device each step is one kernel, so the trace of `method="pivot"` has
# three steps per pivot (the last pivot has only its square root):

# %%
n = 6
a = spd_matrix(n)
with oclla.record(snapshots=True) as rec:
    L = oclla.cholesky(a, lower=True, method="pivot")
run = rec.runs[-1]
for step in run.steps[:6]:
    print(f"step {step.index}: {step.phase:<13} region {step.region} "
          f"kernel {step.kernels[0].name} global={step.kernels[0].global_size}")
print(f"... {len(run.steps)} steps in all = {n} + {n - 1} + {n - 1}")
print("same as scipy:", np.allclose(L, scipy.linalg.cholesky(a, lower=True)))
print(f"backward error ‖A − LLᵀ‖/(n‖A‖ε) = "
      f"{accuracy.cholesky_backward_error(a, L, True):.3f}")

# %% [markdown]
# A matrix that is symmetric but not positive definite fails at a precise
# place, named like LAPACK's `info`:

# %%
try:
    oclla.cholesky(np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 1.0], [0.0, 1.0, 3.0]]))
except np.linalg.LinAlgError as err:
    print("LinAlgError:", err)

# %% [markdown]
# ### Why Cholesky needs no pivoting
#
# Lesson 4 needed row interchanges to keep the entries from growing. For an
# SPD matrix the diagonal of $A = LL^T$ reads
#
# $$a_{ii} = \sum_{j \le i} \ell_{ij}^2 \quad\Longrightarrow\quad
#   |\ell_{ij}| \le \sqrt{a_{ii}} \quad\text{for every } j \le i :$$
#
# no entry of $L$ can exceed the square root of the largest diagonal entry
# of $A$, whatever the order of the pivots. The trailing matrix shrinks too:
# after a pivot, $A_{11} - \ell_{10}\ell_{10}^T$ is again SPD (it is the
# Schur complement), and its diagonal entries $a_{ii} - \ell_{i0}^2$ only
# decrease. So the growth factor is at most 1, and the backward error bound
# $\|A - \hat L\hat L^T\| \le c\,n^2\varepsilon\|A\|$ holds with no growth
# term at all (Wilkinson; Higham, *Accuracy and Stability*, ch. 10).
#
# **Predict first.** Take the SPD matrix
# $A = \begin{pmatrix} \delta & c \\ c & 1 \end{pmatrix}$ with $\delta = 10^{-12}$ and
# $c = 0.9 \cdot 10^{-6}$ ($c^2 < \delta$, so it is positive definite). LU
# without pivoting would use the multiplier $c/\delta$. What is the largest
# entry of its Cholesky factor? Write it down, then run the cell:

# %%
predicted_largest_l = None        # your guess

# %%
delta, c = 1e-12, 0.9e-6
small_pivot = np.array([[delta, c], [c, 1.0]])
L_small = oclla.cholesky(small_pivot, lower=True, method="pivot")
print(f"LU without pivoting: multiplier c/δ = {c / delta:.3g}")
print(f"Cholesky: L = {L_small.tolist()}, largest |l_ij| = {np.abs(L_small).max():.3g} "
      f"(√max a_ii = {np.sqrt(small_pivot.diagonal().max()):.3g}; "
      f"you predicted {predicted_largest_l})")
print(f"backward error {accuracy.cholesky_backward_error(small_pivot, L_small, True):.3f} nε")
for n in (64, 256):
    a_n = spd_matrix(n, seed=n)
    L_n = oclla.cholesky(a_n, lower=True)
    print(f"random SPD n = {n}: max l_ij² / max a_ii = "
          f"{np.abs(L_n).max() ** 2 / a_n.diagonal().max():.3f}, backward error "
          f"{accuracy.cholesky_backward_error(a_n, L_n, True):.3f} nε")

# %% [markdown]
# The multiplier of LU was huge, yet Cholesky's entries stayed below
# $\sqrt{\max_i a_{ii}}$ and the backward error is tiny. (Pivoting still
# has uses for SPD matrices: LAPACK's `?pstrf` pivots on the largest diagonal
# entry to reveal the *rank* of a semidefinite matrix, not for stability.)

# %% [markdown]
# ## 2. A triangle-shaped NDRange
#
# The outer product step updates the entries $(i, j)$ with
# $k < j \le i < n$: a triangle of $t(t+1)/2$ entries, $t = n - k - 1$.
# A GPU in 2007 could rasterize a triangle directly; an OpenCL NDRange is a
# box. Launching the $t \times t$ box and letting the upper half return would
# idle half of the work-items, exactly the problem of Lesson 3. Instead the
# kernel is launched on a 1-D range of $t(t+1)/2$ work-items (rounded up to the
# work-group size), and each work-item turns its id $p$ into a row $r$ and a
# column $c$ of the triangle, numbered row by row ($p = r(r+1)/2 + c$):
#
# $$r = \left\lfloor \frac{\sqrt{8p + 1} - 1}{2} \right\rfloor, \qquad
#   c = p - \frac{r(r+1)}{2}, \qquad (i, j) = (k + 1 + r,\ k + 1 + c).$$
#
# (See `triangle_entry` in `kernels_cl/triangle.h`.)
#
# The trace records the triangle size; compare it with the box:

# %%
n = 200
with oclla.record() as rec:
    oclla.cholesky(spd_matrix(n), lower=True, method="pivot")
outer = [s for s in rec.runs[-1].steps if s.phase == "outer_product"]
print(f"{'pivot':>5} {'triangle':>9} {'launched':>9} {'box t²':>7}")
for s in outer[::40]:
    t = n - s.pivot[0] - 1
    launched = s.kernels[0].global_size[0]
    print(f"{s.pivot[0]:5d} {s.info['triangle_entries']:9d} {launched:9d} {t * t:7d}")
total_tri = sum(s.info["triangle_entries"] for s in outer)
total_box = sum((n - s.pivot[0] - 1) ** 2 for s in outer)
print(f"whole run: the triangles hold {total_tri / total_box:.1%} of the boxes' work-items")

# %% [markdown]
# ## 3. Rectangular full packed storage
#
# A triangle needs $n(n+1)/2$ numbers, but a plain triangular array is awkward
# for fast kernels (rows of different lengths). The **rectangular full packed**
# format (Gunnels and Gustavson; LAPACK's `?trttf`) cuts the triangle in two
# and fits the pieces into a rectangle of $n(n+1)/2$ entries. For the lower
# triangle with $n_1 = \lceil n/2 \rceil$, $n_2 = n - n_1$:
#
# $$L = \begin{pmatrix} L_{11} & \\ L_{21} & L_{22} \end{pmatrix}
#   \quad\longrightarrow\quad
#   \text{a column-major array with } L_{11},\ L_{21} \text{ in place and }
#   L_{22}^T \text{ in the unused corner above.}$$
#
# Label each entry with $10i + j$ and look at the packed array as its
# rectangle (`rfp.picture`, the paper's Fig. 3):

# %%
for n in (6, 9):
    labels = np.array([[10 * i + j if j <= i else 0 for j in range(n)] for i in range(n)],
                      dtype=np.float64)
    arf = rfp.pack(labels, lower=True)
    print(f"n = {n}: {arf.size} numbers = n(n+1)/2; as a rectangle:")
    print(rfp.picture(arf, n).astype(int))
    print("identical to LAPACK's dtrttf:",
          np.array_equal(arf, scipy.linalg.lapack.dtrttf(labels, uplo="L")[0]), "\n")

# %% [markdown]
# Three ordinary strided matrices live in the rectangle: $L_{11}$ (a
# triangle), $L_{21}$ (a full block) and $L_{22}^T$ (a triangle, transposed
# into the top corner). (The paper *rotates* $L_{22}$ by 180° instead of
# transposing it; oclla stores LAPACK's layout, so that scipy's `?pftrs` can use
# its factors.) Because the blocks are plain matrices, a blocked packed
# Cholesky is just LAPACK's `?pftrf` recipe on views of the array: Cholesky of
# $L_{11}$, a triangular solve for $L_{21}$, a symmetric rank-$k$ update of
# $L_{22}$, Cholesky of $L_{22}$. No copies, no index arithmetic in the inner
# loops.
#
# The per-pivot packed version follows the paper: in the first steps each
# outer-product step covers *two* triangles of the rectangle, because the
# trailing triangle is split between the lower trapezoid and the
# transposed corner; once it lies inside $L_{22}$, one box is enough.
# For packed runs the trace's regions (and pivots) are in
# the rectangle's coordinates; `info["logical_region"]` keeps the position in
# the $n \times n$ matrix, and `info["regions"]` lists the boxes a step touched:

# %%
n = 8
a8 = spd_matrix(n)
arf = rfp.pack(a8, lower=True)
with oclla.record(snapshots=True) as rec:
    factor = rfp.cholesky(arf, n, lower=True, method="pivot")
packed_run = rec.runs[-1]
for s in packed_run.steps:
    if s.phase == "outer_product":
        r0, r1, c0, c1 = s.info["logical_region"]      # the trailing triangle of pivot r0 - 1
        print(f"pivot {r0 - 1}: trailing triangle rows {r0}:{r1}, columns {c0}:{c1}; "
              f"boxes in the rectangle {s.info['regions']}")
print("unpacked factor equals scipy's:",
      np.allclose(rfp.unpack(factor, n, lower=True), scipy.linalg.cholesky(a8, lower=True)))

# %% [markdown]
# The viewer shows the packed run with the triangle and the rectangle side
# by side:

# %%
rec_path = output_dir() / "lesson06_packed_pivot.oclrec"
rec.save(rec_path)
viewer_export(rec_path, output_dir() / "lesson06_packed.png", after_step=5)

# %% [markdown]
# ## 4. Half the memory at the same speed
#
# The paper's claim: the packed factorization runs as fast as the full one
# (1% apart), because it does the same arithmetic on the same number of
# entries. We time oclla's blocked Cholesky in full and packed storage
# (float32; wall time including the copies to and from the device), with
# scipy's LAPACK as the reference:

# %%
print(f"{'n':>5} {'full MB':>8} {'packed MB':>9} {'full ms':>8} {'packed ms':>9} "
      f"{'packed/full':>11} {'scipy ms':>8}")
ratios = []
for n in (256, 512, 1024):
    a32 = spd_matrix(n, np.float32)
    arf32 = rfp.pack(a32, lower=True)
    t_full = best_of(lambda: oclla.cholesky(a32, lower=True))
    t_packed = best_of(lambda: rfp.cholesky(arf32, n, lower=True))
    t_scipy = best_of(lambda: scipy.linalg.cholesky(a32, lower=True))
    ratios.append(t_packed / t_full)
    print(f"{n:5d} {a32.nbytes / 1e6:8.2f} {arf32.nbytes / 1e6:9.2f} {t_full * 1e3:8.1f} "
          f"{t_packed * 1e3:9.1f} {ratios[-1]:11.2f} {t_scipy * 1e3:8.1f}")
print(f"packed/full on this run: {min(ratios):.2f} to {max(ratios):.2f}")

# %% [markdown]
# On a quiet machine the ratio stays near 1; on a shared one timings wobble
# by 10–20% or more (the last line says how far this run strayed), so look at
# the trend, or repeat. Packed storage is not a trade of speed for memory
# here: it is memory for free, which on a GPU means a twice larger problem
# fits on the card.
#
# ## Exercises
#
# **Exercise 1.** For a matrix of order $m = 10$, how many work-items does the
# outer product step of pivot $k = 3$ need (before rounding up to the
# work-group size)?

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** What shape (rows, columns) does the RFP rectangle of a
# matrix of order $n = 7$ have? (Look at the printout above, then find the
# rule for odd $n$.)

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Write `cholesky_host(a, steps=None)`: the paper's
# Algorithm 4 in numpy (square root, normalize, outer product subtraction on
# the lower triangle), stopped after `steps` pivots (all of them when `steps`
# is None). Return the lower triangle as the device holds it then: the first
# `steps` columns are $L$'s, the trailing triangle holds the updated entries
# (the Schur complement), zeros above the diagonal. Read only the lower
# triangle of `a`. The partial result is what the viewer shows after step
# `steps`; a library Cholesky cannot produce it.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** How many bytes does packed storage save, compared with full
# storage, for a float32 matrix of order $n = 4096$?

# %%
answer_4 = None
check_exercise_4(answer_4)
