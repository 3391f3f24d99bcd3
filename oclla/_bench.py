"""Small helpers shared by the benchmark drivers: timing, the optional CuPy reference and
argument types."""

from __future__ import annotations

import argparse
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


def int_list(minimum: int):
    """An argparse ``type``: comma-separated integers, each at least ``minimum``."""
    def parse(text: str) -> list:
        try:
            values = [int(s) for s in text.split(",") if s.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"comma-separated integers, got {text!r}") from None
        if not values or min(values) < minimum:
            raise argparse.ArgumentTypeError(f"integers >= {minimum}, got {text!r}")
        return values
    return parse


def dtype_list(text: str) -> list:
    """An argparse ``type``: float32 and/or float64, comma-separated."""
    values = [s.strip() for s in text.split(",") if s.strip()]
    if not values or any(v not in ("float32", "float64") for v in values):
        raise argparse.ArgumentTypeError(f"float32 and/or float64, got {text!r}")
    return values
