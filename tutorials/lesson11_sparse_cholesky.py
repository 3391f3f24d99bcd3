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
# # Lesson 11 — Sparse Cholesky: fill, orderings and supernodes
#
# The matrices of partial differential equations, of networks and of
# interior-point methods have a few nonzeros per row: a 1000 × 1000 grid
# gives a matrix of order $10^6$ with five nonzeros per row. Stored dense it
# would take 8 TB; stored sparse, 40 MB. Its Cholesky factor $L$ is sparse
# too, *but it has more nonzeros than $A$*: elimination creates **fill**.
# How much depends on the order in which the unknowns are eliminated, and
# the right order makes the difference between a factor that fits in memory
# and one that does not. In this lesson you will:
#
# 1. **predict and measure fill** on an arrow matrix, where one ordering
#    fills everything and the reversed one fills nothing;
# 2. factor a 2-D Laplacian with the **natural, RCM, AMD and
#    nested-dissection (METIS)** orderings and compare nnz(L), as pictures
#    and as growth with the grid size;
# 3. meet the **elimination tree**, which says which columns depend on which,
#    and what can run in parallel;
# 4. see why **supernodes** (columns with the same structure) turn sparse work
#    into dense BLAS-3, and where the flops go;
# 5. time `oclla.sparse.cholesky` and its solve against scipy's SuperLU, and
#    reuse the analysis with `refactor()` in a time-stepping loop.

# %%
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import oclla
from _checks import missing
from _checks.lesson11 import (REQUIRES, check_exercise_1, check_exercise_2, check_exercise_3,
                              check_exercise_4)
from _figures import pyplot, save

if missing(REQUIRES):
    raise SystemExit(f"This lesson needs {', '.join(missing(REQUIRES))}: update oclla.")

import oclla.sparse  # noqa: E402  (after the check: a clear message when it is missing)
from oclla.sparse import gallery  # noqa: E402

ORDERINGS = ("natural", "rcm", "amd", "metis")


