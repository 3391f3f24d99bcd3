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
# # Lesson 2 — Gaussian elimination on a GPU
#
# You know Gaussian elimination on paper. In this lesson we run it on an
# OpenCL device, following a blog post ("Parallel LU Decomposition on GPGPU",
# SYCL/DPC++, 2021) step by step, and reproduce its $4 \times 4$ example
# exactly. You will:
#
# 1. write elimination as the factorization $A = LU$;
# 2. see which parts of one elimination step can run in parallel, and which
#    cannot;
# 3. run the post's algorithm with oclla and watch the matrix after every step;
# 4. check $L \cdot U = A$, solve $Ax = b$ with the factors, and meet the
#    reason real libraries *pivot* (more in Lesson 4).

# %%
import numpy as np
import scipy.linalg

import oclla
from _checks.lesson02 import (check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import output_dir, viewer_export

# %% [markdown]
# ## 1. Elimination is a factorization
#
# To clear the entries below the pivot $a_{kk}$ of column $k$, we subtract
# $\ell_{rk}$ times row $k$ from every row $r > k$, with the **multiplier**
#
# $$\ell_{rk} = \frac{a_{rk}}{a_{kk}}, \qquad
#   a_{rc} \leftarrow a_{rc} - \ell_{rk}\, a_{kc} \quad (r > k,\ c \ge k).$$
#
# After the last column the matrix is upper triangular: that is $U$. If we
# keep the multipliers in a unit lower triangular matrix $L$ (ones on the
# diagonal, $\ell_{rk}$ below it), then
#
# $$A = L\,U.$$
#
# Why keep $L$? Because with $L$ and $U$ in hand, solving $Ax = b$ for any new
# $b$ costs only two triangular solves, $Ly = b$ then $Ux = y$: $O(n^2)$ work
# instead of the $O(n^3)$ of elimination.
#
# The post's example:

# %%
A = np.array([[2, 4, 3, 5],
              [-4, -7, -5, 8],
              [6, 8, 2, 9],
              [4, 9, -2, 14]], dtype=np.float32)
L_post = np.array([[1, 0, 0, 0],
                   [-2, 1, 0, 0],
                   [3, -4, 1, 0],
                   [2, 1, 3, 1]], dtype=np.float32)
U_post = np.array([[2, 4, 3, 5],
                   [0, 1, 1, 18],
                   [0, 0, -3, 66],
                   [0, 0, 0, -212]], dtype=np.float32)
print("L_post @ U_post == A:", np.array_equal(L_post @ U_post, A))

# %% [markdown]
# ## 2. The post's algorithm, on the host first
#
# The post keeps two matrices: $L$, starting as the identity, and $U$,
# starting as $A$. For each pivot column it records the multipliers in $L$
# and updates $U$ *from $A$*, then copies $U$ back into $A$ for the next
# column. In plain Python:

# %%
def lu_post_host(a):
    """The blog post's elimination, written with Python loops (no pivoting)."""
    a = np.array(a, dtype=np.float64)
    n = a.shape[0]
    L, U = np.eye(n), a.copy()
    for col in range(n - 1):
        for row in range(col + 1, n):               # every (row, c) pair below is
            factor = a[row, col] / a[col, col]      # independent of the others:
            L[row, col] = factor                    # one work-item each on the GPU
            for c in range(col, n):
                U[row, c] = a[row, c] - a[col, c] * factor
        a = U.copy()                                # the post's "copy U into A"
    return L, U


L_host, U_host = lu_post_host(A)
print("L =\n", L_host, "\nU =\n", U_host)

# %% [markdown]
# Inside one pivot column, every update $(r, c)$ reads only the *old* matrix,
# so all of them can run at once: that is the parallel part, one work-item
# per entry. Between columns there is a **dependency**: column $k+1$ needs
# the matrix that column $k$ produced. So the host keeps a loop over the
# $n - 1$ pivots and launches one kernel per pivot. This host loop is what
# makes the algorithm "per pivot".
#
# ## 3. The same on the device
#
# oclla ports the post as it is in `lu_factor(..., method="pivot",
# variant="faithful")`: no pivoting, $L$ and $U$ kept apart, one `eliminate`
# kernel over the whole $n \times n$ NDRange per pivot, then the copy of $U$
# into $A$. With `oclla.record(snapshots=True)` we keep the matrix after
# every step. oclla shows it *packed*: the finished multipliers of $L$ below
# the diagonal, the current $U$ everywhere else.
#
# **Predict first.** How many steps will the trace of this $4 \times 4$ run
# list, and how many snapshots after the input? (Think of what must happen
# before the first pivot and after the last.)

# %%
predicted_steps = None          # your guess

# %%
with oclla.record(snapshots=True) as rec:
    lu, piv = oclla.lu_factor(A, method="pivot", variant="faithful")
run = rec.runs[-1]
print(f"{len(run.steps)} steps (you predicted {predicted_steps})")
print("before any step:\n", run.snapshot_at(-1))
for step in run.steps:
    where = f"pivot column {step.pivot[1]}" if step.pivot else "no pivot"
    print(f"\nafter step {step.index}: {step.phase} ({where}, active region rows "
          f"{step.region[0]}:{step.region[1]}, columns {step.region[2]}:{step.region[3]})")
    print(run.snapshot_at(step.index))

# %% [markdown]
# The run has a `setup` step ($L \leftarrow I$, $U \leftarrow A$ on the
# device), one `eliminate` step per pivot column, and a final `combine` that
# writes the packed result. Compare with the post: after pivot column 0 the
# first column holds the multipliers $-2, 3, 2$ and the $3\times 3$ block
# below-right is the updated matrix; after column 1 the multipliers $-4, 1$
# appear; after column 2 the last multiplier $3$ and $u_{33} = -212$. Let us
# unpack the result and compare with the post's $L$ and $U$, entry by entry:

# %%
L = np.tril(lu, -1) + np.eye(4, dtype=lu.dtype)
U = np.triu(lu)
print("L equals the post's L:", np.array_equal(L, L_post))
print("U equals the post's U:", np.array_equal(U, U_post))
print("L @ U equals A:       ", np.array_equal(L @ U, A))
print("row interchanges piv: ", piv, "(none: piv[i] = i)")

# %% [markdown]
# Exact equality is fair here: every multiplier and every update of this
# example is a small integer, which float32 represents exactly. For general
# matrices we measure errors instead (Lesson 4).
#
# The viewer draws the same snapshots. We save the recording (a portable file
# that replays without a GPU, see Lesson 8) and export the step that
# eliminates column 1:

# %%
rec_path = output_dir() / "lesson02_post_example.oclrec"
rec.save(rec_path)
column1 = next(s.index for s in run.steps if s.pivot == (1, 1))
viewer_export(rec_path, output_dir() / "lesson02_column1.png", after_step=column1,
              view="matrix")

# %% [markdown]
# ## 4. Solving with the factors
#
# `lu_solve` takes the packed factors and the interchanges and runs the two
# triangular solves on the device. With $b$ = the row sums of $A$ the
# solution is the vector of ones:

# %%
b = A.sum(axis=1)
x = oclla.lu_solve((lu, piv), b)
print("x =", x)

# %% [markdown]
# ## 5. What scipy does differently
#
# `scipy.linalg.lu` returns other factors for the same matrix:

# %%
p, l, u = scipy.linalg.lu(A)
print("P =\n", p, "\nL =\n", l, "\nU =\n", u)

# %% [markdown]
# scipy (LAPACK) uses **partial pivoting**: in each column it first swaps the
# row with the largest $|a_{rk}|$ into the pivot position. So it factors a
# row permutation of $A$, $A = P\,L\,U$, and every multiplier satisfies
# $|\ell_{rk}| \le 1$. oclla's default does the same and returns the same
# factors:

# %%
p2, l2, u2 = oclla.lu(A)
print("same P:", np.array_equal(p, p2), " L close:", np.allclose(l, l2),
      " U close:", np.allclose(u, u2))

# %% [markdown]
# Why pivot at all, when the post's version worked? Try a matrix whose
# $a_{00}$ is zero: the very first multiplier divides by zero. The post's
# algorithm cannot continue, although the matrix is perfectly invertible.

# %%
swap = np.array([[0, 1], [1, 0]], dtype=np.float32)
try:
    oclla.lu_factor(swap, method="pivot", variant="faithful")
except np.linalg.LinAlgError as err:
    print("faithful variant:", err)
lu_swap, piv_swap = oclla.lu_factor(swap)
print("with partial pivoting: lu =", lu_swap.tolist(), " piv =", piv_swap)

# %% [markdown]
# `piv[0] = 1` reads "row 0 was interchanged with row 1" (0-based, as in
# scipy); after the swap the matrix is the identity, so $L = U = I$.
#
# Zero pivots are the dramatic case. *Small* pivots are the dangerous one:
# they make huge multipliers and silently wrong answers. Lesson 4 is about
# that.
#
# ## Exercises
#
# **Exercise 1.** Do the first elimination step (column 0) of the post's $A$
# *with partial pivoting*, by hand or with numpy: choose the pivot row,
# interchange it with row 0, then eliminate. Give the $4 \times 4$ matrix $U$
# after that step (zeros below the pivot, not the multipliers). Section 3
# printed this step *without* pivoting; the checker knows that one too.

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** Write `det_from_lu(lu, piv)`: $\det(A)$ from the packed
# factors and the interchanges that `oclla.lu_factor(A)` returns, without
# $A$. $\det(L) = 1$ because $L$ is unit lower triangular; what does each row
# interchange do to the determinant? The checker tries the post's matrix and
# some it does not show you, with and without interchanges.

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** Write `solve_with_lu(L, U, b)` that solves $LUx = b$ with a
# forward substitution ($Ly = b$) and a back substitution ($Ux = y$), using
# loops or numpy slices but not `np.linalg.solve`. $L$ is unit lower
# triangular, $U$ upper triangular, $b$ a vector. As in the packed `lu`, only
# $L$'s strict lower triangle and $U$'s upper triangle are data: the checker
# fills the rest with junk, so read nothing else.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** Find an invertible matrix of order 3 (no zero entry on its
# diagonal!) on which the post's algorithm stops with a zero pivot. The
# checker runs `oclla.lu_factor(..., method="pivot", variant="faithful")` on
# it.

# %%
answer_4 = None
check_exercise_4(answer_4)
