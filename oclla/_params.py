"""Kernel parameters: measured ones where a tuner stored them, else from the device's limits.

Every tunable (tile sizes, vector widths, work-group sizes, block sizes) is
decided here and nowhere else.  For a family of parameters, :func:`params`
returns, in this order of preference:

1. an :func:`override` set by the program (the tuner, tests);
2. parameters measured by ``oclla tune`` on this device (same device name,
   driver and dtype), stored in the user cache directory (:func:`user_file`);
3. parameters shipped with the package for a device of the same name
   (``oclla/data/tuned.json``);
4. defaults derived from what the device reports: kind, maximum work-group
   size and work-item sizes, local memory, native vector width (the widest
   that really compiles; :func:`oclla._device.vector_width`), all narrowed by
   a device-limit profile if one is set (:mod:`oclla._profiles`; stored
   parameters are then not used).  Derived parameters are not trusted
   blindly: before first use, the family's self-check (:mod:`oclla._selfcheck`:
   build its kernels, run a tiny case, compare with numpy) runs with them; if
   it fails, the next rung of the family's :func:`ladder` is tried (safer
   limits, down to a floor any device runs), with one ``RuntimeWarning``.
   Verdicts are remembered per device, driver, profile and dtype
   (:mod:`oclla._checked`); only when every rung fails does
   :class:`oclla.DeviceError` carry the last failure's build log.

Stored parameters are validated against the device's limits (:func:`check`)
before use, so a file written for another device never produces a kernel
that cannot launch.

Families and their keys
-----------------------
``gemm``   ``KERNEL="tiled"``: TILE_M, TILE_N, TILE_K, WPT_M, WPT_N, VEC (widest
           global load); ``KERNEL="direct"``: RM, VW, NV, LX (see kernels_cl/gemm.cl)
``gemm_thin`` the GEMM shape for products of inner dimension k <= MAX_K (the rank-k
           updates of the blocked LU's leaves: a whole C streamed for little
           arithmetic, so more, smaller tiles): a ``gemm`` set and MAX_K (0: never)
``wg1d``   WG: work-group size of one-dimensional kernels
``local2d`` X, Y: work-group shape of simple two-dimensional kernels
``trsm``   TRSM_NB: largest triangular diagonal block handled by one kernel;
           INVERSE: 1 to invert the diagonal blocks and apply them by GEMM, 0 to
           solve each by substitution; REGISTER: 1 to keep the substitution's
           right-hand side in registers (TRSM_NB <= 64), 0 in a private array
``laswp``  VW: adjacent columns per work-item; WG: work-group size; CHUNK: interchanges
           applied per round of loads (rows held in registers)
``lu``     NB: panel width; LEAF_W: widest panel leaf (1, 4, 8 or 16); PANEL_WG: work-group
           size of the leaf; LEAF_UNR: rows a leaf work-item loads before it stores;
           REG_SLOTS: registers per work-item of the register leaf (0: no register
           leaves), which holds m x LEAF_W <= REG_SLOTS * PANEL_WG entries of a panel,
           whole rows per work-item; FLAT_N: the trailing matrix is factored as one
           panel once its order is at most FLAT_N and its rows fit the register
           leaves (a rank-LEAF_W GEMM on all of it after each leaf, no TRSM or
           interchange launches; 0: never); LEAF_SCAN: the
           register leaf's pivot search folds the candidates to LEAF_SCAN² (if more),
           then to LEAF_SCAN entries, which every item scans; LEAF_WG: the fewest
           work-items of a register leaf (0: PANEL_WG; a leaf of m rows takes the
           fewest from LEAF_WG up to PANEL_WG that hold them); LEAF_STAGE: the most
           rows a register leaf moves through local memory at once (0: its items);
           FLAT_AHEAD: 1 to launch each leaf of the last panel of register leaves
           with the previous leaf's update (the leaf's work-group updates its own
           columns as it loads them, the launch's other work-groups the rest);
           PANEL: how a panel too tall for the register leaves is factored: "leaf"
           (one-work-group leaves, getf2_leaf, recursively halved down to LEAF_W
           columns), "columns" (one multi-work-group launch per column: the
           per-pivot kernels of kernels_cl/lu_inplace.cl with RB = PANEL_RB and WY =
           PANEL_WY) or "grid" (the whole panel in one launch by the work-groups
           that run at once, a barrier across them per column: it relies on every
           launched work-group making progress, which OpenCL does not promise, so
           only a tuned entry measured on the device chooses it; kernels_cl/lu_grid.cl,
           GRID_PER_CU work-groups of GRID_WX x GRID_WY items per compute unit
           launched, each holding up to GRID_RPI rows per item in registers);
           PANEL_SPLIT: with "columns" or "grid", recurse (?getrf2) down to column
           blocks this wide (0: none);
           SMALL_N: below this order the blocked method factors the whole matrix with
           the leaf kernel alone (fewest launches); LOOKAHEAD: 1 to factor the next
           panel on a second queue while the trailing update runs
``chol``   NB: block column width of the blocked Cholesky; LEAF: largest diagonal
           block factored by one work-group in its registers (larger ones are split
           recursively into TRSM and SYRK); WG: that work-group's size (at least
           LEAF²/64); TRSM_INVERSE: 1 to solve the blocked Cholesky's panels by
           multiplication with inverted diagonal blocks (from the leaf kernel itself
           where NB <= LEAF, else the ``trsm`` INVERSE route), 0 by substitution;
           RFP_TRSM_INVERSE: the same for the packed (RFP) Cholesky's one large solve;
           SMALL_N: up to this order the block width is LEAF and every panel is
           solved with its leaf's inverse (fewest launches); ROW_LEAF: 1 to factor
           the leaves with LEAF work-items, one per row and one short barrier per
           column (potf2_rows, where LEAF is a multiple of 8 up to 64), 0 with WG
           items (potf2_block); WG then sizes only the panel solve ``apply_inverse``
           (min(LEAF, 4·WG/LEAF) rows of the panel per work-group);
           FUSE_LEAF: 1 to factor each next leaf inside the trailing update's launch
           (syrk_leaf.cl: the work-group of the update's first tile, one launch per
           block column fewer) where row leaves are used and the ``gemm`` tiles
           cover a leaf (``chol_fused_leaf``); only tuned entries turn it on (a
           large kernel: PoCL 3.0 spends minutes compiling its upper form)
``pivot``  VW, NV, WX, WY, RB: per-pivot kernel shape (each work-item updates NV
           vectors of VW adjacent columns; a work-group is WX x WY items and owns
           WX*VW*NV columns of RB rows); UNR: rows a work-item loads before it
           stores (the last work-group of each launch finishes the next column)
``crout``  the left-looking per-pivot LU (kernels_cl/lu_crout.cl): WG: work-group size;
           row part: RJ items along a block's columns (WG/RJ share a column), MB rows
           of U per chunk; column part: CL items per row, RR rows per sub-group of CL
           items, KC columns of L per chunk; UNROLL: loads in flight per item
``window`` the per-pivot LU with delayed updates (kernels_cl/lu_window.cl): W: pivots
           per window (one rank-W GEMM between windows); WG: work-group size (rows of
           the column part, columns of the row part per work-group)
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import warnings
from functools import lru_cache
from importlib import resources

import numpy as np
import pyopencl as cl

from . import _checked, _trace_hooks
from ._device import DeviceError, device_info, get_queue, vector_width, vectors_build

FAMILIES = ("gemm", "gemm_thin", "wg1d", "local2d", "trsm", "laswp", "lu", "chol", "pivot",
            "crout", "window")
DATA_VERSION = 1
#: The blocked LU's panel strategies (``lu`` PANEL; :class:`oclla.lu_blocked.Panels`).
PANELS = ("leaf", "columns", "grid")
_overrides: dict = {}


def override(family: str, params: dict | None) -> None:
    """Use ``params`` for ``family`` from now on (``None`` restores the normal choice).

    Keys not given keep their device defaults (a gemm set must be complete).
    """
    if family not in FAMILIES:
        raise KeyError(family)
    if params is None:
        _overrides.pop(family, None)
    else:
        _overrides[family] = dict(params)
    _forget()


def reload() -> None:
    """Forget cached choices (after ``oclla tune`` wrote a new file, or the device-limit
    profile changed)."""
    _forget()
    _stored_entries.cache_clear()
    _checked.forget()


def _forget() -> None:
    _cached.cache_clear()
    _by_call.clear()


# ---- device-limit defaults -------------------------------------------------------------

def _pow2_at_most(x: int) -> int:
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


def _fits_wg(info, wg_x: int, wg_y: int = 1) -> bool:
    sizes = info.max_work_item_sizes
    return (wg_x * wg_y <= info.max_work_group_size and wg_x <= sizes[0]
            and (len(sizes) < 2 or wg_y <= sizes[1]))


def _native_width(queue, info, itemsize: int) -> int:
    """The widest native vector the device reports (``info``, which a profile or a
    safer rung may narrow) and really compiles (:func:`oclla._device.vector_width`)."""
    reported = info.native_width_double if itemsize == 8 else info.native_width_float
    width = _pow2_at_most(max(1, min(16, reported)))
    return 1 if width == 1 else min(width, vector_width(queue, itemsize))


def _gemm_defaults(queue, info, itemsize: int) -> dict:
    if info.kind != "GPU":
        vw = _native_width(queue, info, itemsize)
        # 2 vectors x RM rows of accumulators: 16 registers with 512-bit vectors
        # (32 architectural), 8 with narrower ones (16 architectural).
        rm = 8 if vw * itemsize >= 64 else 4
        return dict(KERNEL="direct", RM=rm, VW=vw, NV=2,
                    LX=_pow2_at_most(min(4, info.max_work_group_size)))
    # 64 x 64 tiles of 4 x 4 per item first: 16 accumulators per item suit GPUs with
    # small register files (128 x 128 of 8 x 8 is faster on an H100, whose entry says so,
    # and took PoCL minutes to compile per variant under a GPU profile).
    for tm, tn, tk, wm, wn in ((64, 64, 16, 4, 4), (32, 32, 16, 2, 2), (16, 16, 8, 2, 2),
                               (8, 8, 8, 1, 1)):
        p = dict(KERNEL="tiled", TILE_M=tm, TILE_N=tn, TILE_K=tk, WPT_M=wm, WPT_N=wn, VEC=4)
        if check("gemm", p, info, itemsize) is None:
            return p
    return dict(KERNEL="tiled", TILE_M=1, TILE_N=1, TILE_K=1, WPT_M=1, WPT_N=1, VEC=1)


def _defaults(queue, info, family: str, itemsize: int) -> dict:
    gpu = info.kind == "GPU"
    if family == "gemm":
        return _gemm_defaults(queue, info, itemsize)
    if family == "gemm_thin":
        thin = dict(KERNEL="tiled", TILE_M=32, TILE_N=32, TILE_K=16, WPT_M=2, WPT_N=2, VEC=4)
        usable = gpu and check("gemm", thin, info, itemsize) is None
        return dict(thin, MAX_K=16) if usable else dict(MAX_K=0)
    if family == "wg1d":
        return dict(WG=_pow2_at_most(min(info.max_work_group_size, 256 if gpu else 64)))
    if family == "local2d":
        side = 16 if _fits_wg(info, 16, 16) else (8 if _fits_wg(info, 8, 8) else 1)
        return dict(X=side, Y=side)
    if family == "trsm":
        nb = 64
        while nb > 1 and (nb * (nb + 1) * itemsize > info.local_mem_size // 2
                          or not _fits_wg(info, nb)):
            nb //= 2
        return dict(TRSM_NB=nb, INVERSE=1, REGISTER=0)
    if family == "laswp":
        if gpu:
            return dict(VW=1, WG=_pow2_at_most(min(info.max_work_group_size, 256)), CHUNK=16)
        return dict(VW=_native_width(queue, info, itemsize),
                    WG=_pow2_at_most(min(4, info.max_work_group_size)), CHUNK=4)
    if family == "lu":
        gx, gy = (32, 8) if gpu else (8, 1)
        while gy > 1 and not _fits_wg(info, gx, gy):
            gy //= 2
        while gx > 1 and not _fits_wg(info, gx, gy):
            gx //= 2
        widest = 8 if gpu else _native_width(queue, info, itemsize)
        leaf_w = next(w for w in (8, 4, 1) if w <= widest and vectors_build(queue, itemsize, w))
        return dict(NB=128 if gpu else 64, LEAF_W=leaf_w, LEAF_UNR=4 if gpu else 1,
                    REG_SLOTS=0, PANEL="columns" if gpu else "leaf",
                    PANEL_WG=_pow2_at_most(min(info.max_work_group_size, 256 if gpu else 8)),
                    PANEL_RB=16 if gpu else 1024, PANEL_WY=8 if gpu else 1,
                    SMALL_N=0 if gpu else 256, LOOKAHEAD=0 if gpu else 1,
                    PANEL_SPLIT=0, GRID_WX=gx, GRID_WY=gy,
                    GRID_PER_CU=1, GRID_RPI=16 if gpu else 4, FLAT_N=0, LEAF_SCAN=32,
                    LEAF_WG=0, LEAF_STAGE=0, FLAT_AHEAD=0)
    if family == "chol":
        p = dict(NB=256 if gpu else 128, LEAF=64, TRSM_INVERSE=1, RFP_TRSM_INVERSE=1,
                 SMALL_N=4096 if gpu else 0, ROW_LEAF=int(gpu), FUSE_LEAF=0,
                 WG=_pow2_at_most(min(info.max_work_group_size, 256 if gpu else 1024)))
        # the leaf must fit half the local memory, and its work-group (LEAF items for
        # row leaves, LEAF²/64 items otherwise)
        while p["LEAF"] > 1 and (p["LEAF"] * (p["LEAF"] + 1) * itemsize
                                 > info.local_mem_size // 2
                                 or check("chol", p, info, itemsize) is not None):
            p["LEAF"] //= 2
        return p
    if family == "pivot":
        if gpu:
            return dict(VW=4, NV=1, WX=32, RB=64, UNR=4,
                        WY=_pow2_at_most(min(8, max(1, info.max_work_group_size // 32))))
        return dict(VW=_native_width(queue, info, itemsize), NV=4,
                    WX=_pow2_at_most(min(2, info.max_work_group_size)), WY=1, RB=1024, UNR=1)
    if family == "crout":
        wg = _pow2_at_most(min(info.max_work_group_size, 256 if gpu else 64))
        lanes = min(32, max(1, wg // 2)) if gpu else max(1, wg // 16)
        p = dict(WG=wg, RJ=lanes if gpu else wg, MB=256 if gpu else 1024, CL=lanes, RR=2,
                 KC=1024 if gpu else 4096, UNROLL=4 if gpu else 1)
        while p["KC"] > 4 and check("crout", p, info, itemsize) is not None:
            p.update(KC=p["KC"] // 2, MB=max(1, p["MB"] // 2))
        return p
    if family == "window":
        wg = _pow2_at_most(min(info.max_work_group_size, 64 if gpu else 8))
        return dict(W=min(32 if gpu else 8, wg), WG=wg)
    raise KeyError(family)


# ---- validation -----------------------------------------------------------------------

def chol_row_leaf(p: dict) -> bool:
    """Whether the ``chol`` parameters ``p`` factor leaves with potf2_rows: ROW_LEAF
    set and LEAF a multiple of 8 up to 64 (the kernel's unrolled steps)."""
    return bool(p["ROW_LEAF"]) and p["LEAF"] % 8 == 0 and p["LEAF"] <= 64


def chol_fused_leaf(p: dict, gemm: dict) -> bool:
    """Whether the blocked Cholesky with ``chol`` parameters ``p`` factors each next leaf
    in the trailing update's launch (syrk_leaf.cl): FUSE_LEAF set, row leaves, and
    ``gemm`` parameters of the tiled kernel whose tiles hold a LEAF x LEAF block and
    whose work-groups have at least LEAF items."""
    return (bool(p["FUSE_LEAF"]) and chol_row_leaf(p) and gemm.get("KERNEL") == "tiled"
            and min(gemm["TILE_M"], gemm["TILE_N"]) >= p["LEAF"]
            and (gemm["TILE_M"] // gemm["WPT_M"]) * (gemm["TILE_N"] // gemm["WPT_N"])
            >= p["LEAF"])


def thin_gemm(p: dict) -> dict | None:
    """The ``gemm`` set inside the ``gemm_thin`` set ``p``, or None where MAX_K is 0."""
    return {key: value for key, value in p.items() if key != "MAX_K"} if p["MAX_K"] else None


def _lv(w: int) -> int:
    return 4 if w % 4 == 0 else (2 if w % 2 == 0 else 1)


def check(family: str, p: dict, info, itemsize: int) -> str | None:
    """None if ``p`` is a usable parameter set of ``family`` on this device, else why not."""
    try:
        if family == "gemm_thin":
            if p["MAX_K"] < 0:
                return "MAX_K must be >= 0"
            shape = thin_gemm(p)
            return None if shape is None else check("gemm", shape, info, itemsize)
        if family == "gemm":
            if p.get("KERNEL") == "direct":
                rm, vw, nv, lx = p["RM"], p["VW"], p["NV"], p["LX"]
                if vw not in (1, 2, 4, 8, 16) or rm < 1 or nv < 1:
                    return "RM, NV >= 1 and VW in 1, 2, 4, 8, 16"
                if not _fits_wg(info, lx):
                    return f"LX={lx} exceeds the work-group limits"
                return None
            if p.get("KERNEL") != "tiled":
                return "KERNEL must be 'tiled' or 'direct'"
            tm, tn, tk, wm, wn, vec = (p[k] for k in ("TILE_M", "TILE_N", "TILE_K",
                                                       "WPT_M", "WPT_N", "VEC"))
            if min(tm, tn, tk, wm, wn) < 1 or tm % wm or tn % wn or vec not in (1, 2, 4):
                return "tiles must be positive multiples of the work per item, VEC in 1, 2, 4"
            wg_x, wg_y = tn // wn, tm // wm
            if not _fits_wg(info, wg_x, wg_y):
                return f"work-group {wg_x} x {wg_y} exceeds the device's limits"
            threads = wg_x * wg_y
            if (tm * tk) % threads or (tn * tk) % threads:
                return "each slab must split evenly over the work-group"
            local = 2 * tk * (tm + _lv(wm) + tn + _lv(wn)) * itemsize
            if local > info.local_mem_size:
                return f"needs {local} bytes of local memory"
            return None
        if family == "wg1d":
            return None if _fits_wg(info, p["WG"]) and p["WG"] & (p["WG"] - 1) == 0 \
                else "WG must be a power of two within the work-group limit"
        if family == "local2d":
            return None if _fits_wg(info, p["X"], p["Y"]) else "work-group too large"
        if family == "trsm":
            nb = p["TRSM_NB"]
            if p["INVERSE"] not in (0, 1) or p["REGISTER"] not in (0, 1):
                return "INVERSE and REGISTER must be 0 or 1"
            if p["REGISTER"] and nb > 64:
                return "REGISTER = 1 needs TRSM_NB <= 64"
            return None if 1 <= nb and nb * (nb + 1) * itemsize <= info.local_mem_size \
                and _fits_wg(info, nb) else "TRSM_NB block does not fit the device"
        if family == "laswp":
            return None if (p["VW"] in (1, 2, 4, 8, 16) and _fits_wg(info, p["WG"])
                            and 1 <= p["CHUNK"] <= 32) \
                else "VW in 1, 2, 4, 8, 16, WG within the work-group limit, 1 <= CHUNK <= 32"
        if family == "lu":
            wg = p["PANEL_WG"]
            # LEAF_W = 2 is left out: PoCL 3.1 miscomputes the float32 leaf with
            # two-wide rows when the work-group has several items.
            if p["PANEL_RB"] < 1 or p["PANEL_WY"] < 1 or p["PANEL_WY"] & (p["PANEL_WY"] - 1):
                return "PANEL_RB >= 1 and PANEL_WY a power of two"
            if p["PANEL_SPLIT"] < 0 or p["LEAF_UNR"] < 1 or not 0 <= p["REG_SLOTS"] <= 64:
                return "PANEL_SPLIT >= 0, LEAF_UNR >= 1 and 0 <= REG_SLOTS <= 64"
            if (p["NB"] < 1 or p["LEAF_W"] not in (1, 4, 8, 16) or p["SMALL_N"] < 0
                    or p["LOOKAHEAD"] not in (0, 1) or p["PANEL"] not in PANELS
                    or p["FLAT_N"] < 0 or p["LEAF_SCAN"] not in (2, 4, 8, 16, 32)
                    or p["FLAT_AHEAD"] not in (0, 1)):
                return ("NB >= 1, LEAF_W in 1, 4, 8, 16, SMALL_N >= 0, FLAT_N >= 0, "
                        f"PANEL one of {PANELS}, LOOKAHEAD and FLAT_AHEAD 0 or 1, "
                        "LEAF_SCAN in 2, 4, 8, 16, 32")
            if any(v < 0 or v & (v - 1) for v in (p["LEAF_WG"], p["LEAF_STAGE"])):
                return "LEAF_WG and LEAF_STAGE 0 or a power of two"
            gx, gy = p["GRID_WX"], p["GRID_WY"]
            if (not 1 <= p["GRID_PER_CU"] <= 8
                    or p["GRID_RPI"] not in (0, 1, 2, 4, 8, 16, 32) or min(gx, gy) < 1
                    or gx & (gx - 1) or gy & (gy - 1) or not _fits_wg(info, gx, gy)):
                return ("1 <= GRID_PER_CU <= 8, GRID_RPI 0 or a power of "
                        "two up to 32, GRID_WX x GRID_WY powers of two within the work-group "
                        "limits")
            return None if _fits_wg(info, wg) and wg & (wg - 1) == 0 \
                else "PANEL_WG must be a power of two within the work-group limit"
        if family == "chol":
            if (p["NB"] < 1 or p["LEAF"] < 1 or p["TRSM_INVERSE"] not in (0, 1)
                    or p["RFP_TRSM_INVERSE"] not in (0, 1) or p["SMALL_N"] < 0):
                return ("NB and LEAF >= 1, SMALL_N >= 0, TRSM_INVERSE and RFP_TRSM_INVERSE "
                        "0 or 1")
            if p["LEAF"] * (p["LEAF"] + 1) * itemsize > info.local_mem_size:
                return f"a LEAF={p['LEAF']} block does not fit in local memory"
            if p["ROW_LEAF"] not in (0, 1) or p["FUSE_LEAF"] not in (0, 1):
                return "ROW_LEAF and FUSE_LEAF 0 or 1"
            rows = chol_row_leaf(p)
            if rows and not _fits_wg(info, p["LEAF"]):
                return "ROW_LEAF needs LEAF work-items in a work-group"
            if not rows and p["LEAF"] * p["LEAF"] > 64 * p["WG"]:
                return "a LEAF x LEAF block needs WG >= LEAF²/64 (64 registers per work-item)"
            return None if _fits_wg(info, p["WG"]) and p["WG"] & (p["WG"] - 1) == 0 \
                else "WG must be a power of two within the work-group limit"
        if family == "pivot":
            vw, nv, wx, wy = p["VW"], p["NV"], p["WX"], p["WY"]
            if vw not in (1, 2, 4, 8, 16) or min(nv, wx, wy, p["RB"], p["UNR"]) < 1:
                return "VW in 1, 2, 4, 8, 16; NV, WX, WY, RB, UNR >= 1"
            if (wx * wy) & (wx * wy - 1):
                return "WX * WY must be a power of two"
            return None if _fits_wg(info, wx, wy) else "work-group too large"
        if family == "crout":
            wg, rj, cl = p["WG"], p["RJ"], p["CL"]
            if any(v < 1 or v & (v - 1) for v in (wg, rj, cl)) or rj > wg or cl > wg \
                    or wg // cl * p["RR"] < 2:
                return "WG, RJ, CL powers of two, RJ <= WG, CL <= WG, WG / CL * RR >= 2"
            if p["MB"] < 1 or p["RR"] < 1 or p["KC"] < 4 or p["KC"] % 4 or p["UNROLL"] < 1:
                return "MB, RR, UNROLL >= 1 and KC a positive multiple of 4"
            rows = wg // cl * p["RR"]                  # kernels_cl/lu_crout.cl, VW <= 4
            local = (max(p["MB"], p["KC"]) + (4 + p["RR"]) * wg + rows) * itemsize \
                + (max(p["MB"], rows) + wg + 1) * 4
            if local > info.local_mem_size:
                return f"needs {local} bytes of local memory"
            return None if _fits_wg(info, wg) else "WG exceeds the work-group limit"
        if family == "window":
            wg, w = p["WG"], p["W"]
            if wg < 1 or wg & (wg - 1) or not _fits_wg(info, wg):
                return "WG must be a power of two within the work-group limit"
            if not 1 <= w <= wg:
                return "W must lie in [1, WG]"
            local = (wg + 2 * w) * itemsize + wg * 4            # kernels_cl/lu_window.cl
            return None if local <= info.local_mem_size else f"needs {local} bytes of local memory"
    except (KeyError, TypeError):
        return f"missing or malformed keys for {family}"
    raise KeyError(family)


# ---- stored (tuned) parameters ----------------------------------------------------------

def user_file() -> str:
    """The user's tuned-parameter file (``oclla tune`` writes it)."""
    env = os.environ.get("OCLLA_TUNED_FILE")
    if env:
        return env
    import platformdirs
    return os.path.join(platformdirs.user_cache_dir("oclla"), "tuned.json")


def read_entries(text: str) -> list:
    """Entries of a tuned-parameter file's text (empty list if unreadable)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    if not isinstance(data, dict) or data.get("version") != DATA_VERSION:
        return []
    return [e for e in data.get("entries", []) if isinstance(e, dict)]


@lru_cache(maxsize=None)
def _stored_entries() -> tuple:
    """(user entries, shipped entries)."""
    user = []
    path = user_file()
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            user = read_entries(f.read())
    shipped = read_entries(resources.files(__package__).joinpath("data", "tuned.json")
                           .read_text(encoding="utf-8"))
    return user, shipped


def stored(info, dtype_name: str) -> dict:
    """The stored parameter families for this device and dtype ({} if none)."""
    user, shipped = _stored_entries()
    for entries, need_driver in ((user, True), (shipped, True), (shipped, False)):
        for e in entries:
            if (e.get("device") == info.name and e.get("dtype") == dtype_name
                    and (not need_driver or e.get("driver") == info.driver_version)):
                return e.get("params", {})
    return {}


def _merge(family: str, base: dict, given: dict) -> dict:
    """``given`` over ``base`` (a gemm set stands alone: its keys depend on its KERNEL)."""
    return dict(given) if family in ("gemm", "gemm_thin") else {**base, **given}


@lru_cache(maxsize=None)
def _cached(queue, family: str, dtype_name: str) -> tuple:
    info = device_info(queue)
    itemsize = np.dtype(dtype_name).itemsize
    chosen = _defaults(queue, info, family, itemsize)
    if family in _overrides:
        return tuple(sorted(_merge(family, chosen, _overrides[family]).items()))
    if os.environ.get("OCLLA_TUNED", "1") != "0" and info.profile is None:
        tuned = stored(info, dtype_name).get(family)
        if tuned:
            candidate = _merge(family, chosen, tuned)
            problem = check(family, candidate, info, itemsize)
            if problem is None:
                return tuple(sorted(candidate.items()))     # measured on this device
            warnings.warn(f"ignoring stored {family} parameters for {info.name}: {problem}",
                          RuntimeWarning, stacklevel=3)
    if not selfcheck[0]:
        return tuple(sorted(chosen.items()))
    return tuple(sorted(_first_working(queue, info, family, dtype_name).items()))


#: ``selfcheck[0]``: whether derived parameters are self-checked before first use
#: (``OCLLA_SELFCHECK=0`` turns it off: the derived set is used as it is, which the
#: tests of the derived sets themselves want, so that no fallback hides a failure).
selfcheck = [os.environ.get("OCLLA_SELFCHECK", "1") != "0"]


# ---- fallback: derived parameters are tried before use -----------------------------------

#: Limits of the safer rungs of every family's ladder: the device's own (its
#: kind kept), narrowed to the ``minimal`` profile, then to a floor that any
#: OpenCL device runs (tiny work-groups, scalar code, little local memory).
SAFER_LIMITS = (
    dict(max_work_group_size=64, local_mem_size=16 * 1024, native_width_float=1,
         native_width_double=1),
    dict(max_work_group_size=4, local_mem_size=8 * 1024, native_width_float=1,
         native_width_double=1, kind="CPU"),
)


def ladder(queue, family: str, dtype) -> list:
    """The parameter sets of ``family`` in the order they are tried on this device: those
    derived from its limits, then those derived from :data:`SAFER_LIMITS` (each
    valid for the device, no repeats)."""
    info = device_info(queue)
    itemsize = np.dtype(dtype).itemsize
    rungs = []
    for limits in ({},) + SAFER_LIMITS:
        narrowed = dict(info.as_dict(), **{
            key: min(getattr(info, key), value) if isinstance(value, int) else value
            for key, value in limits.items()})
        narrowed["max_work_item_sizes"] = tuple(
            min(s, narrowed["max_work_group_size"]) for s in info.max_work_item_sizes)
        p = _defaults(queue, type(info)(**narrowed), family, itemsize)
        if p not in rungs and check(family, p, info, itemsize) is None:
            rungs.append(p)
    return rungs


class UnusableFamily(DeviceError):
    """No parameter set of a family passes its self-check on this device."""


_verify_lock = threading.RLock()
_trial = threading.local()      # .sets: {(queue, family, dtype name): parameters}
_trials_running = [0]           # how many trials are open in any thread (fast path: 0)


@contextlib.contextmanager
def trial(queue, family: str, dtype, p: dict):
    """Within the block, :func:`params` of ``family`` returns ``p`` in this thread, for
    every queue on ``queue``'s device (host loops use twin queues)."""
    sets = getattr(_trial, "sets", None)
    if sets is None:
        sets = _trial.sets = {}
    key = (queue.device, family, np.dtype(dtype).name)
    before = sets.get(key)
    sets[key] = dict(p)
    _trials_running[0] += 1
    try:
        yield
    finally:
        _trials_running[0] -= 1
        if before is None:
            del sets[key]
        else:
            sets[key] = before


def try_parameters(queue, family: str, dtype, p: dict) -> str | None:
    """Run ``family``'s self-check (:mod:`oclla._selfcheck`) with ``p``: None if it builds,
    runs and computes correctly, else what went wrong.  Nothing is recorded."""
    from ._selfcheck import CheckFailed, run_check
    with trial(queue, family, dtype, p), _trace_hooks.suspended():
        try:
            run_check(queue, family, np.dtype(dtype))
        except CheckFailed as exc:
            return str(exc)
        except UnusableFamily:
            raise                       # another family the check needs: not this one's fault
        except (DeviceError, cl.Error, np.linalg.LinAlgError, ArithmeticError) as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


def _first_working(queue, info, family: str, dtype_name: str) -> dict:
    """The first rung of :func:`ladder` whose self-check passes on this device, tried once
    per device, driver, profile and dtype (:mod:`oclla._checked` remembers verdicts)."""
    with _verify_lock:
        queue = get_queue(queue.device)        # the checks call the public API
        rungs = ladder(queue, family, dtype_name)
        if not rungs:
            raise UnusableFamily(f"no {family} parameter set fits the limits of {info.name}: "
                              f"{info.describe()}")
        failures = []
        for p in rungs:
            key = _checked.key(info, dtype_name, family, p)
            verdict = _checked.get(key)
            if verdict is None:
                problem = try_parameters(queue, family, dtype_name, p)
                verdict = (problem is None, problem or "")
                _checked.put(key, *verdict)
                fresh = True
            else:
                fresh = False
            if verdict[0]:
                if failures and fresh:
                    warnings.warn(_fallback_message(info, family, rungs[0], p, failures[0]),
                                  RuntimeWarning, stacklevel=2)
                return p
            failures.append(verdict[1])
    raise UnusableFamily(f"every {family} parameter set failed on {info.name} "
                      f"(driver {info.driver_version}); the last, {rungs[-1]}:\n"
                      f"{failures[-1]}")


def changed_values(first: dict, used: dict) -> str:
    """The values of ``used`` that differ from ``first``, as "KEY old -> new, ..."."""
    return ", ".join(f"{k} {first.get(k)} -> {v}" for k, v in sorted(used.items())
                     if first.get(k) != v)


def _fallback_message(info, family: str, first: dict, used: dict, why: str) -> str:
    changed = changed_values(first, used)
    lines = [line.strip() for line in why.strip().splitlines() if line.strip()] or ["unknown"]
    reason = next((line for line in lines[1:] if "error" in line.lower()), lines[0])
    return (f"oclla: on {info.name} (driver {info.driver_version}) the {family} kernels "
            f"failed with the parameters derived from the device's limits ({reason}); "
            f"using safer ones instead ({changed}): correct, possibly slower. "
            f"Remembered in {_checked.path()}")


def is_stored(queue, family: str, dtype) -> bool:
    """Whether ``family``'s parameters on this device come from an override or a stored
    (tuned) entry rather than from the device's limits."""
    info = device_info(queue)
    if family in _overrides:
        return True
    return (os.environ.get("OCLLA_TUNED", "1") != "0" and info.profile is None
            and bool(stored(info, np.dtype(dtype).name).get(family))
            and [params(queue, family, dtype)] != ladder(queue, family, dtype)[:1])


_by_call: dict = {}        # (queue, family, dtype as passed) -> the chosen items


def params(queue, family: str, dtype) -> dict:
    """Parameters of ``family`` (see the module docstring) for this queue's device and dtype.

    A fresh dict each call; looked up by the call's own arguments first
    (host loops ask thousands of times per factorization).
    """
    if _trials_running[0]:
        tried = getattr(_trial, "sets", {}).get((queue.device, family, np.dtype(dtype).name))
        if tried is not None:
            return dict(tried)
    key = (queue, family, dtype)
    chosen = _by_call.get(key)
    if chosen is None:
        if family not in FAMILIES:
            raise KeyError(family)
        chosen = _by_call[key] = _cached(queue, family, np.dtype(dtype).name)
    return dict(chosen)
