"""Test matrices for the viewer and the tutorials: one generator per family.

Every generator returns a new C-contiguous float64 ``(n, n)`` array (convert
to the working dtype afterwards) and is reproducible from its ``seed``
through :func:`numpy.random.default_rng`.

=================  ===========================================================
family             matrix
=================  ===========================================================
``random``         entries i.i.d. standard normal (LU's usual test matrix)
``spd``            B·Bᵀ + n·I with B standard normal: symmetric positive definite
``cond``           U·diag(σ)·Vᵀ with σ log-spaced from 1 to 1/κ, so κ₂(A) = κ;
                   with ``symmetric=True`` Q·diag(σ)·Qᵀ (SPD with κ₂ = κ)
``diagdom``        standard normal off the diagonal, a_ii = Σ_j≠i |a_ij| + 1:
                   strictly diagonally dominant (LU needs no row swaps)
``sycl4``          the 4×4 example of the SYCL "Parallel LU Decomposition on
                   GPGPU" post: L·U with integer factors, no pivoting needed
=================  ===========================================================

Matrices from outside: :func:`parse_matrix` (typed-in text),
:func:`load_matrix` (``.npy`` or Matrix Market ``.mtx``).  All raise
:class:`MatrixError` with a message meant for the user.
"""

from __future__ import annotations

import os
import stat

import numpy as np

SYCL4 = np.array([[2.0, 4.0, 3.0, 5.0],
                  [-4.0, -7.0, -5.0, 8.0],
                  [6.0, 8.0, 2.0, 9.0],
                  [4.0, 9.0, -2.0, 14.0]])
"""A = L·U with L = [[1,0,0,0],[-2,1,0,0],[3,-4,1,0],[2,1,3,1]] and
U = [[2,4,3,5],[0,1,1,18],[0,0,-3,66],[0,0,0,-212]] (the post's example)."""

FAMILIES = {
    "random": "random (standard normal)",
    "spd": "symmetric positive definite",
    "cond": "prescribed condition number",
    "diagdom": "diagonally dominant",
    "sycl4": "SYCL post's 4x4 example",
    "typed": "typed-in values",
    "file": "file (.npy or .mtx)",
}
"""Family key -> label, in the order a menu lists them."""

GENERATED = ("random", "spd", "cond", "diagdom", "sycl4")

MAX_STEP_VIEW_N = 512
"""Largest order the step views accept (one snapshot per step is kept)."""


class MatrixError(ValueError):
    """A matrix the viewer cannot use, with a message for the user."""


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise MatrixError(f"the order n must be an integer, got {n!r}")
    if n < 1:
        raise MatrixError(f"the order n must be at least 1, got {n}")
    return int(n)


def random(n: int, seed: int = 0) -> np.ndarray:
    """Entries i.i.d. N(0, 1)."""
    n = _check_n(n)
    return np.random.default_rng(seed).standard_normal((n, n))


def spd(n: int, seed: int = 0) -> np.ndarray:
    """B·Bᵀ + n·I with B i.i.d. N(0, 1): symmetric positive definite."""
    n = _check_n(n)
    b = np.random.default_rng(seed).standard_normal((n, n))
    a = b @ b.T + n * np.eye(n)
    return np.ascontiguousarray((a + a.T) / 2)


def _orthogonal(rng, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))       # Haar-distributed


def cond(n: int, kappa: float = 1e3, seed: int = 0, symmetric: bool = False) -> np.ndarray:
    """A matrix with 2-norm condition number ``kappa``.

    Singular values σ_i = κ^(−i/(n−1)), i = 0 … n−1 (1 down to 1/κ).
    ``symmetric=False``: U·diag(σ)·Vᵀ with independent random orthogonal U, V.
    ``symmetric=True``: Q·diag(σ)·Qᵀ, symmetric positive definite.
    """
    n = _check_n(n)
    kappa = float(kappa)
    if not np.isfinite(kappa) or kappa < 1.0:
        raise MatrixError(f"the condition number must be a finite number >= 1, got {kappa}")
    rng = np.random.default_rng(seed)
    sigma = kappa ** (-np.arange(n) / max(n - 1, 1))
    u = _orthogonal(rng, n)
    if symmetric:
        a = (u * sigma) @ u.T
        return np.ascontiguousarray((a + a.T) / 2)
    return np.ascontiguousarray((u * sigma) @ _orthogonal(rng, n).T)


def diagdom(n: int, seed: int = 0) -> np.ndarray:
    """Strictly diagonally dominant by rows: a_ii = Σ_{j≠i} |a_ij| + 1."""
    a = random(n, seed)
    np.fill_diagonal(a, 0.0)
    np.fill_diagonal(a, np.abs(a).sum(axis=1) + 1.0)
    return a


