"""Sparse supernodal Cholesky factorization (right-looking, RL and RLB) on the OpenCL device.

``f = oclla.sparse.cholesky(A)`` for a scipy.sparse symmetric positive definite A;
then ``f.solve(b)``, ``f.logdet()``, ``f.L()``, ``f.P()``, ``f.refactor(A2)``.
:func:`analyze` is the symbolic analysis alone.
"""

from .factor import Factor, cholesky
from .symbolic import Symbolic, analyze

__all__ = ["Factor", "Symbolic", "analyze", "cholesky"]
