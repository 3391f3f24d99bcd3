"""The public sparse Cholesky: :func:`cholesky` and the :class:`Factor` it returns.

``f = cholesky(A)`` validates A (:func:`._input.lower_triangle`), analyses its
pattern (:func:`.symbolic.analyze_lower`: ordering, supernodes), plans the numeric
schedule (:func:`.numeric.make_plan`) and factors P·A·Pᵀ = L·Lᵀ on the device
(:func:`.numeric.factor`).  L stays on the device; ``f.solve(b)``, ``f.logdet()``
run there, ``f.L()`` copies it to the host as a scipy.sparse CSC matrix.
``f.refactor(A2)`` factors a matrix of the same pattern reusing the analysis
and the plan.  The conventions follow scikit-sparse's CHOLMOD wrapper where they
fit: ``P()`` is the permutation p with A[p][:, p] = L·Lᵀ, ``L()`` the factor of
the permuted matrix.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp

from .. import trace
from .._device import driver_errors, resolve_queue
from .._programs import enqueue, get_kernel, int_arg, launch_queue, round_up
from .._validate import check_fp64, check_method, solve_in_place
from ..blas import View, gemm, trsm
from ..inverse import logdet_device
from . import numeric
from ._input import lower_triangle, refill, refill_map
from .symbolic import Symbolic, analyze_lower

__all__ = ["Factor", "cholesky"]


class Factor:
    """A sparse Cholesky factorization P·A·Pᵀ = L·Lᵀ held on the device.

    Attributes
    ----------
    symbolic : Symbolic
        The analysis (ordering, supernodes, L's storage).
    method : str
        "rl" or "rlb" (:mod:`oclla.sparse.numeric`).
    dtype : numpy.dtype
        float32 or float64: the working precision of the factor and the solves.
    nnz : int
        Entries of L's lower triangle (the supernodal pattern, explicit zeros of
        merged supernodes included).
    supernodes : int
        Number of supernodes.

    Device memory: L's storage (twice from the first :meth:`refactor` on), the
    analysis's tables and, kept for the refactorizations, RL's working storage and on
    CPUs the packed strips of the largest supernode
    (:func:`oclla.sparse.numeric.workspace`, :func:`~oclla.sparse.numeric.packed_gemm`).
    """

    def __init__(self, symbolic: Symbolic, plan, lbuf, a_low, *, method: str, queue):
        self.symbolic = symbolic
        self.method = method
        self.dtype = np.dtype(a_low.dtype)
        self._plan = plan
        self._l = lbuf
        self._indptr = a_low.indptr.copy()
        self._indices = a_low.indices.copy()
        self._queue = queue
        self._refill = None          # the last refactor's input pattern (_input.Refill)
        self._spare = None           # refactor's second L storage (see refactor)

    @property
    def nnz(self) -> int:
        return int(self.symbolic.nnz_l)

    @property
    def supernodes(self) -> int:
        return int(self.symbolic.super_ptr.size - 1)

    @property
    def n(self) -> int:
        return int(self.symbolic.n)

    def P(self) -> np.ndarray:
        """The permutation p (int64, n): A[p][:, p] = L·Lᵀ (CHOLMOD's ``P()``)."""
        return self.symbolic.perm.copy()

    def L(self) -> sp.csc_array:
        """L as an n x n lower-triangular scipy.sparse CSC array of the factor's dtype, in
        the permuted ordering (A[p][:, p] = L·Lᵀ, p = ``P()``); a host copy."""
        sym = self.symbolic
        n = sym.n
        values = np.empty(max(int(sym.l_ptr[-1]), 1), self.dtype)
        cl.enqueue_copy(self._queue, values, self._l)
        nr = np.diff(sym.row_ptr)
        owner = sym.col_super
        local = np.arange(n) - sym.super_ptr[owner]
        counts = nr[owner] - local
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        col = np.repeat(np.arange(n), counts)
        offset = np.arange(indptr[-1]) - indptr[col] + local[col]    # row position in s
        s = owner[col]
        rows = sym.row_idx[sym.row_ptr[s] + offset]
        vals = values[sym.l_ptr[s] + local[col] * nr[s] + offset]
        return sp.csc_array((vals, rows, indptr), shape=(n, n))

    @driver_errors
    def solve(self, b, *, check_finite: bool = True):
        """x with A·x = b: x = Pᵀ·L⁻ᵀ·L⁻¹·P·b, the supernodal substitutions on the device.

        Parameters
        ----------
        b : (n,) or (n, k) array_like, or pyopencl.array.Array
            A host b is converted to the factor's dtype where that is exact
            (else TypeError); a device b must have the factor's dtype.  Never
            modified.
        check_finite : bool, default True
            Reject NaN/Inf in b (ValueError).

        Returns
        -------
        x : array of b's shape and the factor's dtype (a device array for a device b)

        Raises
        ------
        ValueError
            b's rows are not n, b is not 1-D or 2-D, NaN/Inf with ``check_finite``.
        TypeError
            A b whose dtype does not convert exactly to the factor's.
        """
        queue = self._queue
        n = self.n

        def run(x2):
            solve_device(queue, self.symbolic, self._plan, self._l, x2, dtype=self.dtype)

        return solve_in_place(queue, b, n, self.dtype, run, overwrite_b=False,
                              check_finite=check_finite)

    @driver_errors
    def logdet(self) -> float:
        """log det A = 2 Σⱼ log L(j, j), summed on the device (compensated, as
        :func:`oclla.cho_logdet`).

        Returns
        -------
        float
        """
        queue = self._queue
        n = self.n
        if n == 0:
            return 0.0
        tab = numeric.device_tables(queue, self.symbolic, self._plan)
        diag = cl_array.empty(queue, n, self.dtype)
        kernel = get_kernel(queue, "sparse.cl", "gather_diagonal", self.dtype)
        wg = numeric.batch_wg(queue)
        enqueue(queue, kernel, (round_up(n, wg),), (wg,), int_arg(n), tab["dpos"], self._l,
                diag.data)
        return logdet_device(queue, diag.data, 0, n, 0, dtype=self.dtype)

    @driver_errors
    def refactor(self, a, *, lower: bool | None = None, check_finite: bool = True) -> "Factor":
        """Factor ``a`` into this Factor, reusing the analysis and the plan (CHOLMOD's
        ``cholesky_inplace``): the numeric factorization alone.

        Parameters
        ----------
        a : scipy.sparse matrix, n x n
            The same pattern as the analysed matrix (of the triangle that ``lower``
            selects; explicit zeros count as entries) and the same dtype.
        lower : None, True or False
            As for :func:`cholesky`.
        check_finite : bool, default True
            Reject NaN/Inf values (ValueError).

        Returns
        -------
        Factor
            self, now the factor of ``a``.

        Raises
        ------
        ValueError
            Another pattern, NaN/Inf, a matrix that is not symmetric (``lower=None``).
        TypeError
            Another dtype.
        numpy.linalg.LinAlgError
            ``a`` is not positive definite (this Factor then stays as it was).

        Notes
        -----
        The new factor is written into a second L storage, which then swaps with the
        current one: the Factor holds two copies of L's storage from its first
        refactorization on, and every later one writes into memory already touched.
        """
        values = None
        if self._refill is not None:
            values = refill(a, self._refill, lower=lower, check_finite=check_finite,
                            dtype=self.dtype)
        if values is None:
            a_low = lower_triangle(a, lower=lower, check_finite=check_finite)
            if (a_low.shape[0] != self.n or a_low.indptr.size != self._indptr.size
                    or not np.array_equal(a_low.indptr, self._indptr)
                    or not np.array_equal(a_low.indices, self._indices)):
                raise ValueError("refactor needs a matrix with the pattern of the analysed "
                                 "one (its lower triangle); call oclla.sparse.cholesky for "
                                 "a new pattern")
            if a_low.dtype != self.dtype:
                raise TypeError(f"refactor needs a {self.dtype} matrix (the factor's dtype), "
                                f"got {a_low.dtype}")
            values = a_low.data
            self._refill = refill_map(a, lower=lower)
        if self._spare is None:
            self._spare = numeric.l_storage(self._queue, self.symbolic, self.dtype)
        self._l, self._spare = _numeric(self._queue, self.symbolic, self._plan, values,
                                        self.dtype, self.method, out=self._spare), self._l
        return self

    def __repr__(self) -> str:
        return (f"<oclla.sparse.Factor n={self.n} nnz={self.nnz} supernodes={self.supernodes}"
                f" method={self.method!r} ordering={self.symbolic.ordering!r} "
                f"dtype={self.dtype.name}>")


def _numeric(queue, sym, plan, values: np.ndarray, dtype, method, out=None):
    """L storage of the matrix whose lower-triangle values (CSC order of the analysis)
    are ``values`` (in ``out`` if given): one upload, then :func:`.numeric.factor`."""
    dev = cl_array.to_device(queue, np.ascontiguousarray(values))
    return numeric.factor(queue, sym, plan, dev, dtype=dtype, method=method, out=out)


def solve_device(queue, sym, plan, lbuf, x2: cl_array.Array, *, dtype) -> None:
    """Overwrite the C-contiguous (n, nrhs) device array x2 = B with A⁻¹·B.

    X = P·B in a column-major work array; forward, level by level up the tree:
    x_s = L₁₁⁻¹·x_s, then x(rows of L₂₁) -= L₂₁·x_s; backward, level by level down:
    x_s = L₁₁⁻ᵀ·(x_s − L₂₁ᵀ·x(rows of L₂₁)); B = Pᵀ·X.  Batched supernodes: one
    work-group each (fsolve_diag, fsolve_update by target, bsolve); large ones: TRSM
    and GEMM of :mod:`oclla.blas` on the work array read row-major (nrhs x n)."""
    n, nrhs = x2.shape
    dtype = np.dtype(dtype)
    tab = numeric.device_tables(queue, sym, plan)
    wg = numeric.batch_wg(queue)
    item = dtype.itemsize
    work = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, n * nrhs * item)
    big = plan.m[plan.large].max(initial=0)
    tmp = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, max(1, int(big) * nrhs) * item)
    k_in = get_kernel(queue, "sparse.cl", "permute_in", dtype)
    k_out = get_kernel(queue, "sparse.cl", "permute_out", dtype)
    k_diag = get_kernel(queue, "sparse.cl", "fsolve_diag", dtype, WG=wg)
    k_upd = get_kernel(queue, "sparse.cl", "fsolve_update", dtype, WG=wg)
    k_back = get_kernel(queue, "sparse.cl", "bsolve", dtype, WG=wg)
    k_sub = get_kernel(queue, "sparse.cl", "rows_subtract", dtype)
    k_gather = get_kernel(queue, "sparse.cl", "rows_gather", dtype)
    perm = tab.get("perm")
    if perm is None:
        perm = tab["perm"] = numeric._buffer(queue.context, sym.perm.astype(np.int64))
    grid, rows = (round_up(n, wg), nrhs), (wg, 1)   # fixed work-groups: one compile each
    common = (tab["sp"], tab["rp"], tab["lp"])
    flops = 2.0 * float(sym.nnz_l) * nrhs
    x = View(work, 0, n)                   # X read row-major: nrhs x n

    def large(s):
        nc, nr, m = int(plan.nc[s]), int(plan.nr[s]), int(plan.m[s])
        c0, lp = int(sym.super_ptr[s]), int(sym.l_ptr[s])
        roff = np.int64(int(sym.row_ptr[s]) + nc)
        return nc, nr, m, x.at(0, c0), View(lbuf, lp, nr), View(lbuf, lp + nc, nr), roff

    with trace.run("sparse_solve", "supernodal", queue, (n, nrhs), dtype):
        with launch_queue(queue) as q:
            enqueue(q, k_in, grid, rows, int_arg(n), int_arg(nrhs), perm, x2.data, work)
            with trace.step("forward", (0, n, 0, n), flops=flops):
                for h, lev in enumerate(plan.levels):
                    if lev.small.size:
                        enqueue(q, k_diag, (lev.small.size * wg,), (wg,),
                                tab["levels"][h][0], *common, lbuf, int_arg(n),
                                int_arg(nrhs), work)
                    if lev.small_pairs is not None:
                        targets, ptr, src, j0, j1, _, _ = numeric.pair_tables(
                            queue, plan, lev.small_pairs)
                        count = lev.small_pairs.targets.size
                        enqueue(q, k_upd, (count * wg, numeric.slices(q, count)), (wg, 1),
                                targets, ptr, src, j0, j1, *common, tab["ri"], lbuf,
                                int_arg(n), int_arg(nrhs), work)
                    for s in lev.large.tolist():
                        nc, nr, m, xs, u11, u12, roff = large(s)
                        # X_s·U₁₁ = B_s (L₁₁·x = b), then Y = X_s·U₁₂ (L₂₁·x), scattered
                        trsm(q, nc, nrhs, u11, xs, dtype=dtype, left=False, lower=False)
                        if m:
                            gemm(q, nrhs, m, nc, 1.0, xs, u12, 0.0, View(tmp, 0, m),
                                 dtype=dtype)
                            enqueue(q, k_sub, (round_up(m, wg), nrhs), rows, int_arg(m),
                                    int_arg(nrhs), int_arg(n), tab["ri"], roff, tmp, work)
            with trace.step("backward", (0, n, 0, n), flops=flops):
                for h in reversed(range(len(plan.levels))):
                    lev = plan.levels[h]
                    if lev.small.size:
                        enqueue(q, k_back, (lev.small.size * wg,), (wg,), tab["levels"][h][0],
                                *common, tab["ri"], lbuf, int_arg(n), int_arg(nrhs), work)
                    for s in lev.large.tolist():
                        nc, nr, m, xs, u11, u12, roff = large(s)
                        if m:
                            enqueue(q, k_gather, (round_up(m, wg), nrhs), rows, int_arg(m),
                                    int_arg(nrhs), int_arg(n), tab["ri"], roff, work, tmp)
                            gemm(q, nrhs, nc, m, -1.0, View(tmp, 0, m), u12, 1.0, xs,
                                 dtype=dtype, trans_b=True)
                        # X_s·U₁₁ᵀ = B_s (L₁₁ᵀ·x = b)
                        trsm(q, nc, nrhs, u11, xs, dtype=dtype, left=False, lower=False,
                             trans=True)
            enqueue(q, k_out, grid, rows, int_arg(n), int_arg(nrhs), perm, work, x2.data)


