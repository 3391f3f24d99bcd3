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
# # Lesson 4 — Pivoting and stability
#
# Lesson 2 ended with a matrix on which elimination without row interchanges
# stops at a zero pivot. Here is the more dangerous case: a *small* pivot,
# where nothing stops, and the answer is silently wrong. You will learn to
# measure how wrong, with two numbers every numerical library reports:
#
# * the **growth factor**: how large the entries became during elimination;
# * the **backward error in units of $\varepsilon$**: how far the computed
#   factors are from being exact factors of the input.
#
# Then we compare float32 with float64 and separate the two things people
# mix up most often: an unstable *algorithm* and an ill-conditioned *problem*.
#
# This lesson uses float64 on the device; PoCL and most GPUs support it
# (`oclla.devices()` shows `fp64=yes`).

# %%
import numpy as np

import oclla
from oclla import accuracy
from _checks.lesson04 import (check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, viewer_export

# %% [markdown]
# ## 1. A small pivot
#
# Take $\delta = 10^{-20}$ and
#
# $$A = \begin{pmatrix} \delta & 1 \\ 1 & 1 \end{pmatrix}.$$
#
# Without pivoting, $\ell_{10} = 1/\delta = 10^{20}$ and
# $u_{11} = 1 - 10^{20}$. In float64 the "1" is far below the last digit of
# $10^{20}$ and is lost: the computed $u_{11}$ is $-10^{20}$, and
#
# $$L\,U = \begin{pmatrix} 1 & 0 \\ 10^{20} & 1 \end{pmatrix}
#          \begin{pmatrix} \delta & 1 \\ 0 & -10^{20} \end{pmatrix}
#        = \begin{pmatrix} \delta & 1 \\ 1 & 0 \end{pmatrix} \ne A.$$
#
# Let the device check:

# %%
delta = 1e-20
A = np.array([[delta, 1.0], [1.0, 1.0]])
b = np.array([1.0, 2.0])                  # the solution is very close to (1, 1)
for pivoting in ("none", "partial"):
    lu, piv = oclla.lu_factor(A, method="pivot", pivoting=pivoting)
    L, U = accuracy.split_lu(lu)
    x = oclla.lu_solve((lu, piv), b)
    print(f"pivoting={pivoting!r:10} piv={piv}  L@U={(L @ U).tolist()}  x={x}")

# %% [markdown]
# With partial pivoting the rows are swapped first: the multiplier is
# $\delta$ and every number stays of size 1. Without it, $x_0 = 0$ instead of
# 1: not a rounding error in the last digit, a completely wrong answer.
#
# ## 2. Measuring it: growth factor and backward error
#
# The **growth factor** compares the largest entry of $U$ with the largest
# entry of $A$:
#
# $$\rho = \frac{\max_{ij} |u_{ij}|}{\max_{ij} |a_{ij}|}.$$
#
# The **backward error** asks: for which nearby matrix are the computed
# factors exact? We measure the residual relative to the size of $A$, the
# order $n$ and the machine epsilon $\varepsilon$ of the working precision:
#
# $$\eta = \frac{\|PA - LU\|_\infty}{n\,\|A\|_\infty\,\varepsilon}.$$
#
# Wilkinson's analysis of Gaussian elimination gives
# $\|PA - LU\| \lesssim c\, n\, \rho\, \varepsilon\, \|A\|$: the error is
# small exactly when the growth is small. In units of $n\varepsilon$ a good
# factorization has $\eta$ of order 1, and LAPACK's and MAGMA's test suites
# accept $\eta < 30$ (`oclla.accuracy.THRESHOLD`).

# %%
print(f"ε(float64) = {accuracy.eps(np.float64):.3e},  "
      f"ε(float32) = {accuracy.eps(np.float32):.3e},  threshold = {accuracy.THRESHOLD}")
for pivoting in ("none", "partial"):
    lu, piv = oclla.lu_factor(A, method="pivot", pivoting=pivoting)
    err = accuracy.lu_backward_error(A, lu, piv)
    print(f"2x2, pivoting={pivoting!r:10} growth ρ = {accuracy.growth_factor(A, lu):9.3g}   "
          f"η = {err:9.3g} nε   passes: {accuracy.passes(err)}")

# %% [markdown]
# `growth_factor` reads only the upper triangle of the packed `lu`, so we can
# pass it directly.
#
# Random matrices are kinder than our $2\times 2$, but not kind. Without
# pivoting, small pivots turn up by chance:

# %%
print(f"{'n':>5} {'seed':>4} {'ρ (none)':>10} {'η (none)':>10} {'ρ (partial)':>12} "
      f"{'η (partial)':>12}")
for n in (64, 256):
    for seed in range(3):
        a = np.random.default_rng(seed).standard_normal((n, n))
        row = []
        for pivoting in ("none", "partial"):
            lu, piv = oclla.lu_factor(a, method="pivot", pivoting=pivoting)
            row += [accuracy.growth_factor(a, lu), accuracy.lu_backward_error(a, lu, piv)]
        print(f"{n:5d} {seed:4d} {row[0]:10.3g} {row[1]:10.3g} {row[2]:12.3g} {row[3]:12.3g}")

# %% [markdown]
# With partial pivoting every multiplier satisfies $|\ell_{rk}| \le 1$, the
# growth stays small and $\eta$ is far below 1. Without it, the growth is
# tens to thousands of times larger and the error follows: sometimes still
# under the threshold, sometimes not, and you cannot know in advance.
#
# The viewer shows both runs on a $10\times 10$ random matrix side by side,
# step by step: watch the entries grow without pivoting.

# %%
small = np.random.default_rng(5).standard_normal((10, 10))
paths = {}
for pivoting in ("none", "partial"):
    with oclla.record(snapshots=True) as rec:
        oclla.lu_factor(small, method="pivot", pivoting=pivoting)
    paths[pivoting] = output_dir() / f"lesson04_pivoting_{pivoting}.oclrec"
    rec.save(paths[pivoting])
viewer_export(paths["none"], output_dir() / "lesson04_none_vs_partial.png", after_step=6,
              view="compare", compare=paths["partial"], args=("--size", "1600x820"))

# %% [markdown]
# ## 3. Partial pivoting has a worst case
#
# Partial pivoting bounds each multiplier, not the growth: $\rho \le 2^{n-1}$,
# and Wilkinson found a matrix that reaches it. Ones on the diagonal and in
# the last column, $-1$ below the diagonal:

# %%
def wilkinson(n):
    w = np.eye(n) - np.tril(np.ones((n, n)), -1)
    w[:, -1] = 1.0
    return w


print(wilkinson(5))
for n in (10, 20, 40):
    W = wilkinson(n)
    lu, piv = oclla.lu_factor(W)
    rhs = W @ np.random.default_rng(0).standard_normal(n)
    x = oclla.lu_solve((lu, piv), rhs)
    print(f"n = {n:2d}: ρ = {accuracy.growth_factor(W, lu):9.3g} "
          f"(2^(n-1) = {2.0 ** (n - 1):9.3g})   "
          f"solve backward error {accuracy.solve_backward_error(W, x, rhs):9.3g} nε")

# %% [markdown]
# The factors themselves are exact here (all entries are powers of two), but
# the huge last column of $U$ wrecks the triangular solves. LAPACK behaves the
# same (`np.linalg.solve` gives the same error). Matrices like this are
# extremely rare in practice, which is why partial pivoting is everyone's
# default; complete pivoting or QR avoid the worst case at a higher price.
#
# ## 4. float32 or float64? Stability against conditioning
#
# Two different questions:
#
# * Is the **algorithm** stable? Then the backward error $\eta$ is of order 1
#   *in units of the working precision's* $\varepsilon$, in any precision.
# * Is the **problem** well conditioned? The condition number
#   $\kappa(A) = \|A\|\,\|A^{-1}\|$ says how much a relative perturbation of
#   $A$ or $b$ can change $x$. A backward stable solve gives a forward error of
#   about
#
# $$\frac{\|\hat x - x\|}{\|x\|} \lesssim \kappa(A)\,\varepsilon.$$
#
# We build matrices with a chosen $\kappa$ (random orthogonal $Q_1, Q_2$ and
# singular values spaced from 1 down to $1/\kappa$) and solve in both
# precisions.

# %%
def with_condition(n, kappa, seed=0):
    rng = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return q1 @ np.diag(np.logspace(0, -np.log10(kappa), n)) @ q2.T


n = 128
x_true = np.ones(n)
print(f"{'κ':>7} {'dtype':>8} {'η solve':>8} {'forward error':>14} {'κ·ε':>9}")
for kappa in (1e1, 1e3, 1e5, 1e7):
    a64 = with_condition(n, kappa)
    b64 = a64 @ x_true
    for dtype in (np.float32, np.float64):
        a, rhs = a64.astype(dtype), b64.astype(dtype)
        x = oclla.lu_solve(oclla.lu_factor(a), rhs)
        fwd = np.linalg.norm(x - x_true, np.inf) / np.linalg.norm(x_true, np.inf)
        eta = accuracy.solve_backward_error(a, x, rhs)
        print(f"{kappa:7.0e} {np.dtype(dtype).name:>8} {eta:8.2f} {fwd:14.2e} "
              f"{kappa * accuracy.eps(dtype):9.1e}")

# %% [markdown]
# The backward error column is small and about the same in both precisions:
# the algorithm is equally stable in each. The forward error tracks
# $\kappa\varepsilon$: float32 keeps about $7 - \log_{10}\kappa$ correct
# digits, float64 about $16 - \log_{10}\kappa$. At $\kappa = 10^7$ float32 has
# almost nothing left, although the solver did its job perfectly. No algorithm can
# fix a problem that is too ill-conditioned for its precision; only more
# precision can, or the mixed-precision refinement of Lesson 7.
#
# ## Exercises
#
# **Exercise 1.** At step 0, column 0 of a matrix holds
# $(0.5,\ -3,\ 2,\ 1)$. Which row index (0-based) does partial pivoting
# choose as the pivot row?

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** What is the growth factor of partial pivoting on
# Wilkinson's matrix of order 20? (An exact number.)

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Construct an invertible $3\times 3$ float64 matrix whose LU
# *without pivoting* has a backward error above 1000 (in units of
# $n\varepsilon$), while with partial pivoting it passes. The checker runs
# `oclla.lu_factor` both ways. (Elimination must not stop at an exact zero
# pivot: make it small instead.)

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** A matrix has $\kappa(A) = 10^4$. Estimate the relative
# forward error of a backward stable solve in float32 with the rule of thumb
# $\kappa\,\varepsilon$. (A number.)

# %%
answer_4 = None
check_exercise_4(answer_4)
