"""Kernel parameters chosen from the device's limits.

Every tunable (tile sizes, work-group sizes, block sizes) is decided here and
nowhere else, from what the device reports: kind, maximum work-group size and
work-item sizes, local memory.  Values measured by a tuner for a specific
device can override these defaults through :func:`override` (a dict per
parameter family), so tuning data is data, not code.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ._device import device_info

_overrides: dict = {}


def override(family: str, params: dict | None) -> None:
    """Use ``params`` for ``family`` from now on (``None`` restores the defaults)."""
    if params is None:
        _overrides.pop(family, None)
    else:
        _overrides[family] = dict(params)
    _cached.cache_clear()


def _pow2_at_most(x: int) -> int:
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


def _fits_wg(info, wg_x: int, wg_y: int) -> bool:
    sizes = info.max_work_item_sizes
    return (wg_x * wg_y <= info.max_work_group_size and wg_x <= sizes[0]
            and (len(sizes) < 2 or wg_y <= sizes[1]))


def _gemm_defaults(info, itemsize: int) -> dict:
    candidates = ([(64, 64, 16, 4, 4), (32, 32, 16, 2, 2), (16, 16, 8, 2, 2), (8, 8, 8, 1, 1)]
                  if info.kind == "GPU" else
                  [(64, 64, 16, 8, 4), (32, 32, 16, 4, 2), (16, 16, 8, 2, 2), (8, 8, 8, 1, 1)])
    for tm, tn, tk, wm, wn in candidates:
        local_bytes = tk * (tm + tn + 2) * itemsize
        if _fits_wg(info, tn // wn, tm // wm) and local_bytes <= info.local_mem_size // 2:
            return dict(TILE_M=tm, TILE_N=tn, TILE_K=tk, WPT_M=wm, WPT_N=wn)
    return dict(TILE_M=1, TILE_N=1, TILE_K=1, WPT_M=1, WPT_N=1)


@lru_cache(maxsize=None)
def _cached(device_key, family: str, itemsize: int, info) -> tuple:
    if family in _overrides:
        return tuple(sorted(_overrides[family].items()))
    if family == "gemm":
        params = _gemm_defaults(info, itemsize)
    elif family == "wg1d":
        params = dict(WG=_pow2_at_most(min(info.max_work_group_size,
                                           256 if info.kind == "GPU" else 64)))
    elif family == "local2d":
        side = 16 if _fits_wg(info, 16, 16) else (8 if _fits_wg(info, 8, 8) else 1)
        params = dict(X=side, Y=side)
    elif family == "trsm":
        nb = 32
        while nb > 1 and nb * (nb + 1) * itemsize > info.local_mem_size // 2:
            nb //= 2
        params = dict(TRSM_NB=nb)
    elif family == "lu":
        params = dict(NB=128 if info.kind == "GPU" else 64, LEAF_W=16)
    else:
        raise KeyError(family)
    return tuple(sorted(params.items()))


def params(queue, family: str, dtype) -> dict:
    """Parameters of ``family`` ("gemm", "wg1d", "local2d", "trsm", "lu") for this device."""
    info = device_info(queue)
    return dict(_cached(queue.device.int_ptr, family, np.dtype(dtype).itemsize, info))
