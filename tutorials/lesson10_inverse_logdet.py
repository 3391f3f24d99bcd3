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
# # Lesson 10 — Never invert a matrix — except when you must
#
# "Never compute $A^{-1}$ to solve $Ax = b$" is the first rule of numerical
# linear algebra, and a good one. Yet statisticians need covariance matrices,
# Gaussian-process samplers need $K^{-1}$ in every step of a Markov chain, and
# both need $\log\det$. Macindoe's thesis (2013) built a GPU library for
# exactly that workload: factor, invert, take the log-determinant, over and
# over. In this lesson you will:
#
# 1. measure what an explicit inverse costs against solving with the factor,
#    and see $x = A^{-1}b$ lose accuracy where a solve does not;
# 2. meet two problems where the inverse *is* the answer: the covariance of an
#    estimate, and the gradient of a Gaussian-process likelihood;
# 3. watch $\det A$ overflow while $\log\det A = 2\sum_i \log c_{ii}$ does not;
# 4. relate the accuracy of $A^{-1}$ to the condition number;
# 5. read the timeline of the thesis's **hybrid** Cholesky, which factors
#    the diagonal blocks on the host while the device multiplies.

# %%
import time

import numpy as np

import oclla
import oclla.hybrid
from oclla import accuracy
from _checks import missing
from _checks.lesson10 import (REQUIRES, check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, pyplot, save

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


def spd_with_inverse(n, kappa, seed=0):
    """A = Q·diag(d)·Qᵀ with eigenvalues from 1 to 1/κ, and its inverse Q·diag(1/d)·Qᵀ."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    d = np.logspace(0, -np.log10(kappa), n)
    a = (q * d) @ q.T
    return (a + a.T) / 2, (q / d) @ q.T


# %% [markdown]
# ## 1. Solving with the factor, or with the inverse
#
# With $A = R^TR$ (the Cholesky factor, $n^3/3$ flops), one right-hand side
# costs two triangular solves, $2n^2$ flops. The inverse from the factor
# (LAPACK's `potri`: the triangular inverse $X = R^{-1}$, `trtri`, then
# $XX^T$, `lauum`) costs another $2n^3/3$, and then $A^{-1}b$ costs $2n^2$
# per right-hand side: *the same* as the two solves. In flops the inverse is
# never cheaper, whatever the number of right-hand sides. On the device:

# %%
n = 256
a, _ = spd_with_inverse(n, 1e3)
b = a @ np.random.default_rng(1).standard_normal(n)
c = oclla.cholesky(a)
t_factor = best_of(lambda: oclla.cholesky(a))
t_solve = best_of(lambda: oclla.cho_solve((c, False), b))
t_inverse = best_of(lambda: oclla.cho_inverse((c, False)))
inv = oclla.cho_inverse((c, False))
t_product = best_of(lambda: inv @ b)
print(f"n = {n}, device {oclla.device_info(oclla.get_queue()).name} (wall times, ms)")
print(f"  factor (cholesky)          {t_factor * 1e3:8.2f}")
print(f"  solve with the factor      {t_solve * 1e3:8.2f}")
print(f"  inverse from the factor    {t_inverse * 1e3:8.2f}   (potri: 2x the factor's flops)")
print(f"  A⁻¹b on the host (numpy)   {t_product * 1e3:8.2f}")

# %% [markdown]
# In flops the inverse costs twice the factorization; in seconds the
# ratio is whatever the kernels' speeds make it (on PoCL the factorization
# can even be the slower of the two: its diagonal blocks go through one
# work-group, Lesson 9 measured it). What does not change: once you have the
# factor, the solve is the cheap part, and the inverse buys nothing for it.

# %% [markdown]
# Now accuracy. A solve with a Cholesky factor is backward stable: the
# computed $\hat x$ solves $(A + \Delta A)\hat x = b$ with $\|\Delta A\|$ a
# small multiple of $n\varepsilon\|A\|$, whatever $\kappa(A)$. The product
# $A^{-1}b$ is not: even with a perfect inverse, rounding $A^{-1}$ itself
# already perturbs it by $\varepsilon\|A^{-1}\|$, and the residual $b - A\hat
# x$ grows with $\kappa(A)$ (Higham, *Accuracy and Stability*, §14.1). The
# backward error $\|b - A\hat x\|/(n\|A\|\|\hat x\|\varepsilon)$ (Lesson 4)
# of both:

# %%
print(f"{'κ(A)':>8} {'solve':>9} {'A⁻¹b':>11}   backward error in nε")
rng = np.random.default_rng(10)
for kappa in (1e2, 1e6, 1e10, 1e13):
    a_k = accuracy.spd_with_condition(200, kappa, reflections=None, rng=2)
    b_k = a_k @ rng.standard_normal(200)
    c_k = oclla.cholesky(a_k)
    x_solve = oclla.cho_solve((c_k, False), b_k)
    x_inverse = oclla.cho_inverse((c_k, False)) @ b_k
    print(f"{kappa:8.0e} {accuracy.solve_backward_error(a_k, x_solve, b_k):9.2g} "
          f"{accuracy.solve_backward_error(a_k, x_inverse, b_k):11.3g}")

# %% [markdown]
# The solve stays far below LAPACK's threshold of 30 at every κ; $A^{-1}b$
# crosses it around $\kappa = 10^6$ and then grows with κ. So: to solve,
# factor and solve.
#
# ## 2. When the inverse is the answer
#
# **The covariance of an estimate.** For least squares $\min\|X\beta - y\|$
# with independent errors of variance $\sigma^2$, the estimate's covariance is
# $\operatorname{Cov}(\hat\beta) = \sigma^2 (X^TX)^{-1}$: its diagonal holds
# the squared standard errors, its off-diagonal the correlations between
# coefficients. That is not a solve with a right-hand side; it *is* the
# inverse (or at least its diagonal, which costs nearly as much).

# %%
rng = np.random.default_rng(11)
m, p = 2000, 5
X = np.column_stack([np.ones(m), rng.standard_normal((m, p - 1))])
X[:, 2] += 0.9 * X[:, 1]                              # two correlated regressors
beta_true = np.array([1.0, 2.0, -1.0, 0.5, 0.0])
y = X @ beta_true + 0.5 * rng.standard_normal(m)
c_x = oclla.cholesky(X.T @ X)
beta = oclla.cho_solve((c_x, False), X.T @ y)
s2 = np.sum((y - X @ beta) ** 2) / (m - p)           # unbiased estimate of σ²
cov = s2 * oclla.cho_inverse((c_x, False))
se = np.sqrt(np.diag(cov))
print(" β̂       :", np.round(beta, 3))
print(" std.err.:", np.round(se, 4))
print(f" correlation of β̂₁ and β̂₂: {cov[1, 2] / (se[1] * se[2]):+.3f} "
      f"(the regressors are correlated, so are their estimates)")
print(" same as numpy's inverse:", np.allclose(cov, s2 * np.linalg.inv(X.T @ X)))

# %% [markdown]
# **Gaussian processes and MCMC.** The thesis's users sample the
# hyperparameters $\theta$ of a Gaussian process with a Markov chain. Every
# step evaluates the log-likelihood of the data $y$ under the covariance
# $K(\theta)$ and, for gradient-based samplers, its gradient:
#
# $$\log p(y\mid\theta) = -\tfrac12 y^TK^{-1}y - \tfrac12\log\det K - \tfrac n2\log 2\pi,
#   \qquad \frac{\partial\log p}{\partial\theta}
#   = \tfrac12\alpha^T\frac{\partial K}{\partial\theta}\alpha
#   - \tfrac12\operatorname{tr}\Big(K^{-1}\frac{\partial K}{\partial\theta}\Big),
#   \quad \alpha = K^{-1}y .$$
#
# The first two terms need a solve and the log-determinant from one factor;
# the trace needs $K^{-1}$ itself ($n$ solves would cost the same as the
# inverse, and return it). One factor, one inverse, one log-det per step, all
# on the device:

# %%
n_gp = 300
t_gp = np.sort(rng.random(n_gp)) * 10
y_gp = np.sin(t_gp) + 0.1 * rng.standard_normal(n_gp)
dist2 = (t_gp[:, None] - t_gp[None, :]) ** 2


def log_likelihood_and_gradient(ell, noise=0.1):
    """log p(y | ℓ) of a squared-exponential GP, and d/dℓ, from one factor on the device."""
    k_mat = np.exp(-dist2 / (2 * ell ** 2)) + noise ** 2 * np.eye(n_gp)
    dk = np.exp(-dist2 / (2 * ell ** 2)) * dist2 / ell ** 3
    factor = (oclla.cholesky(k_mat, lower=True), True)
    alpha = oclla.cho_solve(factor, y_gp)
    k_inv = oclla.cho_inverse(factor)
    logp = (-0.5 * y_gp @ alpha - 0.5 * oclla.cho_logdet(factor)
            - 0.5 * n_gp * np.log(2 * np.pi))
    return logp, 0.5 * alpha @ dk @ alpha - 0.5 * np.sum(k_inv * dk)   # tr(K⁻¹ dK)


logp, grad = log_likelihood_and_gradient(1.0)
h = 1e-5
numeric = (log_likelihood_and_gradient(1.0 + h)[0]
           - log_likelihood_and_gradient(1.0 - h)[0]) / (2 * h)
print(f"log p = {logp:.4f}; d/dℓ = {grad:.5f} (central difference: {numeric:.5f})")

# %% [markdown]
# ## 3. The determinant overflows, its logarithm does not
#
# $\det A = \prod_i c_{ii}^2$ for $A = C^TC$. For a matrix of order 500 whose
# eigenvalues are around 10 the product is near $10^{500}$: float64 stops at
# $1.8\cdot 10^{308}$.
#
# **Predict first.** What does `np.linalg.det(a500)` return for the matrix
# below, and what does the product of the factor's squared diagonal give?

# %%
predicted_det = None          # your guess

# %%
rng = np.random.default_rng(12)
m500 = rng.standard_normal((500, 500))
a500 = m500 @ m500.T / 500 + 10.0 * np.eye(500)
c500 = oclla.cholesky(a500)
with np.errstate(over="ignore"):                # numpy would warn of the overflow
    print("np.linalg.det(a500)          =", np.linalg.det(a500),
          f"(you predicted {predicted_det})")
    print("prod(diag(c))²               =", np.prod(np.diag(c500)) ** 2)
print("2 Σ log c_ii (oclla)         =", oclla.cho_logdet((c500, False)))
print("Kahan sum on the host        =", accuracy.logdet_reference(c500))
print("numpy slogdet                =", np.linalg.slogdet(a500))
tiny = a500 / 1e3
print("and det(a500 / 1000) =", np.linalg.det(tiny), "but log det =",
      oclla.cho_logdet((oclla.cholesky(tiny), False)))

# %% [markdown]
# The product overflows to `inf` (and underflows to 0 for the scaled matrix),
# while the sum of logarithms is an ordinary number of a few hundred. float32
# overflows already at $3.4\cdot 10^{38}$: a matrix of order 40 with
# eigenvalues around 10 is enough. oclla's `cho_logdet` sums on the device,
# in float64 where the device has it (compensated otherwise), and agrees
# with the compensated (Kahan) sum on the host to the last digits:

# %%
a40 = (a500[:40, :40]).astype(np.float32)
c40 = oclla.cholesky(a40)
with np.errstate(over="ignore"):
    print("float32: prod(diag(c))² =", np.prod(np.diag(c40)) ** 2,
          "  cho_logdet =", oclla.cho_logdet((c40, False)),
          "  float64 Kahan =", accuracy.logdet_reference(c40))

# %% [markdown]
# ## 4. How accurate is a computed inverse?
#
# Two questions with different answers. Is $X$ the inverse of a *nearby*
# matrix, i.e. is $\|AX - I\|/(n\|A\|\|X\|\varepsilon)$ small (LAPACK's test,
# `accuracy.inverse_error`)? And how close is $X$ to the true $A^{-1}$? The
# second is bounded by conditioning: rounding $A$ to floating point alone moves
# $A^{-1}$ by about $\kappa(A)\,\varepsilon$ relative to its norm.
#
# **Predict first.** For $\kappa(A) = 10^8$ in float64, about how large is
# $\|X - A^{-1}\|/\|A^{-1}\|$?

# %%
predicted_forward_error = None          # your guess

# %%
print(f"{'dtype':>7} {'κ(A)':>7} {'‖AX−I‖ in nε':>13} {'‖X−A⁻¹‖/‖A⁻¹‖':>15} {'κε':>9}")
for dtype, kappas in ((np.float64, (1e2, 1e4, 1e6, 1e8, 1e10, 1e12)),
                      (np.float32, (1e2, 1e3, 1e4, 1e5))):
    for kappa in kappas:
        a_k, a_inv = spd_with_inverse(128, kappa, seed=3)
        x_k = oclla.cho_inverse((oclla.cholesky(a_k.astype(dtype)), False))
        forward = np.linalg.norm(x_k - a_inv, 2) / np.linalg.norm(a_inv, 2)
        eps = np.finfo(dtype).eps
        print(f"{np.dtype(dtype).name:>7} {kappa:7.0e} {accuracy.inverse_error(a_k, x_k):13.3g} "
              f"{forward:15.2e} {kappa * eps:9.1e}")
print(f"you predicted {predicted_forward_error} for κ = 1e8")

# %% [markdown]
# The backward measure stays small at every κ: the computed inverse is the
# inverse of a matrix within a few $n\varepsilon\|A\|$ of $A$, which is all
# an algorithm can promise. The forward error grows like $\kappa\varepsilon$
# (at or up to ten times below it): that is the problem's conditioning, not the
# algorithm, and no method in that precision can beat it. Covariances of
# nearly collinear regressors are inaccurate for this reason; the remedy is
# better-conditioned variables, not a better inverse.
#
# ## 5. A hybrid schedule on the timeline
#
# The thesis split a blocked Cholesky between two processors (its
# Algorithms 1/2). Per block column $j$: a SYRK on the device updates the
# diagonal block, the block is copied to the host, and then **the host's
# LAPACK factors it (POTRF) while the device runs the GEMM** that updates
# the blocks below; the factored block goes back, and a TRSM finishes the
# column. Where the host's small factorization is faster than the device's
# one-work-group kernel for it, and the GEMM is long enough to hide it, the
# overlap wins. `oclla.hybrid.cholesky` implements it, with block widths from
# a schedule: `"static"` (one width) or the thesis's `"dynamic"` one (wide at
# both ends, halving towards the middle). It needs one device only: the
# "second processor" is the host.
#
# Time it against the device's own blocked Cholesky:

# %%
n_h = 512
a_h = accuracy.spd_with_condition(n_h, 1e3, rng=5)
runs = {"oclla.cholesky": lambda: oclla.cholesky(a_h, lower=True),
        "hybrid, static": lambda: oclla.hybrid.cholesky(a_h, lower=True),
        "hybrid, dynamic": lambda: oclla.hybrid.cholesky(a_h, lower=True,
                                                         schedule="dynamic", block=32)}
for name, fn in runs.items():
    print(f"{name:<16} {best_of(fn, repeats=2) * 1e3:8.1f} ms")
print("dynamic widths:", oclla.hybrid.block_schedule(n_h, "dynamic", 32))

# %% [markdown]
# Where did the time go? Record a hybrid run. The recorder times the host's
# POTRF too, as a record whose `device` is `"host"` (between two markers on
# the device's queue, so both lanes share one clock). For each block
# column: how long did the host work, how much of the GEMM ran at the same
# time, and how long did the device then wait before the TRSM could start?

# %%
with oclla.record() as rec:
    oclla.hybrid.cholesky(a_h, lower=True)
run = rec.runs[-1]
rec_path = output_dir() / "lesson10_hybrid.oclrec"
rec.save(rec_path)
t0 = min(k.start for k in run.kernels)
device = sorted((k for k in run.kernels if k.device != "host"), key=lambda k: k.start)
host = [k for k in run.kernels if k.device == "host"]
print(f"{'column':>6} {'POTRF ms':>9} {'GEMM ms':>8} {'overlap ms':>10} {'device waits ms':>15}")
for step in run.steps:
    if step.phase != "potf2":
        continue
    potrf = next(k for k in step.kernels if k.device == "host")
    gemm = [k for s in run.steps if s.phase == "gemm" and s.region[2] == step.region[2]
            for k in s.kernels]
    overlap = sum(max(0, min(k.end, potrf.end) - max(k.start, potrf.start)) for k in gemm)
    last_before = max((k.end for k in device if k.end <= potrf.end), default=potrf.start)
    first_after = min((k.start for k in device if k.start >= potrf.end), default=potrf.end)
    print(f"{step.region[2]:6d} {potrf.duration_ns / 1e6:9.2f} "
          f"{sum(k.duration_ns for k in gemm) / 1e6:8.2f} {overlap / 1e6:10.2f} "
          f"{(first_after - last_before) / 1e6:15.2f}")
span = device[-1].end - t0
print(f"run: {span / 1e6:.1f} ms from the first kernel's start to the last one's end; "
      f"device kernels {run.device_ns / 1e6:.1f} ms, host POTRFs "
      f"{sum(k.duration_ns for k in host) / 1e6:.2f} ms")

plt = pyplot()
if plt is not None:
    fig, ax = plt.subplots(figsize=(8, 2.2))
    colors = {"syrk": "C0", "gemm": "C1", "trsm": "C2", "potf2": "C3"}
    for step in run.steps:
        for k in step.kernels:
            ax.broken_barh([((k.start - t0) / 1e6, max(k.duration_ns, 20000) / 1e6)],
                           (0.1 if k.device == "host" else 1.1, 0.8),
                           color=colors.get(step.phase, "C7"))
    ax.set_yticks([0.5, 1.5], ["host", "device"])
    ax.set_xlabel("ms since the first kernel (SYRK blue, GEMM orange, TRSM green, "
                  "POTRF red)")
    save(fig, "lesson10_hybrid_lanes.png")
print(f"the recording: {rec_path} (oclla-viewer --replay {rec_path.name})")

# %% [markdown]
# Read the table before the pictures. The thesis's schedule needs two
# things: the host's POTRF must start while the GEMM is still running
# (overlap > 0), and it must end before the GEMM does (the device never waits
# for it). On PoCL the "device" is the same CPU as the host: the GEMM's
# threads and the host's LAPACK compete for the same two cores (limit the
# host BLAS to one thread, `OPENBLAS_NUM_THREADS=1`, or they fight), and the
# host's turn often comes only after the GEMM is done, so the overlap is
# small or nothing. Whatever speed the hybrid gained over `oclla.cholesky`
# above then came from elsewhere: the host's LAPACK factors a diagonal block
# far faster than the device's one-work-group kernel for it does on a CPU
# device (Lesson 9 measured that kernel). On a GPU machine the two lanes are
# really two processors; run this lesson there with `OCLLA_DEVICE=...` and
# compare. The thesis measured a gain on 2013 hardware; on a modern GPU the
# device's own diagonal-block kernel is fast and each block's round trip
# over PCIe is not free, so measure before you choose a schedule
# (`benchmarks/hybrid.py`). The saved recording opens in the viewer
# (`oclla-viewer --replay lesson10_hybrid.oclrec`), with every kernel of the
# timeline clickable.

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** LAPACK's `potri` (inverse from the factor) costs
# $n^3/3$ for `trtri` and $n^3/3$ for `lauum`. How many times the flops of
# the Cholesky factorization ($n^3/3$) does it add, for large $n$?

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** Write `logdet_spd(a)`: $\log\det A$ of a symmetric positive
# definite float64 matrix that never overflows or underflows (use a Cholesky
# factor, oclla's or scipy's). The checker tries matrices whose determinant
# is far beyond float64's range in both directions.

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Write `standard_errors(X, y)`: the standard errors
# $\sqrt{\operatorname{diag}(\hat\sigma^2 (X^TX)^{-1})}$ of the least-squares
# coefficients, with $\hat\sigma^2 = \|y - X\hat\beta\|^2/(m - p)$ for
# $X$ of shape $(m, p)$ (section 2).

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** Write `device_idle_ns(run)`: the time, in nanoseconds,
# between the first device kernel's start and the last one's end of a
# recorded `run` during which the device ran **no** kernel. Host work (records
# with `device == "host"`) is not the device's. Kernels may be listed in any
# order and may overlap (two queues, or an out-of-order queue). Try it on
# section 5's `run`.

# %%
answer_4 = None
check_exercise_4(answer_4)
