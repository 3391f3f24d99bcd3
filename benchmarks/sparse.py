"""Supernodal sparse Cholesky (oclla.sparse) on 2-D and 3-D Laplacians against CHOLMOD.

    python benchmarks/sparse.py                                   # the default problems
    python benchmarks/sparse.py --sizes 2d:500,2d:1000,3d:30,3d:50 --methods rl,rlb
    python benchmarks/sparse.py --sizes 3d:20 --large 1e5,1e6,1e7,1e8,inf   # the threshold
    python benchmarks/sparse.py --sizes 3d:60,3d:100 --device 0:0 --json gpu.json

The same as ``oclla bench sparse`` and ``python -m oclla.bench sparse`` (the columns
are described in oclla/bench_sparse.py).  CHOLMOD is the reference where
scikit-sparse imports (``pip install scikit-sparse`` against the distribution's
SuiteSparse, with OpenBLAS), else scipy's splu as a rough yardstick.  On a machine
whose cores are shared, set ``OPENBLAS_NUM_THREADS=1`` and say so beside the numbers.
"""

import sys

from oclla.bench_sparse import main

if __name__ == "__main__":
    sys.exit(main())
