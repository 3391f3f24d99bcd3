"""Log-determinant from a Cholesky factor on the device: ``oclla bench logdet``.

    python benchmarks/logdet.py --sizes 4096,8192
    python benchmarks/logdet.py --reference cuda --sizes 32768

The measurement lives in :mod:`oclla.bench_potri` (its docstring says what
each column is).
"""

import sys

from oclla.bench_potri import main

if __name__ == "__main__":
    sys.exit(main("logdet"))
