"""Checkers for Lesson 11 (sparse Cholesky: fill, orderings, supernodes)."""

from __future__ import annotations

import numpy as np

from . import Wrong, equal, exercise, integer

REQUIRES = ("oclla.sparse:cholesky", "oclla.sparse:analyze")

EDGES = ((0, 2), (0, 4), (1, 3), (1, 5), (2, 5), (3, 4))     # Exercise 2's matrix


def _pair(answer):
    """``answer`` as a pair of ints (:class:`Wrong` otherwise)."""
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__len__") or len(answer) != 2:
        raise Wrong("the answer should be a pair (natural, reversed), e.g. (40, 20).")
    return tuple(integer(v, "each count") for v in answer)


@exercise(1, correct="Full row first: eliminating column 0 joins every unknown to every "
                     "other, L is full (10·11/2 = 55). Full row last: no fill at all, "
                     "nnz(L) = nnz(tril A) = 3n − 3 = 27.")
def check_exercise_1(answer):
    """(55, 27): nnz(L) of the tridiagonal + arrow matrix, natural and reversed order."""
    first, last = _pair(answer)
    if (first, last) == (27, 55):
        raise Wrong("swapped: which order puts the full row where it connects everything "
                    "at the first step?")
    if (first, last) == (45, 17):
        raise Wrong("count the diagonal too (nnz of L's lower triangle includes it).")
    if first == 100:
        raise Wrong("L is lower triangular: count its lower triangle only.")
    if first != 55:
        raise Wrong(f"natural order: {first} is not right. After eliminating column 0, "
                    f"which entries are nonzero?")
    if last != 27:
        raise Wrong(f"reversed order: {last} is not right. Does eliminating any column "
                    f"create an entry that A did not have?")


def _etree():
    """The column elimination tree of EDGES' matrix, by elimination on its pattern."""
    n = 6
    pattern = np.eye(n, dtype=bool)
    for i, j in EDGES:
        pattern[i, j] = pattern[j, i] = True
    for k in range(n):                               # elimination on the pattern
        rows = np.flatnonzero(pattern[k + 1:, k]) + k + 1
        pattern[np.ix_(rows, rows)] = True
    below = np.tril(pattern, -1)
    return [int(np.flatnonzero(below[:, j])[0]) if below[:, j].any() else -1
            for j in range(n)]


@exercise(2, correct="Eliminating 0 joins its neighbours 2 and 4 (fill at (4, 2)), so "
                     "eliminating 2 joins 4 and 5 (fill at (5, 4)); eliminating 1 joins 3 "
                     "and 5.")
def check_exercise_2(answer):
    """parent = [2, 3, 4, 4, 5, -1]."""
    try:
        got = [int(v) for v in np.asarray(answer).ravel()]
    except (TypeError, ValueError):
        raise Wrong("give a list of 6 whole numbers, e.g. [2, 3, 5, 4, -1, -1].") from None
    if np.asarray(answer).size != 6 or any(v != float(v) for v in np.asarray(answer).ravel()):
        raise Wrong("give a list of 6 whole numbers (-1 for a root).")
    expected = _etree()
    if got == [2, 3, 5, 4, -1, -1]:
        raise Wrong("those are the first nonzeros below the diagonal of A; L has fill. "
                    "Eliminate column 0 first: which new entry appears in column 2?")
    if got == [p + 1 if p >= 0 else p for p in expected] or got == [p + 1 for p in expected]:
        raise Wrong("count rows from 0.")
    if got != expected:
        wrong = [j for j in range(6) if got[j] != expected[j]]
        raise Wrong(f"column {wrong[0]}'s parent is not {got[wrong[0]]}.")


@exercise(3, correct="Columns 0..8 each have one entry below the diagonal (|L_j| = 2), "
                     "so none of 0..7 joins its right neighbour; the last column has none "
                     "(|L_9| = 1), so columns 8 and 9 form one supernode: 9 in all.")
def check_exercise_3(answer):
    """9 fundamental supernodes (the last two columns join)."""
    import scipy.sparse as sp

    import oclla.sparse

    n = 10
    t = sp.diags_array([-np.ones(n - 1), 4 * np.ones(n), -np.ones(n - 1)],
                       offsets=[-1, 0, 1]).tocsc()
    expected = oclla.sparse.analyze(t, ordering="natural", merge=False,
                                    refine=False).n_supernodes
    value = integer(answer, "the number of supernodes")
    if value == 10:
        raise Wrong("not every column is alone: look at the last two columns' counts.")
    if value == 1:
        raise Wrong("a chain of columns is not enough: their structures must match "
                    "(|L_j| = |L_j+1| + 1).")
    equal(answer, expected, what="the number of supernodes",
          hint="Count |L_j| for every column, then apply the rule to each pair j, j+1.")


@exercise(4, correct="AMD. On a strip, nested dissection's separators of 3 points buy "
                     "little over a band numbered across (RCM's), and the natural order's "
                     "band is 150 wide. Measure rather than trust a rule: ordering='best' "
                     "does.")
def check_exercise_4(answer):
    """The ordering of least nnz(L) for gallery.laplacian_2d(150, 3)."""
    import oclla.sparse
    from oclla.sparse import gallery

    names = ("natural", "rcm", "amd", "metis")
    if not isinstance(answer, str) or answer.lower() not in names:
        raise Wrong(f"answer one of {', '.join(map(repr, names))}.")
    a = gallery.laplacian_2d(150, 3)
    fill = {name: oclla.sparse.analyze(a, ordering=name, merge=False, refine=False).nnz_l
            for name in names}
    best = min(fill, key=fill.get)
    if answer.lower() != best:
        raise Wrong(f"{answer!r} gives nnz(L) = {fill[answer.lower()]}; one of the others "
                    f"gives less. Measure all four.")
