"""Small helpers shared by the benchmark drivers: timing and the optional CuPy reference."""

from __future__ import annotations

import time


def best_of(fn, repeat: int = 3, warmup: int = 1) -> float:
    """Smallest wall time in seconds of ``fn()`` over ``repeat`` runs after ``warmup`` runs.

    ``fn`` must wait for its own device work (``queue.finish()``).
    """
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def cupy_or_none():
    """The ``cupy`` module if it is installed and sees a CUDA device, else None."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:        # not installed, no driver, no device: no CuPy column
        return None


def cupy_best_of(cp, fn, repeat: int = 3, warmup: int = 1) -> float:
    """:func:`best_of` for a CuPy computation (synchronizes the device around each run)."""
    def timed():
        fn()
        cp.cuda.Device().synchronize()
    cp.cuda.Device().synchronize()
    return best_of(timed, repeat, warmup)
