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
# mix up most often: an unstable *algorithm* and an ill-conditioned *problem*;
# and we look at the last step of every solve, the triangular solves, where a
# device's parallel algorithm gives up some of substitution's stability.
#
# This lesson uses float64 on the device; PoCL and most GPUs support it
# (`oclla.devices()` shows `fp64=yes`).

# %%
import numpy as np

import oclla
from oclla import accuracy
from _checks.lesson04 import (check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4, check_exercise_5)
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
# **Predict first.** How wrong is it for a pivot that is small but not that
# small? Follow the rounding: without pivoting, $x_1$ comes out with a
# relative error of at most about $\varepsilon$, and then
# $x_0 = (1 - x_1)/\delta$. For $\delta = 10^{-10}$ in float64, predict the
# relative error of $x$ and write it down before running the cell (the table
# also shows other $\delta$):

# %%
predicted_error = None            # your guess for δ = 1e-10

# %%
print(f"{'δ':>7} {'relative error of x, no pivoting':>33} {'partial pivoting':>17}")
for d in (1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-14):
    a_d = np.array([[d, 1.0], [1.0, 1.0]])
    x_exact = np.array([1 / (1 - d), (1 - 2 * d) / (1 - d)])   # solved by hand
    errors = []
    for pivoting in ("none", "partial"):
        x = oclla.lu_solve(oclla.lu_factor(a_d, method="pivot", pivoting=pivoting), b)
        errors.append(np.abs(x - x_exact).max() / np.abs(x_exact).max())
    print(f"{d:7.0e} {errors[0]:33.1e} {errors[1]:17.1e}")
print(f"you predicted {predicted_error} for δ = 1e-10")

# %% [markdown]
# Dividing by $\delta$ multiplies the rounding error of $x_1$ by $1/\delta$:
# the error grows like $\varepsilon/\delta$ (less when the rounding happens to
# be small, so the table sits at or below $\varepsilon/\delta \approx 2\cdot
# 10^{-16}/\delta$). With partial pivoting it stays at the level of
# $\varepsilon$ for every $\delta$.
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
# $\|PA - LU\| \lesssim c\, n\, \rho\, \varepsilon\, \|A\|$. The bound goes one
# way only: small growth *guarantees* a small error; large growth *allows* a
# large error but does not force one (section 3 shows a huge growth with
# factors exact to the last bit). In units of $n\varepsilon$ a good
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
    rec.runs[-1].variant += f", pivoting {pivoting}"     # the viewer's title for the run
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
    x_lapack = np.linalg.solve(W, rhs)
    print(f"n = {n:2d}: ρ = {accuracy.growth_factor(W, lu):9.3g}   "
          f"factorization η = {accuracy.lu_backward_error(W, lu, piv):6.3g} nε   "
          f"solve backward error {accuracy.solve_backward_error(W, x, rhs):9.3g} nε "
          f"(LAPACK's: {accuracy.solve_backward_error(W, x_lapack, rhs):9.3g} nε)")

# %% [markdown]
# Read the factorization column: its backward error is zero. Every entry of
# $L$ and $U$ is an integer, computed exactly, however large the growth. The
# huge last column of $U$ wrecks the triangular solves instead (the *solve*
# backward error). LAPACK behaves the same (its solve error is printed beside
# oclla's).
#
# Is this only a curiosity? For random matrices, yes (next cell). But real
# problems have met it: Wright (1993) found matrices from multiple shooting
# for two-point boundary value problems, and Foster (1994) matrices from a
# quadrature rule for Volterra integral equations, on which partial pivoting
# grows exponentially. Partial pivoting stays everyone's default because such
# matrices are rare and the growth can be checked after the fact;
# **complete pivoting** (the largest entry of the whole trailing matrix, rows
# *and* columns interchanged) or QR avoid the exponential case at a higher
# price.
#
# ### Growth on random matrices, and complete pivoting
#
# Trefethen and Bau (Lectures 20–23) report that on random matrices partial
# pivoting's growth behaves roughly like $\sqrt n$, nowhere near $2^{n-1}$.
# Complete pivoting searches $(n-k)^2$ entries per step instead of $n-k$ (a
# search on the host is fine at these sizes); its growth is provably
# subexponential, and in practice it stays small.

