"""The structure of a sparse Cholesky run, kept in its recording and checked as it loads (no Qt).

``oclla.sparse.cholesky`` traces its steps per level of the supernodal
elimination tree (``info["supernodes"]`` of a batched step, ``info["supernode"]``
of a large one, ``info["route"]`` "batched" or "large"), but not the patterns
they work on.  :func:`structure_metrics` stores them with the run
(``run.metrics["sparse"]``, plain JSON lists), in the permuted ordering
P·A·Pᵀ = L·Lᵀ:

* ``a_rows``, ``a_cols``: A's lower triangle (diagonal included);
* ``super_ptr`` (ns+1): supernode s owns columns ``super_ptr[s]:super_ptr[s+1]``;
* ``row_ptr``, ``row_idx``: the rows of supernode s, ascending, its own columns first
  (every column of s has the rows of s from its own index down);
* ``parent`` (ns): the supernodal elimination tree, -1 at roots, ``parent[s] > s``;
* ``ordering``, ``nnz_a`` (lower triangle), ``nnz_l``.

A recording is an untrusted file: :func:`structure` checks every list (types,
lengths, ranges, orders) and each step's supernode numbers against it, and
raises :class:`oclla.RecordingError` for anything off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oclla.trace import MAX_ORDER, RecordingError

ALGORITHM = "sparse_cholesky"

ROUTES = ("batched", "large")

MAX_SUPERNODE_LIST = 1 << 24
"""Most entries of any list in a sparse run's structure."""


