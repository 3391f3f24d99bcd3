"""Colours: the phase legend, kernel colours, overlays, light/dark/presentation themes.

The phase table is the one place a new algorithm may want an entry; a phase
or kernel name not listed gets a stable colour from :data:`PALETTE` (the
same name gets the same colour in every run and every session).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#882255", "#44AA99", "#999933", "#AA4499", "#332288")
"""Okabe-Ito colours, then Tol's muted ones: distinguishable with colour-blindness."""

PHASE_COLORS = {
    # LU
    "eliminate": "#0072B2", "pivot": "#56B4E9", "scale": "#009E73", "update": "#E69F00",
    "panel": "#56B4E9", "laswp": "#CC79A7", "trsm": "#009E73", "gemm": "#E69F00",
    # Cholesky, packed Cholesky, AD²Aᵀ
    "sqrt": "#CC79A7", "normalize": "#009E73", "outer_product": "#E69F00", "syrk": "#D55E00",
    "assemble": "#882255",
    # update and downdate: the rotations formed (a row, a panel), then applied
    "compute": "#CC79A7", "apply": "#E69F00",
    # trtri, lauum (trmm, gemm, syrk shared with the rest), log-determinant
    "trti2": "#882255", "lauu2": "#44AA99", "trmm": "#AA4499", "reduce": "#117733",
    "zero": "#BBBBBB", "symmetrize": "#88CCEE",
    # hybrid Cholesky: the diagonal block on the host
    "potf2": "#999933",
    # bookkeeping
    "solve": "#332288", "other": "#999999",
}

OVERLAYS = {
    "active": "#00A651",       # the active submatrix the step touched
    "pivot": "#FFB000",        # the pivot cell
    "multipliers": "#8E24AA",  # the L column(s) computed by the step
    "swap": "#00B8D4",         # rows interchanged by the step
    "twin": "#FF1744",         # the packed view's hovered entry and its twin
    "kernel": "#2962FF",       # the step of the kernel selected in the timeline
    "read": "#6D4C41",         # blocks the step reads besides the one it writes (dotted)
}

NON_FINITE = "#FF00FF"
"""Cells holding Inf or NaN (in a packed view: inside the stored triangle); no colour map
offered here uses it."""

MARKERS = {"swap": OVERLAYS["swap"], "slow": "#9E9E9E", "fail": "#D50000"}
"""Scrub bar ticks: swaps in the upper half, slow kernels (grey, so that they never hide a
swap) in the lower half, a failed pivot across."""

KEEP_COLORS = (*OVERLAYS.values(), *MARKERS.values(), NON_FINITE, "#000000", "#FFFFFF")
"""Colours an exported GIF keeps exactly."""

COLORMAPS = ("CET-D1A", "CET-D1", "CET-D3", "CET-D4", "CET-D9")
"""Diverging colour maps offered for the heat map (zero in the middle)."""


def stable_color(name: str) -> str:
    """A colour that depends only on ``name``."""
    return PALETTE[zlib.crc32(name.encode("utf-8")) % len(PALETTE)]


def phase_color(phase: str) -> str:
    return PHASE_COLORS.get(phase) or stable_color(phase)


def kernel_color(name: str) -> str:
    return stable_color(name)


@dataclass(frozen=True)
class Theme:
    """Colours and sizes of one look."""

    name: str
    background: str
    foreground: str
    nan: str            # cells outside a packed triangle
    unused: str         # the triangle a one-triangle algorithm never reads (RGBA)
    boundary: str       # the L | U staircase
    pen_scale: float = 1.0
    font_scale: float = 1.0


LIGHT = Theme("light", "#FFFFFF", "#202020", "#D8D8D8", "#80808090", "#000000")
DARK = Theme("dark", "#1E1E1E", "#E0E0E0", "#3A3A3A", "#50505090", "#FFFFFF")
PRESENTATION = Theme("presentation", "#000000", "#FFFFFF", "#303030", "#404040A0", "#FFFFFF",
                     pen_scale=2.0, font_scale=1.6)


def pick(name: str, system_dark: bool, presentation: bool) -> Theme:
    """The theme for a setting ("system", "light", "dark") and presentation mode."""
    if presentation:
        return PRESENTATION
    if name == "dark" or (name == "system" and system_dark):
        return DARK
    return LIGHT