# %%
def growth_complete_pivoting(a):
    """Growth factor of LU with complete pivoting (host, numpy; teaching sizes only)."""
    u = np.array(a, dtype=np.float64)
    n = len(u)
    for k in range(n - 1):
        r, c = np.unravel_index(np.argmax(np.abs(u[k:, k:])), (n - k, n - k))
        u[[k, k + r]] = u[[k + r, k]]              # row interchange
        u[:, [k, k + c]] = u[:, [k + c, k]]        # column interchange
        u[k + 1:, k:] -= np.outer(u[k + 1:, k] / u[k, k], u[k, k:])
    return np.abs(np.triu(u)).max() / np.abs(a).max()


print(f"{'n':>4} {'√n':>6} {'partial (mean of 4)':>20} {'partial / √n':>13} "
      f"{'complete (mean of 4)':>21}")
for n in (16, 32, 64, 128):
    partial, complete = [], []
    for seed in range(4):
        a = np.random.default_rng(100 + seed).standard_normal((n, n))
        partial.append(accuracy.growth_factor(a, oclla.lu_factor(a)[0]))
        complete.append(growth_complete_pivoting(a))
    print(f"{n:4d} {np.sqrt(n):6.1f} {np.mean(partial):20.2f} "
          f"{np.mean(partial) / np.sqrt(n):13.2f} {np.mean(complete):21.2f}")
W40 = wilkinson(40)
partial_w40 = accuracy.growth_factor(W40, oclla.lu_factor(W40)[0])
print(f"Wilkinson's matrix, n = 40: partial {partial_w40:.3g}, "
      f"complete {growth_complete_pivoting(W40):.3g}")

# %% [markdown]
# On random matrices both growths rise slowly with $n$, partial pivoting's
# roughly in proportion to $\sqrt n$ (the ratio column stays near a constant,
# give or take the scatter of four samples), complete pivoting's lower still; on
# Wilkinson's matrix complete pivoting removes the exponential growth.
#
# ## 4. float32 or float64? Stability against conditioning
#
# Two different questions:
#
# * Is the **algorithm** stable? Then the backward error $\eta$ is of order 1
#   *in units of the working precision's* $\varepsilon$, in any precision.
# * Is the **problem** well conditioned? The condition number
#   $\kappa(A) = \|A\|\,\|A^{-1}\|$ says how much a relative perturbation of
#   $A$ or $b$ can change $x$.
#
# The link is exact and computable after the fact. Let $r = b - A\hat x$ and
# $\beta = \|r\| / (\|A\|\,\|\hat x\|)$, the normwise backward error:
# $\hat x$ solves $(A + \Delta A)\hat x = b$ with $\Delta A = r\hat x^T/\|\hat x\|^2$,
# $\|\Delta A\| = \beta\|A\|$. Since $x - \hat x = A^{-1} r$,
#
# $$\frac{\|\hat x - x\|}{\|\hat x\|} \le \|A^{-1}\|\,\frac{\|r\|}{\|\hat x\|}
#   = \kappa(A)\,\beta .$$
#
# A backward stable solve makes $\beta$ a modest multiple of $n\varepsilon$
# (Wilkinson's bound; often much less), so the **rule of thumb**
# $\kappa(A)\,\varepsilon$ estimates the forward error up to that factor: it is
# an estimate, not a bound. $\kappa\beta$ *is* a bound, once $\kappa$ is known.
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
print(f"{'κ₂':>7} {'dtype':>8} {'η solve':>8} {'β/ε':>6} {'forward error':>14} "
      f"{'bound κβ':>9} {'rule κε':>9}")
for kappa in (1e1, 1e3, 1e5, 1e7):
    a64 = with_condition(n, kappa)
    for dtype in (np.float32, np.float64):
        a = a64.astype(dtype)
        rhs = (a.astype(np.float64) @ x_true).astype(dtype)
        x = oclla.lu_solve(oclla.lu_factor(a), rhs)
        a_, x_, rhs_ = (np.asarray(v, np.float64) for v in (a, x, rhs))
        x_exact = np.linalg.solve(a_, rhs_)        # the stored problem's own solution
        beta = np.linalg.norm(rhs_ - a_ @ x_) / (np.linalg.norm(a_, 2) * np.linalg.norm(x_))
        fwd = np.linalg.norm(x_ - x_exact) / np.linalg.norm(x_)
        eta = accuracy.solve_backward_error(a, x, rhs)
        print(f"{kappa:7.0e} {np.dtype(dtype).name:>8} {eta:8.2f} "
              f"{beta / accuracy.eps(dtype):6.2f} {fwd:14.2e} {kappa * beta:9.1e} "
              f"{kappa * accuracy.eps(dtype):9.1e}")

