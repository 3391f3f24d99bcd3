"""Sparse Cholesky factorization (supernodal, right-looking) of scipy.sparse matrices."""

from .symbolic import Symbolic, analyze
