"""Cholesky inverse (potri) against scipy and cuSOLVER: ``oclla bench potri``.

    python benchmarks/potri.py                                   # n = 1024 ... 4096, both dtypes
    python benchmarks/potri.py --reference cuda --sizes 2048,8192,16384 --upper

The measurement lives in :mod:`oclla.bench_potri` (its docstring says what
each column is); benchmarks/logdet.py runs the log-determinant's.
"""

import sys

from oclla.bench_potri import main

if __name__ == "__main__":
    sys.exit(main("potri"))