# %% [markdown]
# The backward error columns are small and about the same in both
# precisions: the algorithm is equally stable in each. The forward error
# never exceeds the bound $\kappa\beta$ (the forward error is measured against
# the exact solution of the problem as stored, so that the rounding of $A$
# and $b$ to float32 does not count). It follows the rule of thumb
# $\kappa\varepsilon$ only up to the factor $\beta/\varepsilon$ printed beside
# it: float32 keeps about $7 - \log_{10}\kappa$ correct digits, float64 about
# $16 - \log_{10}\kappa$, give or take one. At $\kappa = 10^7$ float32 has
# almost nothing left, although the solver did its job perfectly. No algorithm can
# fix a problem that is too ill-conditioned for its precision; only more
# precision can, or the mixed-precision refinement of Lesson 7.
#
# ### Estimating κ from the factors
#
# The bound needs $\kappa(A) = \|A\|\,\|A^{-1}\|$, and computing $A^{-1}$
# costs more than the solve. LAPACK's condition estimator (`?gecon`, Hager's
# method as refined by Higham) needs only the factors: a few triangular solves
# with $L$ and $U$, $O(n^2)$ work, give $\|A^{-1}\|_1$ to within a small
# factor (compare the two columns below). It reads oclla's packed factors directly (the
# estimate of $\|A^{-1}\|_1$ does not depend on the row interchanges):

# %%
from scipy.linalg import lapack

print(f"{'κ₂ built':>9} {'κ₁ exact':>9} {'κ₁ estimated':>13} {'bound κ̂₁β₁':>11} "
      f"{'forward error (1-norm)':>23}")
for kappa in (1e3, 1e7):
    a = with_condition(n, kappa)
    rhs = a @ x_true
    lu, piv = oclla.lu_factor(a)
    x = oclla.lu_solve((lu, piv), rhs)
    anorm = np.linalg.norm(a, 1)
    rcond, info = lapack.dgecon(np.asfortranarray(lu), anorm, norm="1")
    beta1 = np.linalg.norm(rhs - a @ x, 1) / (anorm * np.linalg.norm(x, 1))
    fwd1 = np.linalg.norm(x - np.linalg.solve(a, rhs), 1) / np.linalg.norm(x, 1)
    print(f"{kappa:9.0e} {np.linalg.cond(a, 1):9.2e} {1 / rcond:13.2e} "
          f"{beta1 / rcond:11.1e} {fwd1:23.1e}")

# %% [markdown]
# With the estimate, every solve can report a guaranteed error bound at
# $O(n^2)$ extra cost: that is what LAPACK's expert drivers (`?gesvx`, their
# `ferr`) do.
#
# ## 5. Triangular solves on the device, and their stability
#
# Every solve above ends with two triangular solves. On the host they are
# **substitution**, one unknown after the other (back substitution for $U$):
#
# $$x_i = \Big(b_i - \sum_{j > i} u_{ij} x_j\Big) \Big/ u_{ii},
#   \qquad i = n-1, \dots, 0 .$$
#
# Substitution is backward stable in the strongest sense: the computed
# $\hat x$ solves $(U + \Delta U)\hat x = b$ with
# $|\Delta u_{ij}| \le n\varepsilon\,|u_{ij}|$ entry by entry, however
# ill-conditioned $U$ is (Higham, *Accuracy and Stability*, Thm. 8.5). But it
# is as sequential as the pivots of Lesson 3: unknown $i$ needs all the
# unknowns after it.
#
# A device wants matrix products instead. `oclla.blas.trsm` cuts $U$ into
# diagonal blocks $U_{jj}$ of order $n_b$ and works block row by block row,
# $x_j = U_{jj}^{-1}\big(b_j - \sum_{k > j} U_{jk} x_k\big)$, the sums as matrix
# products (GEMM). It has two ways to apply $U_{jj}^{-1}$:
#
# * `inverse=False`: solve with $U_{jj}$ by substitution in a kernel
#   (`trsm_block`), one diagonal block after the other;
# * `inverse=True`: **invert all diagonal blocks** in one parallel launch
#   (`trtri_blocks`), then multiply by the inverses (GEMM): more parallel, no
#   substitution on the critical path (MAGMA's `trsm` does the same).
#
# Multiplying by a computed inverse is not substitution, though: its backward
# error grows with $\kappa(U_{jj})$ (Du Croz and Higham, 1992). We measure the
# **componentwise backward error** (the smallest relative change of each
# entry of $T$ and $b$ that makes $\hat x$ exact, Oettli and Prager),
#
# $$\omega = \max_i \frac{|b - T\hat x|_i}{(|T|\,|\hat x| + |b|)_i},$$
#
# in units of $\varepsilon$, for random upper triangular matrices, whose
# condition number grows like $2^n$ (Viswanath and Trefethen, 1998): both
# device variants, and LAPACK's substitution on the host
# (`scipy.linalg.solve_triangular`).

