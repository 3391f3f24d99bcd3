"""Kernel parameters ("knobs"), each declared once.

A :class:`Knob` says what one parameter means, how its default follows from
the device (:class:`Device`: kind, work-group and local-memory limits,
itemsize, native vector width), which values it may take (:class:`Allowed`),
which kernel or host driver reads it, and which values the tuner tries per
device kind.  A :class:`Family` groups the knobs that one set of kernels
reads, with what no single knob can say: a ``settle`` step that shrinks a
derived set until it fits the device, the constraints across knobs (local
memory, work-group shape) and, for the tuner's grid searches, which
combinations are worth measuring.

From these declarations come :func:`derive` (the defaults that
:mod:`oclla._params` uses), :func:`check` (its validation of stored sets),
:func:`tuned_values` and :func:`space` (the search of :mod:`oclla.tune`) and
:mod:`oclla._knobs_doc` writes the reference ``docs/parameters.md`` from them::

    python -m oclla._knobs_doc > docs/parameters.md
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable


# ---- device context --------------------------------------------------------------------

def pow2_at_most(x: int) -> int:
    """The largest power of two <= ``x`` (1 if ``x`` < 2)."""
    p = 1
    while p * 2 <= x:
        p *= 2
    return p


def pow2_at_least(x: int) -> int:
    """The smallest power of two >= ``x`` (1 if ``x`` < 2)."""
    p = 1
    while p < x:
        p *= 2
    return p


def fits_wg(info, wg_x: int, wg_y: int = 1) -> bool:
    """Whether a ``wg_x`` x ``wg_y`` work-group fits the device's work-group limits."""
    sizes = info.max_work_item_sizes
    return (wg_x * wg_y <= info.max_work_group_size and wg_x <= sizes[0]
            and (len(sizes) < 2 or wg_y <= sizes[1]))


#: Bytes a runtime may add to a kernel's local memory beyond its ``__local`` arrays: the
#: fit tests (:meth:`Device.fits_local`) keep this much free.  NVIDIA's OpenCL (driver
#: 580, H200) reports one real more per kernel or array than the arrays hold: 4 to 16
#: bytes on tests/test_knobs.py's kernels.
LOCAL_RESERVE = 64


class Device:
    """What a default rule or a constraint reads about the device.

    ``info``: an :class:`oclla.DeviceInfo` (possibly narrowed by a profile or a
    safer rung); ``itemsize``: bytes per real; ``native()``: the widest native
    vector that compiles; ``builds(w)``: whether code with ``w``-wide vectors
    builds (both asked only when a rule needs them: they may compile).
    """

    def __init__(self, info, itemsize: int, native: Callable[[], int] | None = None,
                 builds: Callable[[int], bool] | None = None):
        self.info, self.itemsize = info, itemsize
        self.gpu = info.kind == "GPU"
        self._native, self._builds = native, builds

    def native(self) -> int:
        return self._native()

    def builds(self, width: int) -> bool:
        return self._builds(width)

    def fits(self, wg_x: int, wg_y: int = 1) -> bool:
        return fits_wg(self.info, wg_x, wg_y)

    def fits_local(self, nbytes: int) -> bool:
        """Whether a kernel whose ``__local`` arrays take ``nbytes`` fits the device's
        local memory, :data:`LOCAL_RESERVE` spared."""
        return nbytes + LOCAL_RESERVE <= self.info.local_mem_size

    def group(self, gpu_cap: int, cpu_cap: int) -> int:
        """The largest power-of-two work-group within the limit and the kind's cap."""
        return pow2_at_most(min(self.info.max_work_group_size,
                                gpu_cap if self.gpu else cpu_cap))


# ---- allowed values ---------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral)


@dataclass(frozen=True)
class Allowed:
    """The values one knob may take, in words (``text``) and as a test (``test``)."""

    text: str
    test: Callable[[object], bool]

    def __call__(self, value) -> bool:
        return bool(self.test(value))


def choice(*values) -> Allowed:
    words = [repr(v) if isinstance(v, str) else str(v) for v in values]
    return Allowed(f"one of {', '.join(words)}", lambda v: v in values)


def ints(lo: int | None = None, hi: int | None = None, multiple: int = 1) -> Allowed:
    if lo is None:
        text = "an integer (the family's constraints bound it)"
    elif hi is None:
        text = f"an integer >= {lo}"
    else:
        text = f"an integer in [{lo}, {hi}]"
    if multiple > 1:
        text = f"a multiple of {multiple} >= {lo}"
    return Allowed(text, lambda v: _is_int(v) and (lo is None or v >= lo)
                   and (hi is None or v <= hi) and v % multiple == 0)


def pow2(zero: bool = False) -> Allowed:
    return Allowed("0 or a power of two" if zero else "a power of two",
                   lambda v: _is_int(v) and v >= (0 if zero else 1) and v & (v - 1) == 0)


BOOL = choice(0, 1)
WIDTHS = choice(1, 2, 4, 8, 16)


# ---- declarations -----------------------------------------------------------------------

Rule = Callable[[Device, dict], object]


@dataclass(frozen=True)
class Knob:
    """One kernel parameter.

    ``default(device, p)`` derives it (``p``: the family's knobs derived so
    far, in declaration order); ``allowed`` validates it; ``read_by``: the
    kernel sources (where it is a ``-D`` define) and host modules (where the
    driver reads ``p["NAME"]``) that use it; ``tuned``: per device kind
    ("GPU", "CPU") the values the tuner tries — a tuple, a function of the
    native vector width, or :class:`Tied` to other knobs; ``when(p)``: whether
    the knob belongs to a set ``p`` at all (the gemm kernels' own keys).
    """

    name: str
    doc: str
    default: Rule
    allowed: Allowed
    read_by: tuple
    tuned: dict | None = None
    when: Callable[[dict], bool] | None = None

    def applies(self, p: dict) -> bool:
        return self.when is None or bool(self.when(p))


@dataclass(frozen=True)
class Tied:
    """A searched value that follows the other knobs of the candidate: ``rule(p)``."""

    rule: Callable[[dict], object]
    text: str


@dataclass(frozen=True)
class Family:
    """The knobs one set of kernels reads, with the rules that span several knobs.

    ``settle(device, p)``: shrinks the derived set ``p`` until it fits (returns
    the set); ``constraint(p, device)``: None if the valid knobs fit together
    and the device, else why not; ``keep(p, kind)``: which combinations of
    the tuner's grid (:func:`space`) are measured.
    """

    name: str
    doc: str
    knobs: tuple
    settle: Callable[[Device, dict], dict] | None = None
    constraint: Callable[[dict, Device], str | None] | None = None
    keep: Callable[[dict, str], bool] | None = None

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)


def _fixed(value) -> Rule:
    return lambda d, p: value


def _by_kind(gpu, cpu) -> Rule:
    return lambda d, p: gpu if d.gpu else cpu


def _native(d: Device, p: dict) -> int:
    return d.native()