@dataclass(frozen=True)
class Structure:
    """A sparse run's patterns (int64 arrays, see the module docstring)."""

    n: int
    ordering: str
    a_rows: np.ndarray
    a_cols: np.ndarray
    super_ptr: np.ndarray
    row_ptr: np.ndarray
    row_idx: np.ndarray
    parent: np.ndarray

    @property
    def ns(self) -> int:
        return int(self.super_ptr.size - 1)

    def l_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) of L's lower triangle in the supernodal pattern (vectorised)."""
        ncols = np.diff(self.super_ptr)
        nrows = np.diff(self.row_ptr)
        sup = np.repeat(np.arange(self.ns), ncols)               # supernode of each column
        local = np.arange(self.n) - self.super_ptr[sup]
        counts = nrows[sup] - local
        col = np.repeat(np.arange(self.n), counts)
        start = np.zeros(self.n + 1, np.int64)
        np.cumsum(counts, out=start[1:])
        offset = np.arange(start[-1]) - start[col]
        rows = self.row_idx[self.row_ptr[sup[col]] + local[col] + offset]
        return rows, col

    def fill(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cols) of L's entries that are not in A: the fill-in."""
        rows, cols = self.l_pattern()
        width = np.int64(self.n) + 1
        in_a = np.isin(rows * width + cols, self.a_rows * width + self.a_cols)
        return rows[~in_a], cols[~in_a]

    @property
    def nnz_l(self) -> int:
        ncols = np.diff(self.super_ptr)
        nrows = np.diff(self.row_ptr)
        return int(np.sum(ncols * nrows - ncols * (ncols - 1) // 2))


def structure_metrics(a_low, factor) -> dict:
    """``run.metrics["sparse"]`` of a factorization ``factor`` (:class:`oclla.sparse.Factor`)
    of the matrix whose lower triangle is ``a_low`` (scipy.sparse)."""
    import scipy.sparse as sp          # a run's: never on the way to the window or a replay
    sym = factor.symbolic
    iperm = np.asarray(sym.iperm)
    coo = sp.coo_array(a_low)
    r, c = iperm[coo.row], iperm[coo.col]
    lo, hi = np.maximum(r, c), np.minimum(r, c)
    key = np.unique(lo.astype(np.int64) * (sym.n + 1) + hi)
    return {"n": int(sym.n), "ordering": str(sym.ordering),
            "a_rows": (key // (sym.n + 1)).tolist(), "a_cols": (key % (sym.n + 1)).tolist(),
            "super_ptr": np.asarray(sym.super_ptr).tolist(),
            "row_ptr": np.asarray(sym.row_ptr).tolist(),
            "row_idx": np.asarray(sym.row_idx).tolist(),
            "parent": np.asarray(sym.parent).tolist(),
            "nnz_a": int(key.size), "nnz_l": int(sym.nnz_l)}


def _ints(meta: dict, key: str, lo: int, hi: int) -> np.ndarray:
    value = meta.get(key)
    if not isinstance(value, list) or len(value) > MAX_SUPERNODE_LIST:
        raise RecordingError(f"sparse structure: {key} must be a list of at most "
                             f"{MAX_SUPERNODE_LIST} integers")
    if not all(type(x) is int for x in value):
        raise RecordingError(f"sparse structure: {key} must hold integers only")
    arr = np.asarray(value, dtype=np.int64) if value else np.zeros(0, np.int64)
    if arr.size and (arr.min() < lo or arr.max() > hi):
        raise RecordingError(f"sparse structure: {key} has entries outside [{lo}, {hi}]")
    return arr


def parse(meta) -> Structure:
    """The :class:`Structure` of ``run.metrics["sparse"]`` (RecordingError if malformed)."""
    if not isinstance(meta, dict):
        raise RecordingError("sparse structure: must be an object")
    n = meta.get("n")
    if type(n) is not int or not 0 <= n < MAX_ORDER:
        raise RecordingError(f"sparse structure: n must be an integer in [0, {MAX_ORDER})")
    ordering = meta.get("ordering", "")
    if not isinstance(ordering, str) or len(ordering) > 64:
        raise RecordingError("sparse structure: ordering must be a short string")
    a_rows = _ints(meta, "a_rows", 0, n - 1)
    a_cols = _ints(meta, "a_cols", 0, n - 1)
    if a_rows.size != a_cols.size or np.any(a_rows < a_cols):
        raise RecordingError("sparse structure: a_rows and a_cols must pair up in the "
                             "lower triangle")
    super_ptr = _ints(meta, "super_ptr", 0, n)
    ns = super_ptr.size - 1
    if ns < 0 or super_ptr[0] != 0 or super_ptr[-1] != n or np.any(np.diff(super_ptr) < 1):
        raise RecordingError("sparse structure: super_ptr must rise strictly from 0 to n")
    parent = _ints(meta, "parent", -1, max(ns - 1, 0))
    if parent.size != ns or np.any((parent >= 0) & (parent <= np.arange(ns))):
        raise RecordingError("sparse structure: parent must give each supernode a later "
                             "one or -1")
    row_ptr = _ints(meta, "row_ptr", 0, MAX_SUPERNODE_LIST)
    row_idx = _ints(meta, "row_idx", 0, n - 1)
    ncols = np.diff(super_ptr)
    if row_ptr.size != ns + 1 or row_ptr[0] != 0 or row_ptr[-1] != row_idx.size \
            or np.any(np.diff(row_ptr) < ncols):
        raise RecordingError("sparse structure: row_ptr must list at least each "
                             "supernode's own columns and end at len(row_idx)")
    if ns:
        seg = np.repeat(np.arange(ns), np.diff(row_ptr))
        local = np.arange(row_idx.size) - row_ptr[seg]
        own = local < ncols[seg]
        if np.any(row_idx[own] != super_ptr[seg[own]] + local[own]):
            raise RecordingError("sparse structure: each supernode's rows must begin with "
                                 "its own columns")
        rising = np.diff(row_idx) > 0
        if np.any(~rising[seg[1:] == seg[:-1]]):
            raise RecordingError("sparse structure: each supernode's rows must rise")
    return Structure(n, ordering, a_rows, a_cols, super_ptr, row_ptr, row_idx, parent)


def step_supernodes(step) -> np.ndarray:
    """The supernodes a step works on (empty for the scatter of A's values)."""
    info = step.info or {}
    if "supernodes" in info:
        return np.asarray(info["supernodes"], dtype=np.int64).reshape(-1)
    if "supernode" in info:
        return np.asarray([info["supernode"]], dtype=np.int64)
    return np.zeros(0, np.int64)


def step_route(step) -> str | None:
    route = (step.info or {}).get("route")
    return route if route in ROUTES else None


def _check_steps(run, ns: int) -> None:
    for step in run.steps:
        info = step.info or {}
        if "supernodes" in info:
            value = info["supernodes"]
            if not isinstance(value, list) or len(value) > MAX_SUPERNODE_LIST or \
                    not all(type(x) is int and 0 <= x < ns for x in value):
                raise RecordingError(f"sparse step {step.index}: supernodes must be a list "
                                     f"of supernode numbers below {ns}")
        if "supernode" in info:
            s = info["supernode"]
            if type(s) is not int or not 0 <= s < ns:
                raise RecordingError(f"sparse step {step.index}: supernode must be a "
                                     f"number below {ns}")
        if "route" in info and info["route"] not in ROUTES:
            raise RecordingError(f"sparse step {step.index}: route must be one of "
                                 f"{', '.join(ROUTES)}")


def structure(run) -> Structure | None:
    """A sparse run's checked :class:`Structure` (cached on the run); None for a run that
    is not a sparse Cholesky or kept no structure.  RecordingError if it is malformed."""
    if run.algorithm != ALGORITHM or not isinstance(run.metrics, dict) \
            or "sparse" not in run.metrics:
        return None
    cached = run.__dict__.get("_sparse_structure")
    if cached is not None:
        return cached
    s = parse(run.metrics["sparse"])
    if run.shape and tuple(run.shape[:2]) != (s.n, s.n):
        raise RecordingError(f"sparse structure: n = {s.n} but the run's shape is "
                             f"{tuple(run.shape)}")
    _check_steps(run, s.ns)
    run.__dict__["_sparse_structure"] = s
    return s


@dataclass(frozen=True)
class Progress:
    """Where a sparse run stands at a position: the supernodes of the current step,
    those done (potrf'd: their columns of L final), and the route each took so far."""

    current: np.ndarray        # supernodes of the step at this position
    done: np.ndarray           # bool (ns,)
    route: np.ndarray          # int8 (ns,): -1 not yet, 0 batched, 1 large


def progress(run, s: Structure, position: int) -> Progress:
    """The :class:`Progress` after ``position`` steps (a supernode counts as done once a
    step has factored it: a batched potrf, or a large one's trsm or last potrf step)."""
    done = np.zeros(s.ns, bool)
    route = np.full(s.ns, -1, np.int8)
    current = np.zeros(0, np.int64)
    for step in run.steps[:position]:
        ss = step_supernodes(step)
        r = step_route(step)
        if ss.size and r is not None:
            route[ss] = ROUTES.index(r)
            done[ss] = True
        current = ss
    return Progress(current, done, route)


def columns_by_position(run, s: Structure) -> np.ndarray:
    """Columns of L factored (their supernode reached by a step) at each position:
    what a comparison of two orderings keeps level (non-decreasing)."""
    ncols = np.diff(s.super_ptr)
    seen = np.zeros(s.ns, bool)
    out = np.zeros(len(run.steps) + 1, np.int64)
    for i, step in enumerate(run.steps):
        ss = step_supernodes(step)
        if ss.size and step_route(step) is not None:
            new = ss[~seen[ss]]
            seen[new] = True
            out[i + 1] = out[i] + int(ncols[new].sum())
        else:
            out[i + 1] = out[i]
    return out


def summary(run, s: Structure) -> str:
    """"nnz(L) 1 234 (fill +567) · 12 supernodes · factor 1.2 ms" for titles."""
    fill = s.nnz_l - s.a_rows.size
    ms = run.device_ns / 1e6
    return (f"nnz(L) {s.nnz_l} (fill +{fill}) · {s.ns} supernodes · "
            f"factor {ms:.3g} ms")