def best_of(fn, repeats=2):
    """Shortest wall time of ``fn()`` over a few runs (call it once before, so that the
    kernels it needs are built)."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def exact(a, ordering):
    """The symbolic factorization without merged supernodes: the fill of the ordering
    itself (``nnz_l`` then counts exactly the entries of L, ``pattern()`` shows them)."""
    return oclla.sparse.analyze(a, ordering=ordering, merge=False, refine=False)


def etree_of(pattern):
    """Column elimination tree from L's pattern (CSC, lower): parent(j) is the row of the
    first nonzero below the diagonal in column j, -1 for a root."""
    pattern = sp.csc_array(pattern)
    below = sp.csc_array(sp.tril(pattern, -1))
    below.sort_indices()
    counts = np.diff(below.indptr)
    parent = np.full(pattern.shape[0], -1)
    parent[counts > 0] = below.indices[below.indptr[:-1][counts > 0]]
    return parent


def tree_height(parent):
    """Longest path from a leaf to a root (columns in postorder: parent[j] > j)."""
    depth = np.zeros(parent.size, dtype=int)
    for j in range(parent.size - 1, -1, -1):
        if parent[j] >= 0:
            depth[j] = depth[parent[j]] + 1
    return int(depth.max(initial=0)) + 1


# %% [markdown]
# ## 1. Fill
#
# Eliminating column $k$ subtracts $l_{ik} l_{jk}$ from every entry $(i, j)$
# whose row and column both meet column $k$: in graph language, **the
# neighbours of $k$ become a clique**. An entry that is zero in $A$ but not
# in $L$ is *fill*. Take the arrow matrix: a diagonal, plus one row and
# column full of entries. With the full row **first**, eliminating column 0
# connects every unknown to every other one. With it **last**, each
# elimination touches only itself and the last unknown, which is already
# connected to everything.
#
# **Predict first.** For order $n = 8$, how many entries does $L$'s lower
# triangle (diagonal included) have in each case?

# %%
predicted_arrow = None            # your guess: (full row first, full row last)

# %%
n_arrow = 8
arrow = sp.lil_array((n_arrow, n_arrow))
arrow.setdiag(float(n_arrow))
arrow[0, 1:] = 1.0
arrow[1:, 0] = 1.0
arrow = sp.csc_array(arrow)
reverse = np.arange(n_arrow)[::-1]
arrow_last = sp.csc_array(arrow[reverse][:, reverse])
for name, a in (("full row first", arrow), ("full row last", arrow_last)):
    f = oclla.sparse.cholesky(a, ordering="natural")
    print(f"{name}: nnz(tril A) = {sp.tril(a).nnz:2d}, nnz(L) = {exact(a, 'natural').nnz_l:2d}")
    print((f.L().toarray() != 0).astype(int))
print(f"you predicted {predicted_arrow}")

# %% [markdown]
# $n(n+1)/2 = 36$ against $2n - 1 = 15$: the same matrix, the same
# unknowns, numbered differently. An **ordering** is a permutation $P$; the
# library factors $PAP^T = LL^T$, and `f.P()` returns it
# (`A[p][:, p] = L·Lᵀ`, scikit-sparse/CHOLMOD's convention). The rule of
# thumb from this example: *eliminate the well-connected unknowns last.*
#
# ## 2. Four orderings of a 2-D Laplacian
#
# The 5-point Laplacian on a $k \times k$ grid is the classic test
# (`oclla.sparse.gallery.laplacian_2d`): unknown $(x, y)$ is coupled to its
# four neighbours, numbered $x$ fastest. The orderings:
#
# * **natural** — row by row: a band of half-width $k$; everything inside the
#   band fills;
# * **RCM** (reverse Cuthill–McKee) — a breadth-first numbering that makes
#   the band (the *profile*) small; it does not aim at small fill;
# * **AMD** (approximate minimum degree) — greedy: always eliminate the
#   unknown with the fewest neighbours *now* (in the graph with the fill so far);
# * **nested dissection (METIS)** — cut the grid in two by a separator of
#   $k$ unknowns, number the separator **last**, recurse in both halves (the
#   arrow rule, applied recursively).
#
# **Predict first.** Rank the four by nnz(L) on a $32 \times 32$ grid.

# %%
predicted_ranking = None          # e.g. ("metis", "amd", "rcm", "natural"), least fill first

# %%
k = 32
A = gallery.laplacian_2d(k)
print(f"{k} x {k} grid: n = {A.shape[0]}, nnz(tril A) = {sp.tril(A).nnz}")
print(f"{'ordering':>9} {'nnz(L)':>8} {'fill':>7} {'L/A':>5} {'flops':>9} {'etree height':>13}")
fill = {}
for name in ORDERINGS:
    sym = exact(A, name)
    fill[name] = sym.nnz_l
    print(f"{name:>9} {sym.nnz_l:8d} {sym.nnz_l - sp.tril(A).nnz:7d} "
          f"{sym.nnz_l / sp.tril(A).nnz:5.1f} {sym.flops:9.3g} "
          f"{tree_height(etree_of(sym.pattern())):13d}")
print("ranking, least fill first:", tuple(sorted(fill, key=fill.get)))
print(f"you predicted {predicted_ranking}")

# %% [markdown]
# The pictures, on a $12 \times 12$ grid: top row the permuted matrix
# $PAP^T$, bottom row $L$ with the entries of $A$ in black and the **fill in
# red**. Natural and RCM fill their band; AMD and METIS leave most of the
# matrix empty, METIS with the separators' dense blocks in the last rows.

# %%
A_small = gallery.laplacian_2d(12)
plt = pyplot()
if plt is not None:
    fig, axes = plt.subplots(2, 4, figsize=(12, 6.4))
    for col, name in enumerate(ORDERINGS):
        sym = exact(A_small, name)
        p = sym.perm
        pa = sp.csc_array(A_small[p][:, p])
        low = sp.tril(pa).tocoo()
        pattern = sym.pattern().tocoo()
        in_a = set(zip(low.row.tolist(), low.col.tolist()))
        is_fill = np.array([(i, j) not in in_a for i, j in zip(pattern.row, pattern.col)])
        top, bottom = axes[0, col], axes[1, col]
        top.spy(pa, markersize=1.5, color="k")
        top.set_title(f"{name}: PAPᵀ", fontsize=9)
        bottom.plot(pattern.col[~is_fill], pattern.row[~is_fill], "k.", ms=1.5)
        bottom.plot(pattern.col[is_fill], pattern.row[is_fill], "r.", ms=1.5)
        bottom.set_xlim(-0.5, pa.shape[0] - 0.5)
        bottom.set_ylim(pa.shape[0] - 0.5, -0.5)
        bottom.set_aspect("equal")
        bottom.set_title(f"L: {sym.nnz_l} entries, {int(is_fill.sum())} fill", fontsize=9)
        for ax in (top, bottom):
            ax.set_xticks([])
            ax.set_yticks([])
    save(fig, "lesson11_fill.png")

# %% [markdown]
# How does the fill grow with the grid? Theory for a $k \times k$ grid
# ($n = k^2$): the band of natural and RCM orderings gives
# $\text{nnz}(L) \approx n^{3/2}$; nested dissection gives
# $O(n \log n)$, and its flops drop from $O(n^2)$ to $O(n^{3/2})$, which is
# provably the best any ordering can do on a grid. The symbolic analysis
# alone (no numbers, fast) measures it:

# %%
grids = (16, 32, 48)
growth = {name: [] for name in ORDERINGS}
print(f"{'k':>4} {'n':>6} " + " ".join(f"{name:>9}" for name in ORDERINGS) + "   nnz(L)/n")
for kk in grids:
    a = gallery.laplacian_2d(kk)
    for name in ORDERINGS:
        growth[name].append(exact(a, name).nnz_l)
    print(f"{kk:4d} {kk * kk:6d} " + " ".join(f"{growth[name][-1] / kk ** 2:9.1f}"
                                              for name in ORDERINGS))
for name in ORDERINGS:
    slope = np.polyfit(np.log([kk * kk for kk in grids]), np.log(growth[name]), 1)[0]
    print(f"{name:>9}: nnz(L) grows like n^{slope:.2f}")

# %% [markdown]
# The band orderings grow like $n^{1.5}$; AMD and METIS clearly slower
# ($n \log n$ would give a slope of about 1.15 over this range; grids this
# small are not yet asymptotic, the boundary still counts). On a 3-D grid the
# gap is larger still: $n^{5/3}$ for a band against $n^{4/3}$ for nested
# dissection. No ordering is best for every matrix, though
# (Exercise 4); `ordering="best"` tries METIS, AMD and RCM and keeps the
# least fill, at the price of three analyses.
#
# ## 3. The elimination tree
#
# Column $j$ of $L$ is finished once every column $k < j$ with $l_{jk} \ne 0$
# has updated it. The dependencies form a tree: the **elimination tree**,
# with parent$(j)$ = the row of the first nonzero below the diagonal in
# column $j$ of $L$. Columns in different subtrees never touch each other:
# they can be factored **at the same time**. The tree's height is the length
# of the longest chain of columns that must follow one another: the band
# orderings' trees (natural, RCM) are single paths ($n$ levels, no
# parallelism at all: the last column of section 2's table), nested
# dissection's is bushy (the separator at the root, the two halves below
# it), and so is AMD's.
#
# `oclla.sparse.analyze` reorders the columns in a **postorder** of the tree
# (every subtree's columns consecutive, children before parents: the same
# fill, a more regular $L$), so parent$(j) > j$. The figure: the tree of an
# $8 \times 8$ grid under METIS, beside $L$; colours mark the
# **supernodes** of the next section.

# %%
A_tree = gallery.laplacian_2d(8)
sym_tree = exact(A_tree, "metis")
parent = etree_of(sym_tree.pattern())
print("etree parents (METIS, 8 x 8 grid):", parent.tolist())
print(f"height {tree_height(parent)} of {parent.size} columns; "
      f"{sym_tree.n_supernodes} supernodes")

if plt is not None:
    n_tree = parent.size
    x = np.zeros(n_tree)
    children = [[] for _ in range(n_tree)]
    for j in range(n_tree):
        if parent[j] >= 0:
            children[parent[j]].append(j)
    leaf = 0
    for j in range(n_tree):                 # postorder: children are placed before parents
        if children[j]:
            x[j] = np.mean(x[children[j]])
        else:
            x[j], leaf = leaf, leaf + 1
    depth = np.zeros(n_tree)
    for j in range(n_tree - 1, -1, -1):
        if parent[j] >= 0:
            depth[j] = depth[parent[j]] + 1
    colour = sym_tree.col_super % 10
    fig, (ax_tree, ax_l) = plt.subplots(1, 2, figsize=(12, 5))
    for j in range(n_tree):
        if parent[j] >= 0:
            ax_tree.plot([x[j], x[parent[j]]], [depth[j], depth[parent[j]]], "-",
                         color="0.6", lw=0.8)
    ax_tree.scatter(x, depth, c=colour, cmap="tab10", vmin=0, vmax=9, s=60, zorder=3)
    for j in range(n_tree):
        ax_tree.annotate(str(j), (x[j], depth[j]), fontsize=5, ha="center", va="center",
                         zorder=4)
    ax_tree.invert_yaxis()
    ax_tree.set_title("elimination tree (root at the top), colour = supernode", fontsize=9)
    ax_tree.set_xticks([])
    ax_tree.set_ylabel("depth")
    pattern = sym_tree.pattern().tocoo()
    ax_l.scatter(pattern.col, pattern.row, c=colour[pattern.col], cmap="tab10", vmin=0,
                 vmax=9, s=6, marker="s")
    for c0 in sym_tree.super_ptr[1:-1]:
        ax_l.axvline(c0 - 0.5, color="0.85", lw=0.5)
    ax_l.set_xlim(-0.5, n_tree - 0.5)
    ax_l.set_ylim(n_tree - 0.5, -0.5)
    ax_l.set_aspect("equal")
    ax_l.set_title("L (postordered), columns coloured by supernode", fontsize=9)
    save(fig, "lesson11_etree.png")

# %% [markdown]
# ## 4. Supernodes: sparse work as dense BLAS-3
#
# Look at the top of the tree: the separator's columns form a chain, and
# below the diagonal they all have **the same rows**. Such a run of columns
# is a **supernode**: its part of $L$ is a dense $n_r \times n_c$ block
# ($n_c$ columns, $n_r$ rows) stored without any row indices per column, and
# the work on it is dense linear algebra:
#
# * POTRF of its $n_c \times n_c$ diagonal block, TRSM of the
#   $(n_r - n_c) \times n_c$ block below it;
# * its **update matrix** $L_{21}L_{21}^T$, one SYRK of order $n_r - n_c$ and
#   rank $n_c$, subtracted from the ancestors' columns (the "right-looking"
#   method; RL forms it in working storage and assembles it, RLB updates the
#   ancestors' blocks directly).
#
# A SYRK of rank $n_c$ does $2n_c$ flops per entry it reads and writes:
# Lesson 5's arithmetic intensity grows with the supernode's **width**.
# Columns one at a time (width 1) are BLAS-1, memory bound; wide supernodes
# run at the speed of GEMM. *Fundamental* supernodes are the runs of columns
# with exactly the same structure; **merging** (relaxed supernodes) joins a
# child with its parent when it adds few explicit zeros, trading a little
# fill for wider blocks. The default is CHOLMOD's rule (`merge="relaxed"`:
# supernodes of up to 4 columns merge freely, wider ones only while few of
# their entries would be zeros, under 5 % beyond 48 columns); `merge="fill"`
# is the paper's (the cheapest pairs first, at most 25 % more storage in all).
#
# Where do the flops go? Column $j$ of a supernode costs $|L_{*j}|^2$ flops
# (its row count squared), so a supernode costs
# $\sum_{i=0}^{n_c-1} (n_r - i)^2$. The share of all flops in supernodes of
# width at least $w$, for a $64 \times 64$ grid under METIS:

# %%
def flops_by_width(sym):
    """(widths, flops) of each supernode: Σᵢ (n_r − i)² over its n_c columns."""
    nc, nr = sym.ncols().astype(float), sym.nrows().astype(float)
    # Σ_{i=0}^{nc-1} (nr - i)² in closed form
    s1 = nc * nr ** 2 - nr * nc * (nc - 1) + (nc - 1) * nc * (2 * nc - 1) / 6
    return sym.ncols(), s1


A_big = gallery.laplacian_2d(64)
sym_fund = exact(A_big, "metis")
sym_merged = oclla.sparse.analyze(A_big, ordering="metis")
print(f"64 x 64 grid, METIS: {sym_fund.n_supernodes} fundamental supernodes, "
      f"{sym_merged.n_supernodes} after merging; nnz(L) {sym_fund.nnz_l} -> "
      f"{sym_merged.nnz_l} (+{sym_merged.nnz_l / sym_fund.nnz_l - 1:.0%} explicit zeros)")
print(f"{'width ≥ w':>10} {'fundamental':>22} {'merged':>22}")
print(f"{'':>10} {'supernodes':>11} {'% flops':>10} {'supernodes':>11} {'% flops':>10}")
for w in (1, 2, 4, 8, 16, 32):
    row = f"{w:10d}"
    for sym in (sym_fund, sym_merged):
        widths, fl = flops_by_width(sym)
        row += f" {int(np.sum(widths >= w)):11d} {100 * fl[widths >= w].sum() / fl.sum():9.1f}%"
    print(row)
print(f"total flops {flops_by_width(sym_merged)[1].sum():.6g}; the analysis counts "
      f"{sym_merged.flops:.6g} (Symbolic.flops, Σ over the columns of |L_j|²)")

# %% [markdown]
# Most supernodes are narrow (the leaves of the tree: single grid points
# and short chains), but most **flops** are in the few wide ones near the
# root: the separators. That is the supernodal method's bargain, and why the
# paper behind `oclla.sparse` (Karsavuran, Ng & Peyton) sends the large
# supernodes to a GPU's BLAS-3 and batches the many small ones. The numeric
# factorization reports its steps to the recorder, phase by phase (recorded
# here on a second run, `f.refactor`, once the first has built the kernels):

# %%
f = oclla.sparse.cholesky(A_big, ordering="metis")
with oclla.record() as rec:                 # the second run: kernels built, measured
    f.refactor(A_big)
run = next(r for r in rec.runs if r.algorithm == "sparse_cholesky")
print(f"{f!r}")
print(f"{'phase':>9} {'steps':>6} {'kernels':>8} {'device ms':>10} {'Mflop':>8}")
for phase, (steps, kernels, ns, flops) in run.phase_totals().items():
    print(f"{phase:>9} {steps:6d} {kernels:8d} {ns * 1e-6:10.2f} {flops * 1e-6:8.2f}")

# %% [markdown]
# `potrf` (each supernode's diagonal block and the TRSM below it) and `syrk`
# (the update matrices) do the arithmetic; `scatter` puts $A$'s entries into
# $L$'s storage and `assemble` adds the update matrices into the ancestors:
# pure data movement, the price of sparsity. At this size on a CPU device
# all of them are small batched launches, level by level up the tree; on a
# GPU with grids of $10^5$ to $10^6$ unknowns the root's supernodes are
# hundreds to thousands of columns wide and the BLAS-3 share dominates.
# Keep the total device time in mind for the next section: the wall time of
# the same numeric factorization (`refactor`) is several times longer; the
# rest is launches, tables and copies on the host.
#
# ## 5. Timing, and refactoring with the same pattern
#
# `oclla.sparse.cholesky` does two things: the **analysis** (ordering,
# tree, supernodes: graph work on the host, in numpy) and the **numeric
# factorization** (all arithmetic in OpenCL kernels). scipy has no sparse
# Cholesky; its SuperLU (`splu`, an LU with a COLAMD ordering) is the
# reference at hand:

# %%
b = np.random.default_rng(11).standard_normal(A_big.shape[0])
A_csc = sp.csc_matrix(A_big)
x = f.solve(b)                      # f: the factor of section 4 (kernels now all built)
lu = spla.splu(A_csc)
timing = {
    "oclla.sparse.cholesky (analysis + numeric)": lambda: oclla.sparse.cholesky(A_big),
    "  oclla.sparse.analyze (analysis alone)": lambda: oclla.sparse.analyze(A_big),
    "  f.refactor(A) (numeric alone)": lambda: f.refactor(A_big),
    "  f.solve(b)": lambda: f.solve(b),
    "scipy splu (SuperLU)": lambda: spla.splu(A_csc),
    "  lu.solve(b)": lambda: lu.solve(b),
    "scipy spsolve (factor + solve)": lambda: spla.spsolve(A_csc, b),
}
print(f"device: {oclla.device_info(oclla.get_queue()).name}; 64 x 64 grid, n = {A_big.shape[0]}")
for what, fn in timing.items():
    print(f"{what:<45} {best_of(fn) * 1e3:8.2f} ms")
print(f"relative residual of f.solve: {np.linalg.norm(A_big @ x - b) / np.linalg.norm(b):.1e}; "
      f"difference from spsolve: "
      f"{np.linalg.norm(x - spla.spsolve(A_csc, b)) / np.linalg.norm(x):.1e}")
print(f"log det A = {f.logdet():.6f} (2 Σ log l_jj on the device); from SuperLU's U: "
      f"{np.sum(np.log(np.abs(lu.U.diagonal()))):.6f}")

# %% [markdown]
# Read the table honestly. At $n = 4096$ SuperLU (compiled C, one core) is
# hard to beat; most of oclla's time here is the **analysis**, which is
# Python and numpy, and the numeric part is a few dozen launches with little
# work in each. The numeric factorization alone is what repeats in practice,
# because many applications factor **a sequence of matrices with the same
# pattern**: Newton steps, interior-point iterations, implicit time steps.
# `f.refactor(A2)` reuses the ordering, the tree, the supernodes and the
# launch plan, and only recomputes the numbers (CHOLMOD's
# `cholesky_inplace`). Larger grids on a GPU: `oclla bench sparse`.
#
# An implicit (backward Euler) heat equation $u_t = \Delta u$ with growing
# time steps $\tau_m$ solves $(I + \tau_m K)\,u_{m+1} = u_m$ in every step:
# one new matrix per step, always the same pattern.

# %%
k_heat = 32
K = gallery.laplacian_2d(k_heat) * (k_heat + 1) ** 2       # -Δ on the unit square
eye = sp.eye_array(k_heat * k_heat, format="csc")
xy = (np.arange(k_heat) + 1) / (k_heat + 1)
u0 = np.outer(np.sin(np.pi * xy), np.sin(2 * np.pi * xy)).ravel()   # an eigenvector of -Δ
taus = 1e-4 * 2.0 ** np.arange(6)


def heat_refactor():
    f_heat = oclla.sparse.cholesky(sp.csc_array(eye + taus[0] * K))
    u = f_heat.solve(u0)
    for tau in taus[1:]:
        u = f_heat.refactor(sp.csc_array(eye + tau * K)).solve(u)
    return u


def heat_factor_each_step():
    u = u0
    for tau in taus:
        u = oclla.sparse.cholesky(sp.csc_array(eye + tau * K)).solve(u)
    return u


def heat_splu():
    u = u0
    for tau in taus:
        u = spla.splu(sp.csc_matrix(eye + tau * K)).solve(u)
    return u


u_end = heat_refactor()
h = 1 / (k_heat + 1)
lam = (4 - 2 * np.cos(np.pi * h) - 2 * np.cos(2 * np.pi * h)) / h ** 2   # its eigenvalue
exact_end = u0 * np.prod(1 / (1 + taus * lam))               # backward Euler, exactly
print(f"{len(taus)} steps; difference from the exact backward-Euler values: "
      f"{np.linalg.norm(u_end - exact_end) / np.linalg.norm(exact_end):.1e}")
for what, fn in (("cholesky once, refactor() each step", heat_refactor),
                 ("oclla.sparse.cholesky every step", heat_factor_each_step),
                 ("scipy splu every step", heat_splu)):
    print(f"{what:<38} {best_of(fn, repeats=1) * 1e3:8.1f} ms")

# %% [markdown]
# Refactoring skips the analysis in every step but the first, and that is
# most of the time saved. SuperLU on one core of the host may still be
# faster at this size: on a two-core CPU device the numeric factorization is
# a few dozen small launches, each worth little work; the balance turns with
# the order and with a GPU (measure it with `OCLLA_DEVICE=...` and larger
# `k_heat`). (The initial condition is an eigenvector of $-\Delta_h$, so
# each step multiplies it by $1/(1 + \tau_m\lambda)$: the answer of the
# recurrence is known, and the difference printed above is rounding.) The
# analysis belongs to one pattern: `refactor` refuses a matrix with another
# pattern (one more entry, say) and one of another dtype, and the factor
# stays as it was:

# %%
f_small = oclla.sparse.cholesky(A_small)
other = sp.lil_array(A_small)
other[0, 143] = other[143, 0] = -0.5                      # one more pair of entries
for bad in (sp.csc_array(other), A_small.astype(np.float32)):
    try:
        f_small.refactor(bad)
    except (ValueError, TypeError) as err:
        print(f"{type(err).__name__}: {err}")
print("the factor still solves A_small:",
      np.allclose(A_small @ f_small.solve(np.ones(144)), 1.0))

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** The matrix of order 10 with 4 on the diagonal, $-1$ on the
# first sub- and superdiagonals (tridiagonal), and also $-0.1$ in the whole
# first row and column (an arrow). How many entries does $L$'s lower triangle
# have (diagonal included) in the natural order, and in the reversed order
# (the full row last)? Answer a pair `(natural, reversed)`; predict, then
# check with `oclla.sparse.analyze(..., ordering="natural", merge=False,
# refine=False).nnz_l`.

# %%
answer_1 = None
check_exercise_1(answer_1)

# %% [markdown]
# **Exercise 2.** The symmetric matrix of order 6 with a diagonal and the
# off-diagonal pairs $(0,2), (0,4), (1,3), (1,5), (2,5), (3,4)$ (and their
# mirror images). Give its elimination tree in the natural order, as a list
# `parent` of 6 numbers (0-based rows, $-1$ for a root). Mind the fill:
# parent$(j)$ is the first nonzero below the diagonal in column $j$ of $L$,
# not of $A$. Work it out by hand, eliminating on the graph, or factor the
# dense matrix with numpy (with a large enough diagonal); `analyze` would
# postorder the columns first and so number them differently.

# %%
answer_2 = None
check_exercise_2(answer_2)

# %% [markdown]
# **Exercise 3.** How many **fundamental** supernodes does the tridiagonal
# matrix of order 10 have (natural order)? Column $j+1$ joins column $j$'s
# supernode when it is $j$'s parent in the tree and $|L_{*j}| = |L_{*j+1}| +
# 1$ (the structure below the diagonal is the same). Check with
# `oclla.sparse.analyze(T, ordering="natural", merge=False,
# refine=False).n_supernodes`.

# %%
answer_3 = None
check_exercise_3(answer_3)

# %% [markdown]
# **Exercise 4.** A long thin strip: `gallery.laplacian_2d(150, 3)`, a grid of
# 150 × 3 points numbered along the long side first. Which of `"natural"`,
# `"rcm"`, `"amd"` and `"metis"` gives the least fill? Guess first (nested
# dissection won on the square grid), then measure.

# %%
answer_4 = None
check_exercise_4(answer_4)
