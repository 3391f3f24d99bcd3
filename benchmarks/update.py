"""Rank-k Cholesky update/downdate against refactorization: ``oclla bench update``.

    python benchmarks/update.py --sizes 1000,2000,4000 --reference cpu
    python benchmarks/update.py --reference cuda --sizes 5000,8192,16384 --dtype float32,float64
    python benchmarks/update.py --stream --sizes 65536 --ranks 16 --dtype float64

The measurement lives in :mod:`oclla.bench_update` (its docstring says what
each column is); this script runs it from a checkout, as the command does.
"""

import sys

from oclla.bench_update import main

if __name__ == "__main__":
    sys.exit(main())