@driver_errors
def cholesky(a, *, ordering: str = "metis", method: str = "rl", lower: bool | None = None,
             check_finite: bool = True, large: float | None = None,
             merge: bool | str = True,
             refine: bool = True, queue=None) -> Factor:
    """Supernodal sparse Cholesky factorization P·A·Pᵀ = L·Lᵀ on the OpenCL device.

    Parameters
    ----------
    a : scipy.sparse matrix or array, n x n, float32 or float64
        Symmetric positive definite.  Any scipy.sparse format; never modified.
    ordering : "metis" (default), "amd", "rcm", "natural" or "best"
        The fill-reducing ordering (``"best"`` tries several, keeps the least fill).
        The analysis then postorders the elimination tree (as CHOLMOD does), so
        :meth:`Factor.P` is a permutation of the ordering's, not the identity even
        for ``"natural"``; the fill is the ordering's.
    method : "rl" (default) or "rlb"
        Right-looking supernodal: "rl" forms each supernode's whole update matrix
        by one SYRK in working storage and assembles it into the ancestors; "rlb"
        updates the ancestors' blocks of L straight from the supernode's row
        blocks (no working storage; for matrices whose RL storage is too large).
        Both give the same factor up to rounding.
    lower : None (default), True or False
        Which part of ``a`` is read.  None: ``a`` holds the whole symmetric matrix
        and must be symmetric (exactly; a ValueError otherwise); True: only the
        lower triangle (diagonal included) is read and the upper is ignored;
        False: only the upper triangle is read.
    check_finite : bool
        Refuse NaN/Inf values (ValueError).
    large : float, optional
        Flop count from which a supernode goes the BLAS-3 route (one at a time)
        instead of the batched kernels (default: the device kind's
        :data:`oclla.sparse.numeric.LARGE_FLOPS`).
    merge : bool or str
        Supernode merging of the analysis: "relaxed" (CHOLMOD's relaxed amalgamation,
        nrelax₁ = 14: :data:`oclla.sparse._merge.DEFAULT_NRELAX`; what True means),
        "fill" (the paper's rule: least fill first, up to 25 % more storage) or False
        (:func:`oclla.sparse.analyze`).  "relaxed" stores about what CHOLMOD stores (with
        METIS, of its L: 3-D Laplacians 30³-50³ 0.96-0.99, "fill" 1.09-1.14; 2-D 500²
        0.92, 1000² 1.03) and keeps many small supernodes, which suits RL; RLB's batched
        updates of small
        supernodes were up to 2x slower with it on PoCL (3-D 50³: "fill" 14 s, "relaxed"
        27 s; benchmarks/results/pocl-2core-epyc-2026-11-26-sparse-cholmod-3.txt).
    refine : bool
        Partition refinement of the analysis.
    queue : pyopencl.CommandQueue, optional
        The queue to run on (default: :func:`oclla.get_queue`).

    Returns
    -------
    Factor

    Raises
    ------
    numpy.linalg.LinAlgError
        "the matrix is not positive definite: column j (original ordering)".
    ValueError
        Not square, not symmetric (with ``lower=None``), NaN/Inf, an unknown
        ``ordering``, ``method`` or ``merge``.
    TypeError
        Not a scipy.sparse matrix; a dtype other than float32/float64.
    oclla.DeviceError
        float64 on a device without fp64, allocations the device cannot make.
    """
    check_method(method, numeric.METHODS)
    queue = resolve_queue(queue)
    a_low = lower_triangle(a, lower=lower, check_finite=check_finite)
    check_fp64(queue, a_low.dtype)
    sym = analyze_lower(a_low, ordering=ordering, merge=merge, refine=refine)
    plan = numeric.make_plan(sym, large=numeric.large_threshold(queue) if large is None
                             else large)
    lbuf = _numeric(queue, sym, plan, a_low.data, a_low.dtype, method)
    return Factor(sym, plan, lbuf, a_low, method=method, queue=queue)
