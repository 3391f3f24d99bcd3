"""Reproduce Jung & O'Leary's Tables 1 and 2 (weighted least squares, mixed precision).

    python benchmarks/wls_tables.py                 # m = 512, 1024, 1536, 2048
    python benchmarks/wls_tables.py --sizes 512,1024 --tables 1

Same as ``oclla bench wls``; see :mod:`oclla.bench_wls` for the columns.
"""

import sys

from oclla.bench_wls import main

if __name__ == "__main__":
    sys.exit(main())
