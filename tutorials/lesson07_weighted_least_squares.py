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
# # Lesson 7 — Weighted least squares in mixed precision
#
# The last lesson puts everything together on a real problem: fitting a model
# to measurements of uneven quality. Following Jung and O'Leary (2008) we
#
# 1. write weighted least squares as the **normal equations**
#    $A D^2 A^T x = A D^2 b$;
# 2. **assemble** $C = A D^2 A^T$ on the device, one triangle only;
# 3. factor $C$ in **float32** on the device (fast, half the memory), and
# 4. recover **float64** accuracy by **iterative refinement**, with residuals
#    computed in float64 on the host;
#
# then reproduce the first row of the paper's Tables 1 and 2 and explain its
# iteration counts.

# %%
import numpy as np
import scipy.linalg

import oclla
from _checks import missing
from _checks.lesson07 import (REQUIRES, check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, viewer_export

if missing(REQUIRES):
    raise SystemExit(f"This lesson needs {', '.join(missing(REQUIRES))}: update oclla.")

EPS32, EPS64 = np.finfo(np.float32).eps, np.finfo(np.float64).eps

# %% [markdown]
# ## 1. Weighted least squares
#
# We measure $b_k$ at times $t_k$, $k = 0, \dots, n-1$, and model the data
# with $m$ basis functions: $b_k \approx \sum_j x_j \phi_j(t_k)$. With
# $a_{jk} = \phi_j(t_k)$ (an $m \times n$ matrix, $m \le n$: one *row* per
# unknown, one *column* per observation, as in the paper) and weights $d_k$,
# the inverse standard deviations of the measurements, we solve
#
# $$\min_x \;\| D\,(b - A^T x) \|_2^2 = \sum_k d_k^2 \Big(b_k - \sum_j x_j \phi_j(t_k)\Big)^2 .$$
#
# Setting the gradient to zero gives the normal equations
#
# $$\underbrace{A D^2 A^T}_{C,\ m \times m} \; x = \underbrace{A D^2 b}_{g}.$$
#
# $C$ is symmetric positive definite when $A$ has full rank: a job for
# Cholesky (Lesson 6). A small example: a cubic through noisy data whose
# noise grows with $t$.

# %%
rng = np.random.default_rng(7)
n_obs = 400
t = np.sort(rng.random(n_obs))
sigma = 0.01 + 0.3 * t ** 2                       # the measurements get worse with t
truth = np.array([1.0, -2.0, 0.5, 3.0])           # x_j: coefficients of 1, t, t², t³
A = np.vstack([t ** j for j in range(4)])         # m = 4 rows, n = 400 columns
b = truth @ A + sigma * rng.standard_normal(n_obs)
d2 = 1.0 / sigma ** 2                             # weights d_k² = 1/σ_k²

fit = oclla.wls_solve(A, d2, b)
plain = np.linalg.lstsq(A.T, b, rcond=None)[0]    # ignoring the weights
print("true coefficients:     ", truth)
print("weighted fit (oclla):  ", np.round(fit.x, 3), f"after {fit.iterations} refinement steps")
print("unweighted fit (numpy):", np.round(plain, 3))
print("numpy with the weights:", np.round(np.linalg.lstsq((A * np.sqrt(d2)).T, np.sqrt(d2) * b,
                                                           rcond=None)[0], 3))

# %% [markdown]
# The weighted fit trusts the precise early measurements and lands closer to
# the truth than the unweighted one.
#
# ## 2. Assembling $A D^2 A^T$ on the device
#
# With $a_k$ the $k$-th column of $A$,
#
# $$C = \sum_{k=0}^{n-1} d_k^2\, a_k a_k^T ,$$
#
# a sum of rank-1 updates. The paper's Algorithm 3 does exactly that: per
# column a **scaling** kernel $w = d_k^2 a_k$ and an **outer product** kernel
# $C \mathrel{+}= a_k w^T$ over the lower triangle only (the triangle NDRange of
# Lesson 6). oclla's fast variant forms $W = A D^2$ once and runs one GEMM
# restricted to the triangle: the same arithmetic, BLAS-3 shaped (Lesson 5).

# %%
m, n = 8, 16
a_small = rng.random((m, n))
d2_small = rng.random(n)
with oclla.record(snapshots=True) as rec:
    c_pivot = oclla.assemble_ad2at(a_small, d2_small, method="pivot")
c_blocked = oclla.assemble_ad2at(a_small, d2_small)
reference = np.tril((a_small * d2_small) @ a_small.T)
print("phases of the pivot variant:", sorted({s.phase for s in rec.runs[-1].steps}),
      f"({len(rec.runs[-1].steps)} steps for n = {n} columns)")
print("pivot variant == numpy:  ", np.allclose(c_pivot, reference))
print("blocked variant == numpy:", np.allclose(c_blocked, reference))
print("upper triangle left at zero:", not np.triu(c_blocked, 1).any())
rec_path = output_dir() / "lesson07_assembly.oclrec"
rec.save(rec_path)
viewer_export(rec_path, output_dir() / "lesson07_assembly.png", after_step=9, view="matrix")

# %% [markdown]
# ## 3. Why float32 alone is not enough
#
# Forming $C$ squares the condition number:
#
# $$\kappa(C) = \kappa(A D^2 A^T) = \kappa(D A^T)^2 .$$
#
# A float32 solve loses about $\log_{10}\kappa(C)$ of its seven digits
# (Lesson 4: relative error $\approx \kappa\,\varepsilon_{32}$), which is
# everything once $\kappa(C)$ reaches $10^7$. Yet float32
# is where the device is fastest, and the factorization is the $O(m^3)$ part.
#
# **Mixed-precision iterative refinement** (the paper's Algorithm 1) keeps
# the float32 factor $L$ and repairs the solution in float64:
#
# $$\begin{aligned}
#   x^0 &= \text{double}\big((LL^T)^{-1}\, \text{single}(g)\big),\\
#   r^k &= g - C\,x^k &&\text{in float64, with } A, D, b \text{ in float64},\\
#   x^{k+1} &= x^k + \text{double}\big((LL^T)^{-1}\,\text{single}(r^k)\big),
# \end{aligned}$$
#
# until a stopping test holds. Each step costs two triangular solves
# ($O(m^2)$ flops) and a residual $A\big(D^2 (A^T x)\big)$ ($O(mn)$): in flops,
# far less than assembly ($O(m^2 n)$) and factorization ($O(m^3)$). In
# seconds it depends on where each part runs; section 4 measures it.
#
# **When it converges.** Write $\hat C = \hat L\hat L^T$ for what the float32
# factor really factors. The error obeys $e^{k+1} = (I - \hat C^{-1} C)\,e^k$
# (plus float64 rounding), so refinement converges when the spectral radius
# $\rho$ of $I - \hat C^{-1} C$ is below 1, and then contracts the error by
# about $\rho$ per step. Since $\hat C = C + E$ with $\|E\| \lesssim
# c\,m\,\varepsilon_{32}\|C\|$, $\rho \lesssim c\,m\,\kappa(C)\,\varepsilon_{32}$:
# a *sufficient* condition is $\kappa(C)\,\varepsilon_{32}$ well below 1. The
# residual is exact to float64, so the limit is the float64 accuracy, about
# $\kappa(C)\,\varepsilon_{64}$.
#
# **How many steps.** From an initial relative error $e_0$ the error after $k$
# steps is about $e_0\rho^k$. The correction of step $k$ is about the error
# *before* it, $e_0\rho^{k-1}$, and a test on it stops after
#
# $$k \approx 1 + \Big\lceil \frac{\log(\text{tol}/e_0)}{\log \rho} \Big\rceil$$
#
# steps: the last step only confirms what the one before achieved.
#
# **A scale-free stopping test.** The paper stops when
# $\|r^k\|_2/\|x^{k+1}\|_2 \le \text{tol}$. That quantity carries the units of
# $C$: multiply every weight by $s$ and $C$, $g$ and $r$ scale by $s$ while $x$
# does not, so for large $s$ the test never holds and for small $s$ it holds at
# once, with the same data. A test should compare quantities of the same
# units: the relative correction $\|\delta^k\|/\|x^{k+1}\|$ (a dimensionless
# change of $x$, about its relative error), or the residual against what
# float64 rounding alone explains, $\|r\|$ against $\varepsilon_{64}\|C\|\,\|x\|$.
# oclla's `wls_solve` uses a test of that kind (its docstring gives the exact
# rule); the result lists the quantities it looked at.
#
# ## 4. The paper's Tables 1 and 2, first row
#
# The paper's generator: $A$ ($m \times n$, $n = 2m$), $b$ and (Table 1) the
# diagonal of $D^2$ uniform in $[0, 1]$; for Table 2 the weights spread over
# eight orders of magnitude, $d_i^2 = 10^{-4 + 8i/(n-1)}$. Tolerance
# $10^{-8}$, at most 100 steps. Errors are relative to a float64 CPU solve.

# %%
PAPER = {1: dict(err_x0=3.11e-4, err_refined=3.37e-13, iterations=4),
         2: dict(err_x0=2.92e-2, err_refined=1.16e-10, iterations=7)}


def paper_problem(m, table, seed=0):
    rng = np.random.default_rng(seed)
    n = 2 * m
    a, b = rng.random((m, n)), rng.random(n)
    d2 = rng.random(n) if table == 1 else 10.0 ** (-4 + 8 * np.arange(n) / (n - 1))
    return a, d2, b


m = 512
problems = {}
for table in (1, 2):
    a, d2, b = paper_problem(m, table)
    c64 = (a * d2) @ a.T
    problems[table] = (a, d2, b, c64)
    print(f"Table {table}: κ(C) = {np.linalg.cond(c64):.1e}, "
          f"κ(C)·ε32 = {np.linalg.cond(c64) * EPS32:.1e}")

# %% [markdown]
# **Predict first.** From these condition numbers and section 3 (the
# contraction factor $\rho$ is at most about $\kappa(C)\,\varepsilon_{32}$, the
# float32 solution starts with an error $e_0$ of about the same size, and the
# step rule), how many refinement steps will each table take to reach
# $10^{-8}$? Write your guesses down, then run the solve:

# %%
predicted_steps = {1: None, 2: None}      # your guesses

# %%
rows = {}
for table, (a, d2, b, c64) in problems.items():
    x_cpu = scipy.linalg.cho_solve(scipy.linalg.cho_factor(c64), a @ (d2 * b))
    result = oclla.wls_solve(a, d2, b, tol=1e-8, max_iter=100)

    def rel(x):
        return np.linalg.norm(x - x_cpu) / np.linalg.norm(x_cpu)

    # the relative corrections ‖δ‖/‖x‖ where the result has them, else the paper's ‖r‖/‖x‖
    history = getattr(result, "corrections", None) or result.residuals
    rows[table] = dict(err_x0=rel(result.x0), err_refined=rel(result.x),
                       iterations=result.iterations, kappa=np.linalg.cond(c64),
                       history=np.array(history), timings=result.timings)

print(f"m = {m}, n = {2 * m}, device: {oclla.device_info(oclla.get_queue()).name}")
print(f"{'table':>5} {'':>6} {'err(x0)':>9} {'err(refined)':>12} {'steps':>5} {'κ(C)':>9}")
for table, row in rows.items():
    print(f"{table:5d} {'ours':>6} {row['err_x0']:9.2e} {row['err_refined']:12.2e} "
          f"{row['iterations']:5d} {row['kappa']:9.1e}")
    p = PAPER[table]
    print(f"{'':5} {'paper':>6} {p['err_x0']:9.2e} {p['err_refined']:12.2e} {p['iterations']:5d}")

# %% [markdown]
# The same orders of magnitude as the paper: float32 alone gives 3–4 digits
# on Table 1 and 1–2 on Table 2; refinement brings both to float64 accuracy.
# Our random numbers are not the paper's (it used MATLAB's), and its GPU of
# 2007 rounded differently, so individual digits and counts differ a little.
#
# **Explaining the iteration counts.** The quantity refinement watched after
# each step (from the result), its ratio from step to step (the measured
# contraction factor $\rho$), and the step count the rule above predicts from
# the measured $e_0$ and $\rho$:

# %%
for table, row in rows.items():
    h = row["history"]
    rho = float(np.median(h[1:] / h[:-1])) if len(h) > 1 else float("nan")
    predicted = (1 + int(np.ceil(np.log(1e-8 / row["err_x0"]) / np.log(rho)))
                 if 0 < rho < 1 else None)
    print(f"Table {table}: κ(C)·ε32 = {row['kappa'] * EPS32:8.1e}   measured ρ ≈ "
          f"{rho:8.1e}   steps: {row['iterations']} (rule: {predicted}; "
          f"you predicted {predicted_steps[table]})")
    print("   history:", " ".join(f"{v:.1e}" for v in h))

# %% [markdown]
# * Table 1: $\kappa(C) \approx 10^4$, every step gains about four digits, and
#   the first residual needs only a few steps to fall below $10^{-8}$.
# * Table 2: the weights spread over $10^8$, $\kappa(C)$ is three orders of
#   magnitude larger, each step gains only about one digit, so it takes
#   three times as many steps or more. In the paper the count grows with $m$ (7, 10,
#   13, 15) because $\kappa(C)$ grows with $m$.
# * $\kappa(C)\,\varepsilon_{32}$ is a *worst-case* estimate of $\rho$: the
#   measured factors are smaller, because the errors of a float32 Cholesky are
#   far from the worst case. Refinement only fails when the float32 Cholesky
#   itself breaks down; then `wls_solve` redoes the factorization in float64
#   (and says so in `result.fallback`).
#
# Where the time goes (seconds, from the result; the residuals run on the host
# in float64, the corrections on the device):

# %%
for table, row in rows.items():
    t = row["timings"]
    print(f"Table {table}: " + ", ".join(f"{k} {v:.3f}" for k, v in t.items()))
    setup = t.get("assembly", 0.0) + t.get("factorization", 0.0)
    if row["iterations"]:
        per_step = t.get("refinement", 0.0) / row["iterations"]
        print(f"   refinement: {row['iterations']} steps, {per_step * 1e3:.1f} ms each, "
              f"{t.get('refinement', 0.0) / setup:.2f} x the time of assembly + factorization")

# %% [markdown]
# Does the stopping test depend on the scaling of the weights? Solve Table 1's
# problem with every weight multiplied by $s$ (the solution $x$ does not
# change) and compare the step counts and the solutions:

# %%
import warnings

from scipy.linalg import LinAlgWarning

a, d2, b = paper_problem(m, 1)
base = oclla.wls_solve(a, d2, b, tol=1e-8)
counts = {1.0: base.iterations}
for s in (2.0 ** -20, 2.0 ** 20):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LinAlgWarning)
        scaled = oclla.wls_solve(a, s * d2, b, tol=1e-8)
    counts[s] = scaled.iterations
    print(f"weights x 2^{int(np.log2(s)):+d}: {scaled.iterations} steps "
          f"(unscaled: {base.iterations}), converged {scaled.converged}, x differs by "
          f"{np.linalg.norm(scaled.x - base.x) / np.linalg.norm(base.x):.1e}"
          + "".join(f"\n   warning: {w.message}" for w in caught))