# %%
import pyopencl.array as cl_array
import scipy.linalg

from oclla import blas

queue = oclla.get_queue()


def componentwise_backward_error(t, x, rhs):
    """Oettli-Prager: max_i |rhs - t x|_i / (|t| |x| + |rhs|)_i, in units of ε (float64)."""
    residual = np.abs(rhs - t @ x)
    return (residual / (np.abs(t) @ np.abs(x) + np.abs(rhs))).max() / accuracy.eps(np.float64)


def device_trsm(t, rhs, inverse):
    """Solve the upper triangular t x = rhs with oclla.blas.trsm on the device."""
    t_dev = cl_array.to_device(queue, t)
    x_dev = cl_array.to_device(queue, rhs.reshape(-1, 1).copy())
    blas.trsm(queue, len(rhs), 1, blas.view_of(t_dev), blas.view_of(x_dev),
              dtype=np.float64, lower=False, inverse=inverse)
    return x_dev.get().ravel()


print("ω in units of ε; device: inverted blocks and substitution, host: LAPACK")
print(f"{'n':>4} {'κ₁(T)':>9} {'inverted blocks':>16} {'substitution':>13} {'LAPACK':>8}")
for n_t in (8, 16, 24, 32, 48):
    T = np.triu(np.random.default_rng(n_t).standard_normal((n_t, n_t)))
    rhs = T @ np.ones(n_t)
    omegas = [componentwise_backward_error(T, x, rhs)
              for x in (device_trsm(T, rhs, True), device_trsm(T, rhs, False),
                        scipy.linalg.solve_triangular(T, rhs))]
    print(f"{n_t:4d} {np.linalg.cond(T, 1):9.1e} {omegas[0]:16.2g} {omegas[1]:13.2g} "
          f"{omegas[2]:8.2g}")

with oclla.record() as rec:
    oclla.lu_solve(oclla.lu_factor(T), rhs)
solve_kernels = {k.name for k in rec.runs[-1].kernels}
print("on this device lu_solve", "inverts the diagonal blocks (trtri_blocks)"
      if "trtri_blocks" in solve_kernels else "solves the diagonal blocks by substitution")

# %% [markdown]
# Substitution's $\omega$, on the device as on the host, stays of order 1
# whatever $\kappa(T)$; the inverted blocks' grows with the condition number
# of the diagonal blocks (at these sizes the matrix is a single block or a
# few). Which of the two `lu_solve` uses is a per-device choice of speed (the
# last line says which one this device makes). It is a trade of stability
# for parallelism, and it is why it matters which triangular matrices reach
# the solver: the factors of a pivoted LU or of a Cholesky factorization
# usually have well-conditioned diagonal blocks (the small solve errors of
# section 4 say so for those matrices), while an arbitrary ill-conditioned
# triangular matrix does not. Where it matters, solve by substitution, or
# repair the solution with a step of iterative refinement (Lesson 7), which
# needs only a residual in higher precision.
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
# Wilkinson's matrix of order 60? (An exact number: find the rule in the
# table for $n$ = 10, 20, 40, or factor `wilkinson(4)` by hand.)

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

# %% [markdown]
# **Exercise 5.** Pick the pivots yourself. Wilkinson's matrix of order 8
# grows by $2^7 = 128$ under partial pivoting. Give a list of 7 picks
# `(row, col)`, one per step, each in the trailing matrix (rows and columns
# $k \dots 7$ at step $k$; the pick's row and column are interchanged with
# row and column $k$), for which the growth factor is at most 2. Try picks
# with the viewer's pivot game: `oclla.viewer.pick_pivot.play(wilkinson(8), picks)`
# eliminates with your picks on the device and returns `.growth` (and
# `.growth_by_step`, `.states`); `oclla-viewer --pick` plays the same game
# with the mouse.

# %%
answer_5 = None
check_exercise_5(answer_5)