def sycl4() -> np.ndarray:
    """The SYCL post's 4×4 example (a copy)."""
    return SYCL4.copy()


def generate(family: str, n: int, seed: int = 0, kappa: float = 1e3,
             symmetric: bool = False) -> np.ndarray:
    """The matrix of a generated family (see the module table).

    ``symmetric`` asks ``cond`` for its SPD form; ``sycl4`` ignores n (4×4).
    """
    if family == "random":
        return random(n, seed)
    if family == "spd":
        return spd(n, seed)
    if family == "cond":
        return cond(n, kappa, seed, symmetric=symmetric)
    if family == "diagdom":
        return diagdom(n, seed)
    if family == "sycl4":
        return sycl4()
    raise MatrixError(f"unknown matrix family {family!r}; choose one of {', '.join(GENERATED)}")


def _as_square(a, what: str, max_n: int | None) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "biuf":
        raise MatrixError(f"{what} holds {a.dtype} values; a real matrix is needed")
    if a.ndim != 2:
        raise MatrixError(f"{what} is {a.ndim}-dimensional; a matrix (2-D) is needed")
    if a.shape[0] != a.shape[1]:
        raise MatrixError(f"{what} is {a.shape[0]}x{a.shape[1]}; a square matrix is needed")
    if a.shape[0] == 0:
        raise MatrixError(f"{what} is empty")
    if max_n is not None and a.shape[0] > max_n:
        raise MatrixError(f"{what} is {a.shape[0]}x{a.shape[0]}, too large for a step view "
                          f"(at most {max_n}x{max_n})")
    a = np.array(a, dtype=np.float64, order="C")
    if not np.all(np.isfinite(a)):
        raise MatrixError(f"{what} contains NaN or Inf")
    return a


def parse_matrix(text: str, max_n: int | None = MAX_STEP_VIEW_N) -> np.ndarray:
    """A square matrix from typed-in text.

    Rows are separated by newlines or ``;``, entries by spaces or commas;
    brackets are ignored, so ``[[1, 2], [3, 4]]`` and ``1 2; 3 4`` agree.
    """
    cleaned = text.replace("[", " ").replace("]", ";")
    rows = []
    for line in cleaned.replace("\n", ";").split(";"):
        fields = line.replace(",", " ").split()
        if not fields:
            continue
        try:
            rows.append([float(f) for f in fields])
        except ValueError as exc:
            raise MatrixError(f"cannot read a number in row {len(rows) + 1}: {exc}") from None
    if not rows:
        raise MatrixError("no numbers were typed in")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise MatrixError(f"rows have different lengths {sorted(widths)}; "
                          f"every row needs the same number of entries")
    return _as_square(np.array(rows), "the typed-in matrix", max_n)


def _check_regular(path: str, name: str) -> None:
    """MatrixError unless ``path`` is a regular file (a FIFO or a device would block or
    never end)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise MatrixError(f"cannot read {name}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise MatrixError(f"{name} is not a regular file")


def load_matrix(path, max_n: int | None = MAX_STEP_VIEW_N) -> np.ndarray:
    """A square matrix from a ``.npy`` file or a Matrix Market ``.mtx`` file.

    The size in a ``.mtx`` header is checked before any entry is read, so a
    huge file is rejected at once.  Sparse files are made dense.
    """
    path = os.fspath(path)
    name = os.path.basename(path)
    ext = os.path.splitext(path)[1].lower()
    if ext in (".npy", ".mtx", ".mm"):
        _check_regular(path, name)
    if ext == ".npy":
        try:         # mapped: the header's shape is checked before any entry is read
            a = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            raise MatrixError(f"cannot read {name} as a .npy array: {exc}") from None
        return _as_square(a, name, max_n)
    if ext in (".mtx", ".mm"):
        import scipy.io
        try:
            rows, cols, _entries, fmt, field, _sym = scipy.io.mminfo(path)
        except (OSError, ValueError, TypeError, IndexError) as exc:
            raise MatrixError(f"{name} is not a Matrix Market file: {exc}") from None
        if field not in ("real", "integer", "pattern"):
            raise MatrixError(f"{name} holds {field} entries; a real matrix is needed")
        if rows != cols:
            raise MatrixError(f"{name} is {rows}x{cols}; a square matrix is needed")
        if max_n is not None and rows > max_n:
            raise MatrixError(f"{name} is {rows}x{cols}, too large for a step view "
                              f"(at most {max_n}x{max_n})")
        try:
            m = scipy.io.mmread(path)
        except (OSError, ValueError, TypeError, IndexError) as exc:
            raise MatrixError(f"cannot read {name}: {exc}") from None
        m = m.toarray() if hasattr(m, "toarray") else np.asarray(m)
        return _as_square(m, name, max_n)
    raise MatrixError(f"{name}: unknown file type {ext or '(none)'}; use .npy or .mtx")