print("the same number of steps at every scale:", len(set(counts.values())) == 1)

# %% [markdown]
# Scaling by powers of two changes no digit of the float32 data, so a
# scale-free test takes exactly the same steps at every scale. A test like the
# paper's $\|r\|/\|x\| \le \text{tol}$ stops too early for small weights and
# runs to the step limit for large ones. Exercise 3 asks you to write a
# scale-free one.
#
# Compare the time ratio above with the flop counts of section 3: at this size
# ($m = 512$) a refinement step is $O(mn)$ flops against $O(m^2 n)$, yet in
# seconds it may not be cheap, because each step pays fixed costs (a transfer
# to the device and back, launches, host work) that do not shrink with the
# flops. The flop argument wins only as $m$ grows; measure before you claim it.

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** Refinement contracts the error by $\rho = 0.01$ per step.
# How many steps take it from $10^{-4}$ to $10^{-12}$?

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** The weighted data matrix $D A^T$ has condition number
# $10^3$. What is the condition number of $C = A D^2 A^T$?

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Write `mixed_refine(C, g, tol)`: Algorithm 1 on the host.
# Factor `C.astype(np.float32)` once (`scipy.linalg.cho_factor`), solve for
# $x^0$ with that factor, then refine with float64 residuals $g - Cx$ and
# corrections $\delta$ from the float32 factor, until the scale-free test
# $\|\delta\|_2/\|x\|_2 \le$ `tol` holds (at most 100 steps). Return the pair
# `(x, corrections)`: the float64 $x$ and the list of $\|\delta\|_2/\|x\|_2$ of
# every step. The checker also runs your function on $2^{26} C$ and
# $2^{-26} C$ (with $g$ scaled alike): it must take exactly the same steps.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** Refinement converges to the accuracy of the float64
# residual, about $\kappa(C)\,\varepsilon_{64}$. Estimate it for
# $\kappa(C) = 10^6$.

# %%
answer_4 = None
check_exercise_4(answer_4)