def native_and_half(native: int) -> tuple:
    """Tuned vector widths: the native width and half of it."""
    return tuple(sorted({max(1, native // 2), native}))


def _both(values: tuple) -> dict:
    return {"GPU": values, "CPU": values}


# ---- gemm and gemm_thin ----

def _lv(w: int, widest: int) -> int:
    """Width of the local-memory reads of a register block of ``w`` (gemm_tile.h's LVM,
    LVN): the widest of ``widest`` (VEC_LOCAL), 2 and 1 that divides ``w``."""
    return next(v for v in (4, 2, 1) if v <= widest and w % v == 0)


#: Values of the tiled gemm's knobs added after sets were first stored, as those sets
#: meant them (contiguous register blocks read 4 wide, the transposes arguments): a
#: stored, overridden or given set without them takes these (:func:`complete_gemm`).
GEMM_LATER = {"VEC_LOCAL": 4, "INTERLEAVE": 0, "PER_SHAPE": 0, "TN_COPY_K": 0}


def complete_gemm(p: dict) -> dict:
    """A tiled gemm set ``p`` with the knobs of :data:`GEMM_LATER` it lacks added (the
    set itself where it has them all or is not tiled)."""
    if p.get("KERNEL") != "tiled" or all(key in p for key in GEMM_LATER):
        return p
    return {**GEMM_LATER, **p}


def _gemm_constraint(p: dict, d: Device) -> str | None:
    """direct: LX within the work-group limit.  tiled: TILE_M, TILE_N multiples of
    WPT_M, WPT_N; a (TILE_N/WPT_N) x (TILE_M/WPT_M) work-group within the limits,
    whose items share each TILE_M x TILE_K and TILE_N x TILE_K slab evenly; two
    slabs of each operand (double buffering, rows padded by the load vector) in
    local memory: 2·TILE_K·(TILE_M + lv(WPT_M) + TILE_N + lv(WPT_N)) reals,
    lv(w) = the widest of VEC_LOCAL, 2 and 1 that divides w (kernels_cl/gemm_tile.h)."""
    if p["KERNEL"] == "direct":
        return None if d.fits(p["LX"]) else f"LX={p['LX']} exceeds the work-group limits"
    tm, tn, tk, wm, wn = (p[k] for k in ("TILE_M", "TILE_N", "TILE_K", "WPT_M", "WPT_N"))
    if tm % wm or tn % wn:
        return "tiles must be multiples of the work per item"
    wg_x, wg_y = tn // wn, tm // wm
    if not d.fits(wg_x, wg_y):
        return f"work-group {wg_x} x {wg_y} exceeds the device's limits"
    threads = wg_x * wg_y
    if (tm * tk) % threads or (tn * tk) % threads:
        return "each slab must split evenly over the work-group"
    local = gemm_local_bytes(p, d.itemsize)
    return None if d.fits_local(local) else f"needs {local} bytes of local memory"


def gemm_local_bytes(p: dict, itemsize: int) -> int:
    """Local memory of the tiled gemm kernel with tile parameters ``p``."""
    widest = p.get("VEC_LOCAL", GEMM_LATER["VEC_LOCAL"])
    return 2 * p["TILE_K"] * (p["TILE_M"] + _lv(p["WPT_M"], widest) + p["TILE_N"]
                              + _lv(p["WPT_N"], widest)) * itemsize


#: The tiled gemm's shapes tried in turn (TILE_M, TILE_N, TILE_K, WPT_M, WPT_N): 64 x 64
#: tiles of 4 x 4 per item first (16 accumulators per item suit GPUs with small register
#: files; 128 x 128 of 8 x 8 is faster on an H100, whose tuned entry says so).
GEMM_SHAPES = ((64, 64, 16, 4, 4), (32, 32, 16, 2, 2), (16, 16, 8, 2, 2), (8, 8, 8, 1, 1))


def _gemm_settle(d: Device, p: dict) -> dict:
    """A tiled set: the first of :data:`GEMM_SHAPES` (with VEC = 4) that fits, else
    1 x 1 tiles of scalars."""
    if p["KERNEL"] != "tiled":
        return p
    for tm, tn, tk, wm, wn in GEMM_SHAPES:
        shape = dict(KERNEL="tiled", TILE_M=tm, TILE_N=tn, TILE_K=tk, WPT_M=wm, WPT_N=wn,
                     VEC=4, **GEMM_LATER)
        if check("gemm", shape, d) is None:
            return shape
    return dict(KERNEL="tiled", TILE_M=1, TILE_N=1, TILE_K=1, WPT_M=1, WPT_N=1, VEC=1,
                **GEMM_LATER)


def _gemm_keep(p: dict, kind: str) -> bool:
    if kind == "GPU":        # contiguous blocks only as they were first read (4 wide)
        return (p["WPT_M"] * p["WPT_N"] >= 16
                and not (p["TILE_K"] == 32 and p["TILE_M"] * p["TILE_N"] > 8192)
                and (p["INTERLEAVE"] or p["VEC_LOCAL"] == 4))
    return p["RM"] * p["NV"] * p["VW"] <= 8 * 2 * 16      # <= 16 512-bit accumulators


def _cpu_rm(d: Device, p: dict) -> int:
    # 2 vectors x RM rows of accumulators: 16 registers with 512-bit vectors (32
    # architectural), 12 with narrower ones (16 architectural: with the two vectors of
    # B and the broadcast entry of A, 15 in use; 6 rows measured 1.3-1.4x 4 rows on
    # PoCL with AVX2, both dtypes).
    return 8 if d.native() * d.itemsize >= 64 else 6


def _gemm_knobs(thin: bool) -> tuple:
    """The gemm kernels' knobs; ``thin``: those of the ``gemm_thin`` set (present
    when MAX_K > 0, smaller tiles)."""
    blas = ("oclla/blas.py",)
    on = (lambda p: bool(p.get("MAX_K"))) if thin else (lambda p: True)
    direct = lambda p: on(p) and p.get("KERNEL") == "direct"        # noqa: E731
    tiled = lambda p: on(p) and p.get("KERNEL") == "tiled"          # noqa: E731

    def tuned(values: dict) -> dict | None:
        """The gemm searches its own shapes; the thin set only its tile sides."""
        return None if thin else values
    tile = (32, 32, 16, 2, 2) if thin else (64, 64, 16, 4, 4)
    sides = _both((16, 32, 64)) if thin else {"GPU": (64, 128)}
    return (
        Knob("KERNEL", '"tiled" (work-groups share tiles of A and B in local memory) or '
             '"direct" (each work-item streams rows of A and B from global memory, for CPUs)',
             _fixed("tiled") if thin else _by_kind("tiled", "direct"),
             choice("tiled", "direct"), blas, tuned({"GPU": ("tiled",), "CPU": ("direct",)}),
             on if thin else None),
        Knob("RM", "direct: rows of C per work-item", _cpu_rm, ints(1), blas,
             tuned({"CPU": (4, 6, 8)}), direct),
        Knob("VW", "direct: vector width along the rows of C", _native, WIDTHS,
             blas + ("kernels_cl/gemm.cl",), tuned({"CPU": native_and_half}), direct),
        Knob("NV", "direct: vectors of VW columns per work-item (a row of C is VW·NV "
             "columns)", _fixed(2), ints(1), blas, tuned({"CPU": (1, 2, 3, 4)}),
             direct),
        Knob("LX", "direct: work-items per work-group",
             lambda d, p: pow2_at_most(min(4, d.info.max_work_group_size)), ints(1), blas,
             tuned({"CPU": (1, 4, 16)}), direct),
        Knob("TILE_M", "tiled: rows of the C tile of a work-group", _fixed(tile[0]), ints(1),
             blas + ("kernels_cl/gemm_tile.h",), sides, tiled),
        Knob("TILE_N", "tiled: columns of the C tile of a work-group", _fixed(tile[1]),
             ints(1), blas + ("kernels_cl/gemm_tile.h",), sides, tiled),
        Knob("TILE_K", "tiled: depth of the A and B slabs loaded per step", _fixed(tile[2]),
             ints(1), blas + ("kernels_cl/gemm_tile.h",),
             tuned({"GPU": (8, 16, 32)}), tiled),
        Knob("WPT_M", "tiled: rows of C per work-item", _fixed(tile[3]), ints(1),
             blas + ("kernels_cl/gemm_tile.h",), tuned({"GPU": (4, 8)}), tiled),
        Knob("WPT_N", "tiled: columns of C per work-item", _fixed(tile[4]), ints(1),
             blas + ("kernels_cl/gemm_tile.h",), tuned({"GPU": (4, 8)}), tiled),
        Knob("VEC", "tiled: widest vector of a global load (narrowed per operand to what "
             "its alignment allows)", _fixed(4), choice(1, 2, 4), blas,
             tuned({"GPU": (4,)}), tiled),
        Knob("VEC_LOCAL", "tiled: widest vector of a work-item's local-memory reads of its "
             "rows of A and columns of B (narrowed to what divides WPT_M, WPT_N; 16 bytes, "
             "2 in float64, is the widest one access of most GPUs' local memory serves)",
             _fixed(GEMM_LATER["VEC_LOCAL"]), choice(1, 2, 4),
             blas + ("kernels_cl/gemm_tile.h",), tuned({"GPU": (2, 4)}), tiled),
        Knob("INTERLEAVE", "tiled: 0: a work-item's WPT_M rows and WPT_N columns of C are "
             "contiguous; 1: they are vectors of the local-read width spread over the tile, "
             "so that neighbouring work-items read neighbouring vectors of local memory "
             "(no bank conflicts)", _fixed(GEMM_LATER["INTERLEAVE"]), BOOL,
             blas + ("kernels_cl/gemm_tile.h",), tuned({"GPU": (0, 1)}), tiled),
        Knob("PER_SHAPE", "tiled: 0: the transposes are kernel arguments (one program "
             "serves AB, AᵀB, ABᵀ and AᵀBᵀ); 1: build options (a program per product shape "
             "in use, each compiled for its shape alone: NVIDIA's compiler then keeps the "
             "float64 128 x 64 tiles in 128 registers instead of 164, two work-groups per "
             "multiprocessor instead of one: H200, dgemm 8192 64.5 -> 52.7 ms; float32's "
             "AᵀB 10 % slower). oclla tune times AB, AᵀB and ABᵀ together both ways for "
             "the tile set it found", _fixed(GEMM_LATER["PER_SHAPE"]), BOOL,
             blas + ("kernels_cl/gemm.cl",), None, tiled),
        Knob("TN_COPY_K", "tiled: a SYRK AᵀA (A k x n: the upper Cholesky's trailing "
             "updates, the packed one's T2 update) copies A transposed into an n x k "
             "scratch matrix A', k up to this, and takes the product as A'·A, the blocked "
             "LU's product shape (one program between them where PER_SHAPE builds one per "
             "shape; A copied as it is too where its rows are not aligned for the vector "
             "loads, as an RFP array's); a deeper one in slabs of this many rows of A (0: "
             "never). H200 float64, n = 16256, k = 128: AᵀA 3.13 ms, through the copy 2.09 "
             "ms; n = k = 8192 in slabs of 512: 31.1 -> 29.0 ms; float32 level. oclla tune "
             "times such a SYRK of rank 128 both ways for the tile set it found (0 or 256)",
             _fixed(GEMM_LATER["TN_COPY_K"]), ints(0), blas, None, tiled),
    )


def _thin_settle(d: Device, p: dict) -> dict:
    """GPUs only: the thin shape where it fits the device, else MAX_K = 0."""
    if p["MAX_K"] and check("gemm", thin_gemm(p), d) is not None:
        return dict(MAX_K=0)
    return p


def thin_gemm(p: dict) -> dict | None:
    """The ``gemm`` set inside the ``gemm_thin`` set ``p``, or None where MAX_K is 0."""
    return {key: value for key, value in p.items() if key != "MAX_K"} if p["MAX_K"] else None


def _thin_constraint(p: dict, d: Device) -> str | None:
    """Where MAX_K > 0, the gemm set's constraints."""
    return None if not p["MAX_K"] else _gemm_constraint(thin_gemm(p), d)


# ---- trsm ----

def _trsm_nb(d: Device, p: dict) -> int:
    nb = 64
    while nb > 1 and (nb * (nb + 1) * d.itemsize > d.info.local_mem_size // 2
                      or not d.fits(nb)):
        nb //= 2
    return nb


#: The trsm FEW_ROUTE's values, in the order of trsm.cl's FEW (the one few-column
#: kernel a program holds: FEW_ROWS, FEW_COLUMNS, FEW_CHAIN)
FEW_ROUTES = ("rows", "columns", "chain")

#: trsm_rows, trsm_chain: at most this many columns of B per work-group (TRSM_NB x 16 items, 1024
#: for a GPU's TRSM_NB of 64); more right-hand sides take more work-groups.
ROWS_WIDTH_CAP = 16


def rows_width(p: dict, info) -> int:
    """Columns of B per work-group of trsm_rows and trsm_chain for the trsm parameters
    ``p`` on a device (``info``): FEW_RHS's next power of two, at most
    :data:`ROWS_WIDTH_CAP`, halved until TRSM_NB x that many work-items fit a work-group."""
    width = min(pow2_at_least(max(p["FEW_RHS"], 1)), ROWS_WIDTH_CAP)
    while width > 1 and not fits_wg(info, p["TRSM_NB"], width):
        width //= 2
    return width


def _trsm_constraint(p: dict, d: Device) -> str | None:
    """REGISTER = 1 needs TRSM_NB <= 64; a TRSM_NB x (TRSM_NB + 1) block of reals in
    local memory (trsm_chain: two, the diagonal block staged before its waits; and
    trsm_rows's and trsm_chain's TRSM_NB x :func:`rows_width` more) and TRSM_NB
    work-items in a work-group."""
    nb = p["TRSM_NB"]
    if p["REGISTER"] and nb > 64:
        return "REGISTER = 1 needs TRSM_NB <= 64"
    blocks = 2 if p["FEW_ROUTE"] == "chain" else 1
    local = nb * (blocks * (nb + 1) + rows_width(p, d.info)) * d.itemsize
    return None if d.fits_local(local) and d.fits(nb) \
        else "TRSM_NB block does not fit the device"


# ---- lu ----

def _leaf_w(d: Device, p: dict) -> int:
    widest = 8 if d.gpu else d.native()
    return next(w for w in (8, 4, 1) if w <= widest and d.builds(w))


def _lu_settle(d: Device, p: dict) -> dict:
    """GRID_WY, then GRID_WX, halved until the grid's work-group fits."""
    gx, gy = p["GRID_WX"], p["GRID_WY"]
    while gy > 1 and not d.fits(gx, gy):
        gy //= 2
    while gx > 1 and not d.fits(gx, gy):
        gx //= 2
    return dict(p, GRID_WX=gx, GRID_WY=gy)


def _lu_constraint(p: dict, d: Device) -> str | None:
    """PANEL_WG and a GRID_WX x GRID_WY work-group within the work-group limits;
    GRID_FEWEST only with register rows to count."""
    if not d.fits(p["GRID_WX"], p["GRID_WY"]):
        return "GRID_WX x GRID_WY exceeds the work-group limits"
    if p["GRID_FEWEST"] and not p["GRID_RPI"]:
        return "GRID_FEWEST needs register rows (GRID_RPI > 0)"
    return None if d.fits(p["PANEL_WG"]) else "PANEL_WG exceeds the work-group limit"


#: The product-form update's solves for W (``update`` SOLVE; oclla/update_product.py).
SOLVES = ("steps", "chain")
#: The blocked LU's panel strategies (``lu`` PANEL; :class:`oclla.lu_blocked.Panels`).
PANELS = ("leaf", "columns", "grid")
#: The register rows per item a grid panel's program may hold (the lu knob GRID_RPI; the
#: blocked LU builds a taller panel's program for up to four times GRID_RPI, at most the
#: largest).
GRID_RPIS = (0, 1, 2, 4, 8, 16, 32)


# ---- chol ----

def chol_row_leaf(p: dict) -> bool:
    """Whether the ``chol`` parameters ``p`` factor leaves with potf2_rows: ROW_LEAF
    set and LEAF a multiple of 8 up to 64 (the kernel's unrolled steps)."""
    return bool(p["ROW_LEAF"]) and p["LEAF"] % 8 == 0 and p["LEAF"] <= 64


def chol_apply_rows(p: dict) -> int:
    """Rows of the panel that a work-group of the panel solve (cholesky.cl's
    apply_inverse) stages for ``chol`` parameters ``p``: about four entries per work-item
    of WG, at most LEAF."""
    return max(1, min(p["LEAF"], 4 * p["WG"] // p["LEAF"]))


def chol_leaf_local_bytes(p: dict, itemsize: int) -> int:
    """Local memory of the leaf and panel-solve kernels (kernels_cl/cholesky.cl,
    chol_leaf.h) of ``chol`` parameters ``p``, the larger of: potf2_block's LEAF x
    (LEAF + 1) block and two column buffers of LEAF reals, or potf2_rows' block with a
    zero row before it, two column buffers of 2·LEAF reals and the LEAF reciprocals of
    the diagonal (ROW_LEAF_LOCAL); apply_inverse's LEAF x LEAF inverse and its staged
    rows of LEAF + 1 reals (APPLY_LOCAL)."""
    leaf = p["LEAF"]
    if chol_row_leaf(p):
        factor = (leaf + 1) * (leaf + 1) + 5 * leaf
    else:
        factor = leaf * (leaf + 1 + 2)
    return max(factor, leaf * leaf + chol_apply_rows(p) * (leaf + 1)) * itemsize


def _chol_settle(d: Device, p: dict) -> dict:
    """LEAF halved until its block fits half the local memory and the set passes
    :func:`check`."""
    p = dict(p)
    while p["LEAF"] > 1 and (p["LEAF"] * (p["LEAF"] + 1) * d.itemsize
                             > d.info.local_mem_size // 2
                             or check("chol", p, d) is not None):
        p["LEAF"] //= 2
    return p


def _chol_constraint(p: dict, d: Device) -> str | None:
    """The leaf's local memory (:func:`chol_leaf_local_bytes`) within the device's; row
    leaves need LEAF work-items in a work-group, block leaves
    WG >= LEAF²/64 (64 registers per item); WG within the work-group limit."""
    if not d.fits_local(chol_leaf_local_bytes(p, d.itemsize)):
        return f"a LEAF={p['LEAF']} block does not fit in local memory"
    rows = chol_row_leaf(p)
    if rows and not d.fits(p["LEAF"]):
        return "ROW_LEAF needs LEAF work-items in a work-group"
    if not rows and p["LEAF"] * p["LEAF"] > 64 * p["WG"]:
        return "a LEAF x LEAF block needs WG >= LEAF²/64 (64 registers per work-item)"
    return None if d.fits(p["WG"]) else "WG exceeds the work-group limit"


# ---- pivot, crout, window ----

def _pivot_constraint(p: dict, d: Device) -> str | None:
    """WX·WY a power of two within the work-group limits."""
    wx, wy = p["WX"], p["WY"]
    if (wx * wy) & (wx * wy - 1):
        return "WX * WY must be a power of two"
    return None if d.fits(wx, wy) else "work-group too large"


def _crout_lanes(d: Device, p: dict) -> int:
    wg = p["WG"]
    return min(32, max(1, wg // 2)) if d.gpu else max(1, wg // 16)


def crout_local_bytes(p: dict, itemsize: int) -> int:
    """Local memory of kernels_cl/lu_crout.cl with ``crout`` parameters ``p`` (VW <= 4)."""
    wg = p["WG"]
    rows = wg // p["CL"] * p["RR"]
    return ((max(p["MB"], p["KC"]) + (4 + p["RR"]) * wg + rows) * itemsize
            + (max(p["MB"], rows) + wg + 1) * 4)


def _crout_settle(d: Device, p: dict) -> dict:
    """KC and MB halved until the set passes :func:`check` (KC >= 4)."""
    p = dict(p)
    while p["KC"] > 4 and check("crout", p, d) is not None:
        p.update(KC=p["KC"] // 2, MB=max(1, p["MB"] // 2))
    return p


def _crout_constraint(p: dict, d: Device) -> str | None:
    """RJ <= WG, CL <= WG, WG/CL·RR >= 2 rows per column part; local memory
    (max(MB, KC) + (4 + RR)·WG + WG/CL·RR) reals + (max(MB, WG/CL·RR) + WG + 1)
    ints; WG within the work-group limit."""
    wg, cl = p["WG"], p["CL"]
    if p["RJ"] > wg or cl > wg or wg // cl * p["RR"] < 2:
        return "RJ <= WG, CL <= WG, WG / CL * RR >= 2"
    local = crout_local_bytes(p, d.itemsize)
    if not d.fits_local(local):
        return f"needs {local} bytes of local memory"
    return None if d.fits(wg) else "WG exceeds the work-group limit"


def _window_wg(d: Device, p: dict) -> int:
    return d.group(64, 8)


def window_local_bytes(p: dict, itemsize: int) -> int:
    """Local memory of kernels_cl/lu_window.cl with ``window`` parameters ``p``."""
    return (p["WG"] + 2 * p["W"]) * itemsize + p["WG"] * 4


def _window_constraint(p: dict, d: Device) -> str | None:
    """W <= WG; WG within the work-group limit; local memory (WG + 2·W) reals + WG ints."""
    if not d.fits(p["WG"]):
        return "WG must be within the work-group limit"
    if p["W"] > p["WG"]:
        return "W must lie in [1, WG]"
    local = window_local_bytes(p, d.itemsize)
    return None if d.fits_local(local) else f"needs {local} bytes of local memory"


def update_local_bytes(p: dict, itemsize: int) -> int:
    """factor_panel_local's local memory: the PANEL² triangle, a row of KF entries of V,
    KF rotations of four reals, a diagonal and a flag."""
    return (p["PANEL"] ** 2 + 5 * p["KF"] + 1) * itemsize + 4


def _reflect_rank(d: Device, p: dict) -> int:
    """GPUs: reflectors from k = 64 in float32, k = 16 in float64 (H200, n = 8192:
    benchmarks/results/nvidia-h200-2026-11-26-update-2.txt; float32 measured again on
    the H100: nvidia-h100-2026-11-26-update-4.txt); CPUs never."""
    return (64 if d.itemsize == 4 else 16) if d.gpu else 0


def _product_fits(rank: int, d: Device) -> bool:
    """Whether the product form's kernels for updates of up to ``rank`` columns fit
    the device (work-groups of 64 items, their local memory)."""
    from .update_product import TB, local_bytes
    return rank == 0 or (d.fits(TB) and d.fits_local(local_bytes(rank, d.itemsize)))


def _product_rank(d: Device, p: dict) -> int:
    """GPUs: updates of rank up to 128 in product form (KB columns a pass), where its
    kernels fit (H200, n = 5000-16384, both dtypes: as fast as the rotations at k = 16,
    4-14x faster at k = 32-128, e.g. float64 n = 8192, k = 64 5.2 against 30.1 ms;
    benchmarks/results/nvidia-h200-2026-11-30-flags.txt; past 128 not measured: there
    the passes were 1.1-3.8x faster than refactoring with cuSOLVER, n = 5000-16384);
    CPUs never (not measured faster there)."""
    return 128 if d.gpu and _product_fits(128, d) else 0


def _update_fits(p: dict, d: Device) -> bool:
    return d.fits(max(p["PANEL"], p["KF"])) and d.fits(p["APPLY_WG"]) and (
        not p["LOCAL_PANEL"] or d.fits_local(update_local_bytes(p, d.itemsize))
    ) and _product_fits(p["PRODUCT"], d)


def _update_settle(d: Device, p: dict) -> dict:
    if not _product_fits(p["PRODUCT"], d):
        p["PRODUCT"] = 0
    while p["PANEL"] > 1 and not _update_fits(p, d):
        p["PANEL"] //= 2
    return p


def _update_constraint(p: dict, d: Device) -> str | None:
    """PANEL, KF and APPLY_WG within the work-group limit; with LOCAL_PANEL, the panel
    in local memory; PRODUCT's kernels within the local memory."""
    return None if _update_fits(p, d) else \
        ("PANEL, KF or APPLY_WG exceed the work-group limit, or (LOCAL_PANEL) the panel or "
         "(PRODUCT) the product form's blocks the local memory")


def _fits_group(*names) -> Callable[[dict, Device], str | None]:
    def constraint(p: dict, d: Device) -> str | None:
        return None if d.fits(*(p[n] for n in names)) \
            else f"{' x '.join(names)} exceeds the work-group limits"
    constraint.__doc__ = f"{' x '.join(names)} within the work-group limits."
    return constraint


_LU = ("oclla/lu_blocked.py",)
_CHOL = ("oclla/cholesky.py",)
_WG_READERS = ("oclla/_validate.py", "oclla/ad2at.py", "oclla/blas.py", "oclla/cholesky.py",
               "oclla/rfp.py", "oclla/lu_blocked.py")
_LOCAL2D_READERS = ("oclla/ad2at.py", "oclla/blas.py", "oclla/cholesky.py", "oclla/rfp.py",
                    "oclla/lu_pivot.py")

FAMILIES = {f.name: f for f in (
    Family("gemm", "The matrix product C = alpha·op(A)·op(B) + beta·C (kernels_cl/gemm.cl, "
           "oclla/blas.py). GPUs derive a tiled set, CPUs a direct one.",
           _gemm_knobs(False), _gemm_settle, _gemm_constraint, _gemm_keep),
    Family("gemm_thin", "The gemm shape for products of inner dimension k <= MAX_K (the "
           "rank-k updates of the blocked LU's leaves: a whole C streamed for little "
           "arithmetic, so more, smaller tiles; not a TRSM's products, whose last block "
           "would build these programs at some orders only): MAX_K and, where MAX_K > 0, "
           "a gemm set.",
           (Knob("MAX_K", "largest inner dimension that uses this shape (0: never)",
                 _by_kind(16, 0), ints(0), ("oclla/blas.py",), _both((0, 8, 16, 32))),)
           + _gemm_knobs(True), _thin_settle, _thin_constraint),
    Family("wg1d", "Work-group size of simple one-dimensional kernels, and how their "
           "work-items share a long vector.", (
        Knob("WG", "work-items per work-group", lambda d, p: d.group(256, 64), pow2(),
             _WG_READERS),
        Knob("RUNS", "1: each work-item of a pass over a long vector (count_nonfinite; a "
             "view's gather and scatter; the sparse factor's rows, kernels_cl/sparse.cl "
             "ROWS_CHUNKED) reads one contiguous run of it, which a CPU compiler vectorizes "
             "(PoCL, 2 cores, 16 M floats: 3.0 ms against 44 ms read a launch's width apart); "
             "0: entries a launch's width apart, so that neighbouring items read neighbouring "
             "entries (GPUs)",
             _by_kind(0, 1), BOOL, ("oclla/_validate.py", "oclla/sparse/numeric.py"))),
        None, _fits_group("WG")),
    Family("local2d", "Work-group shape of simple two-dimensional kernels.", (
        Knob("X", "work-items along the first dimension",
             lambda d, p: 16 if d.fits(16, 16) else (8 if d.fits(8, 8) else 1), ints(1),
             _LOCAL2D_READERS),
        Knob("Y", "work-items along the second dimension", lambda d, p: p["X"], ints(1),
             _LOCAL2D_READERS)), None, _fits_group("X", "Y")),
    Family("trsm", "Triangular solves (kernels_cl/trsm.cl).", (
        Knob("TRSM_NB", "largest triangular diagonal block handled by one kernel (its "
             "block takes TRSM_NB·(TRSM_NB + 1) reals of local memory, at most half)",
             _trsm_nb, ints(1), ("oclla/blas.py", "kernels_cl/trsm.cl"),
             _both((16, 32, 64))),
        Knob("INVERSE", "1: invert the diagonal blocks and apply them by GEMM; 0: solve "
             "each by substitution", _fixed(1), BOOL, ("oclla/blas.py",), _both((0, 1))),
        Knob("DOUBLING", "1: trtri_blocks inverts a diagonal block by doubling "
             "(kernels_cl/tri_inverse.h: the 8 x 8 blocks, then pairs of blocks by two "
             "products, 3 barriers a level; where TRSM_NB is 8 times a power of two); 0: "
             "a column at a time (LAPACK's trti2, 2 barriers a column, half the flops).  "
             "H200, blocks of 64: the launch 74-78 -> 15-26 us; PoCL, 2 cores, potrf at "
             "n = 2048 40 -> 44 ms with it", _by_kind(1, 0), BOOL,
             ("oclla/blas.py", "kernels_cl/trsm.cl"), _both((0, 1))),
        Knob("REGISTER", "1: keep the substitution's right-hand side in registers "
             "(TRSM_NB <= 64); 0: in a private array", _fixed(0), BOOL, ("oclla/blas.py",),
             _both((0, 1))),
        Knob("FEW_RHS", "left-side solves of more than TRSM_NB rows with at most this "
             "many right-hand sides take FEW_ROUTE instead of GEMMs; 0: never.  A solve "
             "with few right-hand sides is bound by its launches (cho_solve at n = 1024: "
             "108 launches the GEMM way).  GPUs: 128 (H200, n = 8192, cho_solve / "
             "lu_solve by GEMMs against by rows: float32 one right-hand side 29-43 / "
             "39-41 -> 3.5-4.8 / 7.4-7.6 ms, 64 of them 26-43 / 23-26 -> 6.2-6.6 / 14.9-15.6 "
             "ms, 128 27-40 / 23-24 -> 8.5-9.6 / 19-21 ms, 256 26-43 / 24-25 -> 14-15 / "
             "28-31 ms: lu_solve's GEMMs win there).  CPUs: 4 (PoCL, 2 cores, float32, one "
             "right-hand side, cho_solve / lu_solve at n = 1024 6.3 / 3.7 -> 0.5 / 0.9 ms, at "
             "4000 51 / 31 -> 7.7 / 10.5 ms by columns; each column solved in a contiguous "
             "copy, 2 / 4 / 8 of them at n = 2000, cho_solve by GEMMs against by columns: "
             "float32 17.8 / 15.3 / 13.0 -> 1.7 / 2.6 / 4.2 ms, float64 21.8 / 11.4 / 10.9 "
             "-> 3.0 / 4.0 / 10.9 ms; at 4000 float64 lu_solve 18.9 / 23.6 / 17.9 -> 12.2 / "
             "21.1 / 45.6 ms: the GEMMs win from 8 columns there)",
             _by_kind(128, 4), ints(0, 1024), ("oclla/blas.py",)),
        Knob("FEW_ROUTE", '"rows": trsm_rows, one launch per diagonal block, which solves '
             "it and updates the blocks still to solve in many work-groups of up to 16 "
             "columns (ROWS_WIDTH_CAP; GPUs); "
             '"columns": trsm_columns, one launch, one work-item per right-hand side '
             "through the whole triangle (CPUs: one core streams the triangle; PoCL, 2 "
             "cores, cho_solve at n = 4000 with one right-hand side 7-8 ms this way, 101 ms "
             'by rows); "chain": trsm_chain, the rows\' blocks in one launch, each '
             "work-group solving its block once the blocks before it are stored (H200, "
             "n = 8192, one right-hand side: cho_solve / lu_solve 3.3 / 7.1 -> 1.3 / 5.4 "
             "ms in float32, 6.9 / 8.7 -> 1.6 / 5.6 ms in float64; it relies on every "
             "running work-group making progress, which OpenCL does not promise, so only "
             "a tuned entry measured on the device chooses it)",
             _by_kind("rows", "columns"), choice(*FEW_ROUTES),
             ("oclla/blas.py", "kernels_cl/trsm.cl"))), None,
        _trsm_constraint),
    Family("laswp", "Row interchanges (kernels_cl/laswp.cl).", (
        Knob("VW", "adjacent columns per work-item", lambda d, p: 1 if d.gpu else d.native(),
             WIDTHS,
             ("oclla/blas.py", "kernels_cl/laswp.cl")),
        Knob("WG", "work-items per work-group",
             lambda d, p: d.group(256, 4), ints(1), ("oclla/blas.py",),
             {"GPU": (64, 128, 256), "CPU": (1, 4, 16)}),
        Knob("CHUNK", "interchanges applied per round of loads (rows held in registers; "
             "the program grows as CHUNK squared).  On an H100, 8 was as fast as 16 in the "
             "blocked LU at every order from 2049 to 16384",
             _by_kind(8, 4), ints(1, 32), ("oclla/blas.py", "kernels_cl/laswp.cl"),
             {"GPU": (4, 16, 32), "CPU": (1, 4, 16)}),
        Knob("FEW_COLS", "most columns (a solve's right-hand sides, all n pivots) whose "
             "interchanges are first composed into one permutation in local memory "
             "(permute_rows: one work-group, a local round trip per interchange where "
             "laswp makes a global one per CHUNK); 0: never.  H200, one column: n = 1024 "
             "143-159 -> 39-40 us, 4096 556-674 -> 140-142 us; PoCL, 2 cores, n = 4000: "
             "laswp was faster (16 columns 156 against 289 us).  Not tuned: only "
             "lu_solve takes this route, and the tuner times factorizations",
             _by_kind(256, 0), ints(0), ("oclla/blas.py",))), None, _fits_group("WG")),
    Family("lu", "The blocked LU (oclla/lu_blocked.py): panels, their leaves, the "
           "trailing updates.", (
        Knob("NB", "panel width; 256 on CPUs, where the panel is halved recursively and "
             "wide panels give the trailing GEMMs a deep inner dimension (PoCL, 2 cores, "
             "against 64: float32 n = 1024 / 2048 / 4000 35 -> 27 / 144 -> 114-120 / 763 -> "
             "541-556 ms, float64 2048 / 4000 243 -> 180 / 1327 -> 839-852 ms; 384 and 512 "
             "no faster; n <= 700 level)", _by_kind(128, 256), ints(1), _LU,
             {"GPU": (96, 128, 192, 256, 384), "CPU": (64, 128, 192, 256, 384)}),
        Knob("LEAF_W", "widest panel leaf (2 is left out: PoCL 3.1 miscomputes the "
             "float32 leaf with two-wide rows when the work-group has several items)",
             _leaf_w, choice(1, 4, 8, 16), _LU, _both((4, 8, 16))),
        Knob("LEAF_UNR", "rows a leaf work-item loads before it stores", _by_kind(4, 1),
             ints(1), _LU, {"GPU": (1, 2, 4, 8), "CPU": (1, 2)}),
        Knob("REG_SLOTS", "registers per work-item of the register leaf (0: no register "
             "leaves), which holds m x LEAF_W <= REG_SLOTS·PANEL_WG entries of a panel, "
             "whole rows per work-item", _fixed(0), ints(0, 64), _LU,
             {"GPU": (0, 16, 32, 64), "CPU": (0, 16)}),
        Knob("PANEL", 'how a panel too tall for the register leaves is factored: "leaf" '
             "(one-work-group leaves, getf2_leaf, recursively halved down to LEAF_W "
             'columns), "columns" (one multi-work-group launch per column: the per-pivot '
             "kernels of kernels_cl/lu_inplace.cl with RB = PANEL_RB and WY = PANEL_WY) or "
             '"grid" (the whole panel in one launch by the work-groups that run at once, a '
             "barrier across them per column: it relies on every launched work-group "
             "making progress, which OpenCL does not promise, so only a tuned entry "
             "measured on the device chooses it; kernels_cl/lu_grid.cl)",
             _by_kind("columns", "leaf"), choice(*PANELS), _LU,
             {"GPU": PANELS, "CPU": PANELS[:2]}),
        Knob("PANEL_WG", "work-items of a leaf's work-group", lambda d, p: d.group(256, 8),
             pow2(), _LU, {"GPU": (128, 256, 512, 1024), "CPU": (1, 2, 4, 8)}),
        Knob("PANEL_RB", 'PANEL = "columns": rows per work-group of the per-pivot kernels',
             _by_kind(16, 1024), ints(1), _LU,
             {"GPU": (8, 16, 32, 64, 128), "CPU": (256, 1024)}),
        Knob("PANEL_WY", 'PANEL = "columns": work-items along the rows of those kernels',
             _by_kind(8, 1), pow2(), _LU, {"GPU": (4, 8, 16), "CPU": (1, 2)}),
        Knob("SMALL_N", "below this order the whole matrix is factored by the leaf kernel "
             "alone (fewest launches); the tuner measures the crossover", _by_kind(0, 256),
             ints(0), _LU),
        Knob("LOOKAHEAD", "1: factor the next panel on a second queue while the trailing "
             "update runs", _by_kind(0, 1), BOOL, _LU, _both((0, 1))),
        Knob("INVERT_ONCE", "with LOOKAHEAD and solves by inverted blocks (the trsm "
             "family's INVERSE): 1: the second queue inverts each panel's diagonal blocks "
             "once, right after the panel, for both queues' solves, while the first "
             "interchanges the next panel's columns (H200: float32 4096, from one grid "
             "panel's end to the next one's start 116 -> 89 us; sgetrf 4096 / 8192 "
             "14.0-14.2 / 41.7-42.0 -> 13.7-13.9 / 40.7 ms, dgetrf 8192 57.0 -> 56.2 ms, "
             "alternating processes); 0: each queue inverts them for its own solve (PoCL, "
             "2 cores, n = 2048, interleaved: 1 is 10-15 % slower in both dtypes)",
             _by_kind(1, 0), BOOL, _LU, _both((0, 1))),
        Knob("FAR_COLS", "with LOOKAHEAD: the far trailing update as GEMMs of about this "
             "many columns each (whole panels' widths), one after the other on the second "
             "queue, so that the next panel's kernels find compute units free between them "
             "(0: one GEMM).  H200, float64, 2048 against 0: dgetrf 16384 263.0 -> 257.2 "
             "ms, 8192 61.2 -> 60.4 ms (four processes alike), 2048 level, 4096 level in "
             "three processes and 10 % slower in a fourth; narrower blocks slower (256: "
             "16384 322 ms); float32 slower (16384, pieces of 2048: 182.2 -> 193.0 ms)",
             _fixed(0), ints(0), _LU, {"GPU": (0, 2048, 4096), "CPU": (0,)}),
        Knob("PANEL_SPLIT", 'with PANEL = "columns" or "grid", recurse (?getrf2) down to '
             "column blocks this wide (0: none)", _fixed(0), ints(0), _LU,
             {"GPU": (0, 32, 64, 128), "CPU": (0,)}),
        Knob("GRID_WX", 'PANEL = "grid": work-items of a work-group along the columns',
             _by_kind(32, 8), pow2(), _LU),
        Knob("GRID_WY", 'PANEL = "grid": work-items of a work-group along the rows',
             _by_kind(8, 1), pow2(), _LU, {"GPU": (4, 8, 16), "CPU": (1, 2)}),
        Knob("GRID_PER_CU", 'PANEL = "grid": work-groups launched per compute unit',
             _fixed(1), ints(1, 8), _LU, _both((1, 2))),
        Knob("GRID_FEWEST", 'PANEL = "grid": 0 launches every panel on compute units x '
             "GRID_PER_CU work-groups; g > 0 on the fewest that hold the panel's rows in "
             "their GRID_RPI register rows per item, at least g (never more than the "
             "first), so that as the panels shorten they leave compute units to the "
             "look-ahead's trailing update (LOOKAHEAD).  H200 (132 compute units), with "
             "LOOKAHEAD, g = 33 against 0: sgetrf 4096 / 8192 / 16384 20.0 / 56.3 / 212.7 "
             "-> 17.7 / 49.2 / 204.5 ms, dgetrf 24.9 / 71.4 / 288.1 -> 22.1 / 65.8 / 283.1 "
             "ms; g = 16 and 66 alike; without a look-ahead no faster",
             _fixed(0), ints(0), _LU, {"GPU": (0, 16, 32, 64), "CPU": (0,)}),
        Knob("GRID_TALL", 'PANEL = "grid": a panel of more than GRID_TALL rows takes '
             "twice GRID_RPI register rows per item, one of more than twice GRID_TALL four "
             "times, and so on (0: never), and so, with GRID_FEWEST, about as many "
             "work-groups as a panel of GRID_TALL rows, leaving compute units to the "
             "look-ahead's trailing update where that update, not the panel, is what the "
             "next panel waits for.  "
             "H200, 4096 against 0 (alternating processes): sgetrf 8192 / 16384 41.0 / "
             "169.2-170.2 -> 38.4-38.6 / 164.5-165.5 ms, dgetrf 56.2-56.6 / 246.1-246.2 -> "
             "53.2-53.8 / 242.2-243.1 ms with twice the rows past 4096 only; four times "
             "past 8192 then took sgetrf 12288 / 16384 85.1-85.4 / 164.3-164.9 -> "
             "82.8-83.2 / 159.0-159.3 ms and dgetrf 16384 243.0 -> 240.1-240.5 (12288 "
             "level); 3072 slows sgetrf 4096 (13.8 -> 14.9-15.2 ms), whose panels are "
             "what its factorization waits for",
             _fixed(0), ints(0), _LU, {"GPU": (0, 4096, 6144), "CPU": (0,)}),
        Knob("GRID_RPI", 'PANEL = "grid": the most rows per work-item held in registers '
             '(the program is built for this many; a panel that needs fewer passes its '
             'count as an argument; 0: none; a panel taller than the work-groups that '
             'run at once hold takes a program with twice or four times as many).  On an '
             'H100, 8 was as fast as 16 or faster at every order from 1024 to 16384 and '
             'builds in half the time',
             _by_kind(8, 4), choice(*GRID_RPIS), _LU,
             {"GPU": (4, 8, 16, 32), "CPU": (0, 2, 4, 8)}),
        Knob("FLAT_N", "the trailing matrix is factored as one panel once its order is at "
             "most FLAT_N and its rows fit the register leaves (a rank-LEAF_W GEMM on all "
             "of it after each leaf, no TRSM or interchange launches; 0: never)",
             _fixed(0), ints(0), _LU, {"GPU": (0, 1024, 2048), "CPU": (0, 256)}),
        Knob("LEAF_SCAN", "the register leaf's pivot search folds the candidates to "
             "LEAF_SCAN² (if more), then to LEAF_SCAN entries, which every item scans",
             _fixed(32), choice(2, 4, 8, 16, 32), _LU, _both((8, 16, 32))),
        Knob("LEAF_WG", "the fewest work-items of a register leaf (0: PANEL_WG; a leaf of "
             "m rows takes the fewest from LEAF_WG up to PANEL_WG that hold them).  Each "
             "work-group size a leaf takes is a program of its own, built at the first "
             "order that needs it (a size class): on an H200 one program of 512 items for "
             "every leaf was 6-13 % slower at n = 500-2048 than 256 items for leaves of up "
             "to 1024 rows",
             _fixed(0), pow2(True), _LU, {"GPU": (0, 128, 256), "CPU": (0,)}),
        Knob("LEAF_STAGE", "the most rows a register leaf moves through local memory at "
             "once (0: its items)", _fixed(0), pow2(True), _LU,
             {"GPU": (0, 128, 256), "CPU": (0,)}),
        Knob("FLAT_AHEAD", "1: launch each leaf of the last panel of register leaves with "
             "the previous leaf's update (the leaf's work-group updates its own columns as "
             "it loads them, the launch's other work-groups the rest)", _fixed(0), BOOL,
             _LU, _both((0, 1)))), _lu_settle, _lu_constraint),
    Family("chol", "The blocked Cholesky (oclla/cholesky.py) and the packed (RFP) one "
           "(oclla/rfp.py).", (
        Knob("NB", "block column width above SMALL_N; where the leaves fuse (FUSE_LEAF) "
             "each block column is a trapezoid of fused leaves and the trailing update one "
             "SYRK as deep as NB (H200: 1024, float64 n = 16384 upper / lower 129 / 131 -> "
             "90 / 87 ms against blocks of 128 solved by substitution); 256 on CPUs too "
             "(PoCL, 2 cores, against 128: "
             "float32 n = 2048 / 4000 45 -> 40 / 257 -> 238 ms, float64 91 -> 73 / 495 -> "
             "400 ms; 384 level)", _fixed(256), ints(1), _CHOL,
             {"GPU": (64, 128, 256, 512, 1024), "CPU": (64, 128, 192, 256, 384)}),
        Knob("LEAF", "largest diagonal block factored by one work-group in its registers "
             "(larger ones are split recursively into TRSM and SYRK); 32 on CPUs, where "
             "PoCL (2 cores) factored n = 256 / 1024 in 4.7 / 61 ms with LEAF 32 and WG 64 "
             "against 24.5 / 128 ms with 64 and 1024", _by_kind(64, 32), ints(1),
             _CHOL + ("kernels_cl/cholesky.cl",), _both((16, 32, 64))),
        Knob("TRSM_INVERSE", "1: solve the panels by multiplication with inverted diagonal "
             "blocks (from the leaf kernel itself where NB <= LEAF, else the trsm INVERSE "
             "route); 0: by substitution", _fixed(1), BOOL, _CHOL, _both((0, 1))),
        Knob("RFP_TRSM_INVERSE", "the same for the packed (RFP) Cholesky's one large solve "
             "(where the 'L' layout does not solve S by block rows beside T1: leaves not "
             "fused into the updates, or the 'U' layout)",
             _fixed(1), BOOL, ("oclla/rfp.py",), _both((0, 1))),
        Knob("RFP_T2_DEPTH", "where the 'L' layout sweeps T1 and S by block rows: the "
             "fewest final rows of S a T2 -= SᵀS update takes, on a second queue beside "
             "the sweep (0: one update after it; fewer rows than this left after a part "
             "join the last one).  H200, n = 4096, packed / full "
             "float32 1.09 -> 1.03, float64 1.12 -> 1.07 with 256 (64: 1.36 / 1.64, "
             "1024: 1.06 / 1.09: small updates take the compute units from the sweep's "
             "leaves); float64 8192 / 12288 1.05 -> 1.03",
             _fixed(256), ints(0), ("oclla/rfp.py",), {"GPU": (0, 64, 256, 1024), "CPU": (0,)}),
        Knob("SMALL_N", "up to this order the block width is LEAF and every panel is "
             "solved with its leaf's inverse (fewest launches); the tuner measures the "
             "crossover", _by_kind(4096, 0), ints(0), _CHOL),
        Knob("ROW_LEAF", "1: factor the leaves with LEAF work-items, one per row and one "
             "short barrier per column (potf2_rows, where LEAF is a multiple of 8 up to "
             "64); 0: with WG items (potf2_block).  1 on GPUs, and on CPUs whose "
             "work-groups hold LEAF items: PoCL 3.0 (2 cores) compiles potf2_block for its "
             "first launch in 13-14 s (its 64 slots per item kept across every barrier), "
             "and the first cholesky of a fresh process took 18.5 s against 5.0 s with row "
             "leaves; cholesky at n = 300-4000 is as fast or faster",
             lambda d, p: int(d.gpu or d.fits(p["LEAF"])), BOOL,
             ("kernels_cl/cholesky.cl",), _both((0, 1))),
        Knob("FUSE_LEAF", "1: factor each next leaf inside the trailing update's launch "
             "(syrk_leaf.cl: the work-group of the update's first tile, one launch per "
             "block column fewer) where row leaves are used and the gemm tiles cover a "
             "leaf, and every other leaf in the same kernel (an update of rank 0: the row "
             "leaf compiled once per triangle); only tuned entries turn it on (a large "
             "kernel: PoCL 3.0 spends minutes compiling it)", _fixed(0), BOOL,
             ("oclla/_params.py",), _both((0, 1))),
        Knob("WG", "work-items of a block leaf (at least LEAF²/64); with row leaves it "
             "sizes only the panel solve apply_inverse (min(LEAF, 4·WG/LEAF) rows of the "
             "panel per work-group)", lambda d, p: d.group(256, 64), pow2(),
             _CHOL + ("kernels_cl/cholesky.cl",),
             {"GPU": (128, 256, 512, 1024), "CPU": (16, 32, 64, 256)})),
        _chol_settle, _chol_constraint),
    Family("pivot", "The per-pivot LU kernels (kernels_cl/lu_inplace.cl, "
           "oclla/lu_pivot.py): a work-group is WX x WY items and owns WX·VW·NV columns "
           "of RB rows.", (
        Knob("VW", "adjacent columns per vector", lambda d, p: 4 if d.gpu else d.native(),
             WIDTHS,
             ("oclla/lu_pivot.py", "kernels_cl/lu_inplace.cl"),
             {"GPU": (1, 4), "CPU": native_and_half}),
        Knob("NV", "vectors per work-item", _by_kind(1, 4), ints(1),
             ("oclla/lu_pivot.py", "kernels_cl/lu_inplace.cl"),
             {"GPU": (1,), "CPU": (2, 4, 8)}),
        Knob("UNR", "rows a work-item loads before it stores (the last work-group of each "
             "launch finishes the next column)", _by_kind(4, 1), ints(1),
             ("oclla/lu_pivot.py", "kernels_cl/lu_inplace.cl"), {"GPU": (1, 4), "CPU": (1,)}),
        Knob("WX", "work-items along the columns",
             lambda d, p: 32 if d.gpu else pow2_at_most(min(2, d.info.max_work_group_size)),
             ints(1), ("oclla/lu_pivot.py", "kernels_cl/lu_inplace.cl"),
             {"GPU": (32, 64), "CPU": (1, 2)}),
        Knob("WY", "work-items along the rows",
             lambda d, p: pow2_at_most(min(8, max(1, d.info.max_work_group_size // 32)))
             if d.gpu else 1, ints(1), ("oclla/lu_pivot.py", "kernels_cl/lu_inplace.cl"),
             {"GPU": (8, 16), "CPU": (1,)}),
        Knob("RB", "rows per work-group", _by_kind(64, 1024), ints(1),
             ("oclla/lu_pivot.py", "kernels_cl/lu_inplace.cl"),
             {"GPU": (64, 256), "CPU": (256, 1024)})), None, _pivot_constraint),
    Family("crout", "The left-looking per-pivot LU (kernels_cl/lu_crout.cl, "
           "oclla/lu_pivot.py): a row part and a column part per pivot.", (
        Knob("WG", "work-items per work-group", lambda d, p: d.group(256, 64), pow2(),
             ("oclla/lu_pivot.py",), {"GPU": (128, 256), "CPU": (16, 64)}),
        Knob("RJ", "row part: work-items along a block's columns (WG/RJ share a column)",
             lambda d, p: _crout_lanes(d, p) if d.gpu else p["WG"], pow2(),
             ("oclla/lu_pivot.py", "kernels_cl/lu_crout.cl"),
             {"GPU": (32,), "CPU": Tied(lambda p: p["WG"], "WG")}),
        Knob("MB", "row part: rows of U per chunk", _by_kind(256, 1024), ints(1),
             ("oclla/lu_pivot.py", "kernels_cl/lu_crout.cl"),
             {"GPU": (64, 128, 256), "CPU": (256, 1024)}),
        Knob("CL", "column part: work-items per row", _crout_lanes, pow2(),
             ("oclla/lu_pivot.py", "kernels_cl/lu_crout.cl"),
             {"GPU": (16, 32), "CPU": Tied(lambda p: max(1, p["WG"] // 16), "max(1, WG/16)")}),
        Knob("KC", "column part: columns of L per chunk", _by_kind(1024, 4096),
             ints(4, multiple=4), ("oclla/lu_pivot.py", "kernels_cl/lu_crout.cl"),
             {"GPU": (512, 1024), "CPU": (4096,)}),
        Knob("RR", "column part: rows per sub-group of CL work-items", _fixed(2), ints(1),
             ("oclla/lu_pivot.py", "kernels_cl/lu_crout.cl"), _both((1, 2))),
        Knob("UNROLL", "loads in flight per work-item", _by_kind(4, 1), ints(1),
             ("oclla/lu_pivot.py", "kernels_cl/lu_crout.cl"),
             {"GPU": (4, 8), "CPU": (1,)})), _crout_settle, _crout_constraint),
    Family("update", "Rank-k Cholesky updates and downdates, method \"blocked\" and "
           "streamed (kernels_cl/update.cl, oclla/update.py; the product form, "
           "kernels_cl/update_product.cl, oclla/update_product.py).", (
        Knob("PANEL", "rows of the factor per panel (apply_panel keeps PANEL entries per "
             "trailing column in registers and reads each column's rows of V once a panel; "
             "launches number 2·n/PANEL; PoCL, 2 cores, n = 4000, k = 16: 64 and 128 "
             "10-15 % faster than 32, 16 slower)", _fixed(64),
             pow2(), ("oclla/update.py", "kernels_cl/update.cl"),
             {"GPU": (32, 64), "CPU": (32, 64, 128)}),
        Knob("LOOKAHEAD", "1: while a panel is factored (one work-group), the previous "
             "panel's rotations of the columns after it run on a second queue (the blocked "
             "method's device-resident route; PoCL, 2 cores, n = 4000, k = 16, interleaved: "
             "float32 40.8 -> 33.2 ms, float64 53.1 -> 48.3 ms, best of 18; not measured on "
             "GPUs); 0: one queue, a panel after the other",
             _by_kind(0, 1), BOOL, ("oclla/update.py",), _both((0, 1))),
        Knob("LOCAL_PANEL", "1: factor each panel in local memory, a row's rotations formed "
             "in parallel from prefix sums (factor_panel_local); 0: in global memory, a "
             "row's rotations formed one after the other by one work-item (factor_panel)",
             _by_kind(1, 0), BOOL, ("oclla/update.py",), _both((0, 1))),
        Knob("REFLECT", "smallest rank k whose updates (sign +1, k <= KF) factor each "
             "panel by Householder reflectors of length 1 + k (factor_panel_reflect, one "
             "barrier per row) and apply them to the trailing part by forward substitution "
             "(apply_panel_reflect); 0: never; downdates keep the rotations",
             _reflect_rank, ints(0), ("oclla/update.py",),
             {"GPU": (0, 16, 64), "CPU": (0,)}),
        Knob("KF", "most columns of V per pass of factor_panel_local (its items hold a "
             "row of them in registers; a row's rotations are formed by KF items)",
             _by_kind(64, 16), pow2(), ("oclla/update.py",), _both((16, 64))),
        Knob("KB", "most columns of V per pass of apply_panel over a panel's rows (their "
             "entries stay in registers across the rows, VW lanes each on CPUs: the paper's "
             "ElementsPerThread, 16 there; fewer for a smaller rank, its next power of two; "
             "PoCL, 2 cores, float32, n = 4000, k = 16, best of 5 in nine interleaved "
             "rounds: 30.9-38.2 -> 26.0-38.6 ms with 8, better in seven; k = 64 102-135 -> "
             "92-105 ms; float64 level)", _by_kind(16, 8),
             WIDTHS, ("oclla/update.py", "kernels_cl/update.cl"),
             {"GPU": (16,), "CPU": (8, 16)}),
        Knob("APPLY_WG", "work-items per work-group of apply_panel (one to VW trailing "
             "columns each: small groups spread a panel's few thousand columns over all "
             "of a GPU's compute units)", lambda d, p: d.group(32, 64), pow2(),
             ("oclla/update.py",), {"GPU": (32, 64, 128), "CPU": (16, 64)}),
        Knob("PRODUCT", "largest rank k whose updates (sign +1, full storage) the blocked "
             "method does in product form (oclla/update_product.py: W = L^-1 V, the k x k "
             "factors of I + sum w w^T by Givens updates, the rows' suffix sums; no chain "
             "over the rows) while max|W| stays below its GUARD; 0: never",
             _product_rank, ints(0, 128), ("oclla/update.py",),
             {"GPU": (0, 16, 128), "CPU": (0, 16)}),
        Knob("SOLVE", 'the product form\'s solve for W = L^-1 V: "steps" (a launch per '
             'block of rows, solve_step) or "chain" (one launch whose work-groups each '
             "solve a block as soon as the blocks before it are stored, solve_chain: it "
             "relies on every running work-group making progress, which OpenCL does not "
             "promise, so only a tuned entry measured on the device chooses it); "
             '"chain" also sends rank-1 updates of upper factors to update_rank1, the '
             "same chain sweeping each tile of the factor as soon as its w is solved (H200, "
             "float64 n = 16384 1.34 -> 0.97-0.99 ms, 8192 0.57 -> 0.41-0.42 ms; 1000 0.34 "
             "-> 0.23 ms with one item a row)",
             _fixed("steps"), choice(*SOLVES), ("oclla/update_product.py",),
             {"GPU": SOLVES, "CPU": SOLVES[:1]}),
        Knob("PREFIX_ROWS", "rows of R's (KB x KB each) the product form's prefix merges "
             "below each chunk's own R, per level: 1 + max(1, PREFIX_ROWS / KB) R's, so "
             "that its launches number log(n / CH) to that base (chunk_merge's registers "
             "hold the rows: fewer launches, each longer).  H200, float64, k = 16 (two "
             "R's a merge at 8): 48 takes the merges from 0.22 to 0.195 ms at n = 8192 "
             "but from 0.33 to 0.42 ms at 16384, where its work-groups no longer run at "
             "once; k = 1 (nine R's a merge at 8) 0.054 -> 0.025 ms; PoCL 3 builds the "
             "merge in about 100 s at 48 rows, in under a second at 8",
             _fixed(8), ints(8), ("oclla/update_product.py",),
             {"GPU": (8, 16, 48), "CPU": (8,)})),
        _update_settle, _update_constraint),
    Family("window", "The per-pivot LU with delayed updates (kernels_cl/lu_window.cl, "
           "oclla/lu_pivot.py).", (
        Knob("W", "pivots per window (one rank-W GEMM between windows)",
             lambda d, p: min(32 if d.gpu else 8, _window_wg(d, p)), ints(1),
             ("oclla/lu_pivot.py",), {"GPU": (16, 32, 64), "CPU": (8, 16, 32)}),
        Knob("WG", "work-items per work-group (rows of the column part, columns of the row "
             "part)", _window_wg, pow2(), ("oclla/lu_pivot.py",),
             {"GPU": (32, 64, 128), "CPU": (16, 32, 64)})),
        None, _window_constraint, lambda p, kind: p["W"] <= p["WG"]),
)}


# ---- derived: defaults, validation, search ------------------------------------------------

def derive(family: str, d: Device) -> dict:
    """The default set of ``family`` on device ``d``: each knob's rule in declaration
    order, then the family's settle step."""
    fam = FAMILIES[family]
    p: dict = {}
    for knob in fam.knobs:
        if knob.applies(p):
            p[knob.name] = knob.default(d, p)
    return fam.settle(d, p) if fam.settle else p


def check(family: str, p: dict, d: Device) -> str | None:
    """None if ``p`` is a usable set of ``family`` on device ``d``, else why not: every
    knob that applies is present and allowed, then the family's constraints hold
    (keys not declared are ignored)."""
    fam = FAMILIES[family]
    try:
        for knob in fam.knobs:
            if not knob.applies(p):
                continue
            if knob.name not in p:
                return f"missing or malformed keys for {family}"
            if not knob.allowed(p[knob.name]):
                return f"{knob.name} must be {knob.allowed.text}"
        return fam.constraint(p, d) if fam.constraint else None
    except (KeyError, TypeError):
        return f"missing or malformed keys for {family}"


def tuned_values(family: str, name: str, kind: str, native: int = 1) -> tuple:
    """The values the tuner tries for one knob on a device of ``kind``."""
    values = (FAMILIES[family].knob(name).tuned or {}).get(kind, ())
    return tuple(values(native)) if callable(values) else tuple(values)


def space(family: str, kind: str, native: int) -> list[dict]:
    """The tuner's grid for ``family`` on a device of ``kind``: every combination of
    the knobs' tuned values (in declaration order, the last knob varying fastest),
    :class:`Tied` knobs following the others, kept where the family's ``keep`` allows."""
    fam = FAMILIES[family]
    grid: list[dict] = [{}]
    for knob in fam.knobs:
        values = (knob.tuned or {}).get(kind)
        if values is None:
            continue
        grown = []
        for p in grid:
            if not knob.applies(p):
                grown.append(p)
            elif isinstance(values, Tied):
                grown.append(dict(p, **{knob.name: values.rule(p)}))
            else:
                grown += [dict(p, **{knob.name: v})
                          for v in (values(native) if callable(values) else values)]
        grid = grown
    return [p for p in grid if fam.keep is None or fam.keep(p, kind)]
