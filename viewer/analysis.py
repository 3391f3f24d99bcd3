"""What the views show, computed from a recorded run (pure numpy, no Qt, no device).

Positions: a run with N steps has N + 1 positions; position 0 is the matrix
before the first step and position p > 0 the matrix after step p − 1
(trace index).  The status bar's "step p/N" counts the same way.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

import numpy as np

from oclla import accuracy

from . import packed, registry, sparse, tiles

SLOW_FACTOR = 3.0
"""A kernel is marked slow when it takes this many times the median of its name."""

SLOW_MIN_NS = 5_000
"""... and at least this long (a 2 µs kernel twice as slow as usual is noise)."""


def viewable_runs(recording, with_start: bool = False) -> list:
    """Runs worth showing: named algorithm calls with at least one step (``with_start``:
    or with no step yet but their starting matrix, as a pick-the-pivot elimination).

    Kernels enqueued outside any algorithm call land in a run named "other"
    ("unknown" in older files), bookkeeping rather than something to watch.
    A failed run ends at its failing step (:func:`until_failure`).  A sparse run's
    patterns and a tile run's tiles are checked here (:func:`viewer.sparse.structure`,
    :func:`viewer.tiles.tile_run`: RecordingError if malformed), so a damaged one is
    refused as it opens.
    """
    runs = [until_failure(r) for r in recording.runs
            if (r.steps or (with_start and r.initial is not None))
            and r.algorithm not in ("other", "unknown")]
    for r in runs:
        sparse.structure(r)
        tiles.tile_run(r)
    return runs


def until_failure(run):
    """A failed run cut after the step where it broke (:func:`failed_position`).

    Steps recorded after a failed pivot work on meaningless numbers; the copy
    keeps the recording's arrays and drops those steps (and their kernels).
    A finished run is returned as it is.
    """
    failed = failed_position(run)
    if failed is None or failed >= len(run.steps):
        return run
    return dataclasses.replace(run, steps=run.steps[:failed], result=None)


def default_run(runs: list) -> int:
    """The run to show first: the first that kept snapshots (a recording may start
    with a helper call such as packing), else the first."""
    for i, r in enumerate(runs):
        if r.snapshots:
            return i
    return 0


def n_positions(run) -> int:
    return len(run.steps) + 1


def step_at(run, position: int):
    """The step just performed at ``position`` (None at position 0)."""
    return run.steps[position - 1] if position > 0 else None


def is_packed(array) -> bool:
    """A packed (RFP) buffer: flat with a triangular number of entries, or the 2-D
    ``lda × cols`` picture (or its transpose) of one; any other array is a matrix."""
    if array is None or array.ndim not in (1, 2) or \
            (array.ndim == 2 and array.shape[0] == array.shape[1]):
        return False
    try:
        packed.orient(array)
    except ValueError:
        return False
    return True


def as_matrix(array):
    """The array as a 2-D matrix to draw: a flat array that is not packed becomes one row."""
    if array is not None and array.ndim == 1 and not is_packed(array):
        return array.reshape(1, -1)
    return array


def is_square(array) -> bool:
    return array is not None and array.ndim == 2 and array.shape[0] == array.shape[1]


def matrix_at(run, position: int):
    """The working array at ``position``: that step's snapshot, else the last one before.

    A step without a snapshot (e.g. a stray kernel recorded as "other") shows
    the array as it was after the previous snapshot.  None when the run kept
    no snapshots at all.
    """
    for p in range(position, 0, -1):
        snap = run.snapshot_at(p - 1)
        if snap is not None:
            return snap
    if run.initial is not None:
        return run.initial
    if run.result is not None and position == n_positions(run) - 1:
        return run.result
    return None


def final_array(run):
    """The working array after the last step (the result when kept)."""
    if run.result is not None:
        return run.result
    return matrix_at(run, n_positions(run) - 1)


def lower_side(run) -> bool:
    """Which triangle a triangle-storage run works in.

    ``run.params["lower"]`` when recorded; otherwise the triangle that
    changed between the initial and the final array (lower by default).
    """
    if "lower" in run.params:
        return bool(run.params["lower"])
    if "uplo" in run.params:
        return str(run.params["uplo"]).upper().startswith("L")
    first, last = run.initial, final_array(run)
    if first is None or last is None or is_packed(first) or first.shape != last.shape:
        return True
    changed = first != last
    return not (np.triu(changed, 1).any() and not np.tril(changed, -1).any())


def packed_layout(run, array) -> packed.Layout | None:
    """The RFP layout of a packed run's buffer (None for a square matrix)."""
    if not is_packed(array):
        return None
    return _layout(packed.order_from_size(array.size), lower_side(run))


@functools.lru_cache(maxsize=4)
def _layout(n: int, lower: bool) -> packed.Layout:
    """One Layout per order and triangle (a view redraws at every position)."""
    return packed.Layout(n, lower)


def order(run) -> int:
    """The matrix order n of a run (from its arrays, else its shape)."""
    arr = run.initial if run.initial is not None else final_array(run)
    if arr is not None:
        return packed.order_from_size(arr.size) if is_packed(arr) else as_matrix(arr).shape[0]
    return int(run.shape[0]) if run.shape else 0


def full_view(run, array):
    """The array as an n×n matrix: a packed buffer is unpacked (NaN off its triangle)."""
    if array is None or not is_packed(array):
        return array
    layout = packed_layout(run, array)
    rfp, _ = packed.orient(array)
    return layout.unpack(rfp)


# ---- per-step overlays -----------------------------------------------------------------

@dataclass
class Overlays:
    """What to outline on the matrix at one position (cells as (row, col), half-open ranges)."""

    active: tuple | None = None        # (row0, row1, col0, col1) the step touched
    pivot: tuple | None = None         # (row, col)
    multipliers: tuple | None = None   # (row0, row1, col0, col1): L column(s) just computed
    swapped_rows: list = field(default_factory=list)
    finished: int = 0                  # columns of the factor that are final
    storage: str = "full"              # "lu", "lower", "upper", "full"
    failed: bool = False               # the pivot is where the run failed
    reads: list = field(default_factory=list)   # regions the step reads besides its own
    cells: list = field(default_factory=list)   # single cells the step reads (a diagonal)
    consumed: int = 0                  # an operand's leading rows already used up


def finished_by_position(run) -> np.ndarray:
    """Columns of the factor that are final at each position (non-decreasing); of a
    sparse run, the columns whose supernodes its steps have reached."""
    structure = sparse.structure(run)
    if structure is not None:
        return sparse.columns_by_position(run, structure)
    disp = registry.display(run.algorithm)
    out = np.zeros(n_positions(run), dtype=np.int64)
    for i, s in enumerate(run.steps):
        out[i + 1] = max(out[i], disp.finished(s))
    return out


def finished_columns(run, position: int) -> int:
    return int(finished_by_position(run)[position])


def _multipliers(region, pivot, finished: int, storage: str):
    """The L column(s) just computed below the pivot (U row(s) right of it for "upper")."""
    if region is None or pivot is None:
        return None
    r, c = pivot
    if storage == "upper":
        last = max(finished, r + 1)
        return (r, last, c + 1, region[3]) if c + 1 < region[3] else None
    last = max(finished, c + 1)
    return (r + 1, region[1], c, last) if r + 1 < region[1] else None


def overlays(run, position: int) -> Overlays:
    """The overlays at ``position`` in the coordinates of the n×n matrix.

    For a packed run the step's region and pivot are where the entries are
    stored, in the buffer's coordinates; the matrix overlays then come from
    ``info["logical_region"]`` when the step recorded one and from the
    pivot's twin (see :func:`buffer_overlays` for the buffer side).  A step
    whose ``info["matrix"]`` names another operand (AD²Aᵀ scaling a column
    of A) outlines nothing.
    """
    disp = registry.display(run.algorithm)
    storage = disp.storage
    if storage == "triangle":
        storage = "lower" if lower_side(run) else "upper"
    ov = Overlays(storage=storage, finished=finished_columns(run, position),
                  failed=bool(run.error) and position == failed_position(run))
    step = step_at(run, position)
    if step is None or "matrix" in step.info:
        return ov
    if disp.reads is not None:
        ov.reads = [tuple(r) for r in disp.reads(run, step)]
    if disp.cells is not None:
        ov.cells = list(disp.cells(run, step))
    array = matrix_at(run, position)
    if is_packed(array):
        lay = packed_layout(run, array)
        if step.pivot is not None:
            ov.pivot = lay.twin_of_rfp(*step.pivot)
        if "logical_region" not in step.info:
            return ov
        ov.active = tuple(step.info["logical_region"])
    else:
        ov.active, ov.pivot = step.region, step.pivot
    if disp.multipliers:
        ov.multipliers = _multipliers(ov.active, ov.pivot, disp.finished(step), storage)
    if ov.cells:                     # the cells it reads are the picture, not the frame
        ov.active = None
    failure = disp.failure(run) if ov.failed and disp.failure is not None else None
    if failure is not None:          # the cell where it broke down, not the panel's corner
        ov.pivot = failure[1]
    rows = set()
    for a, b in step.info.get("swaps", ()):
        rows.update((int(a), int(b)))
    ov.swapped_rows = sorted(rows)
    return ov


def buffer_overlays(run, position: int) -> tuple[Overlays, list]:
    """(overlays, boxes) of a packed run's step in the buffer's (LAPACK picture) coordinates.

    ``boxes`` are the parts of the region (``info["regions"]``; the whole
    region when not recorded).
    """
    ov = Overlays()
    step = step_at(run, position)
    if step is None or "matrix" in step.info:
        return ov, []
    ov.active, ov.pivot = step.region, step.pivot
    boxes = [tuple(b) for b in step.info.get("regions", [step.region])]
    return ov, boxes


def inputs(run) -> dict:
    """The operands a run keeps beside its working array (AD²Aᵀ: ``A`` and ``d2``), as
    2-D float64 arrays; {} when none were kept or they are not numeric tables."""
    kept = run.metrics.get("inputs") if isinstance(run.metrics, dict) else None
    out = {}
    for name, value in (kept.items() if isinstance(kept, dict) else ()):
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if arr.ndim == 2 and arr.size:
            out[str(name)] = arr
    return out


def consumed_rows(run, position: int) -> int:
    """Rows of an update's V already used up at ``position``: those whose rotations have
    been formed (every row before the last row of V a step read to form them)."""
    disp = registry.display(run.algorithm)
    if disp.operand_rows is None:
        return 0
    done = 0
    for s in run.steps[:position]:
        if "v_rows" in s.info:
            done = max(done, int(s.info["v_rows"][1]))
    return done


def input_overlays(run, position: int, name: str, shape) -> Overlays:
    """What to outline on input ``name`` at ``position``: the region of a step that works
    on it (``info["matrix"] == name``); for a one-column input (a diagonal) the rows of
    the step's columns; for an update's V the rows the step reads, the rows already
    consumed greyed."""
    step = step_at(run, position)
    disp = registry.display(run.algorithm)
    if name == "V" and disp.operand_rows is not None:
        ov = Overlays(consumed=consumed_rows(run, position))
        rows = disp.operand_rows(run, step) if step is not None else None
        if rows is not None:
            ov.active = (rows[0], rows[1], 0, shape[1])
        return ov
    on = step.info.get("matrix") if step is not None else None
    if on is None:
        return Overlays()
    r0, r1, c0, c1 = step.region
    if on == name:
        return Overlays(active=(r0, r1, c0, c1))
    if on == "A" and name == "d2":            # the weights of A's columns
        return Overlays(active=(c0, c1, 0, shape[1]))
    return Overlays()


# ---- numbers ---------------------------------------------------------------------------

def piv_from_swaps(run) -> np.ndarray | None:
    """LAPACK-style 0-based ``piv`` rebuilt from the steps' recorded swaps (None when a
    swap names a row outside the matrix)."""
    n = order(run)
    piv = np.arange(n, dtype=np.int64)
    for s in run.steps:
        for a, b in s.info.get("swaps", ()):
            if not (0 <= a < n and 0 <= b < n):
                return None
            piv[int(a)] = int(b)
    return piv


def pivot_value(run, position: int):
    """(value, (row, col)) of the current step's pivot after the step, or None.

    The position is in the n×n matrix also for a packed run, whose pivot is
    recorded where it is stored and mapped back through the RFP layout.
    """
    step = step_at(run, position)
    if step is None or step.pivot is None:
        return None
    m = matrix_at(run, position)
    if m is None:
        return None
    r, c = step.pivot
    if is_packed(m):
        rfp, _ = packed.orient(m)
        twin = packed_layout(run, m).twin_of_rfp(r, c)
        return None if twin is None else (float(rfp[r, c]), twin)
    m = as_matrix(m)
    if not (0 <= r < m.shape[0] and 0 <= c < m.shape[1]):
        return None
    return float(m[r, c]), (r, c)


def smallest_pivot(run) -> float | None:
    """min |pivot| over the run's steps; for a finished LU also the last diagonal entry of
    U, which no step pivots on.  None when no step has a pivot or values are missing."""
    values = [abs(pv[0]) for p in range(1, n_positions(run))
              if (pv := pivot_value(run, p)) is not None]
    last = final_array(run)
    if registry.display(run.algorithm).storage == "lu" and not run.error and is_square(last):
        values.append(abs(float(last[-1, -1])))
    return min(values) if values else None


def growth_by_position(run) -> np.ndarray | None:
    """Wilkinson's growth factor after each position: max |a_ij^(k)| / max |a_ij|.

    Taken over the entries that are not multipliers (the L part of finished
    columns is excluded) and maximised over the positions so far.  None when
    it means nothing for this algorithm or the snapshots are missing.
    """
    if not registry.display(run.algorithm).growth or not is_square(run.initial):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        return _growth(run)


def _growth(run) -> np.ndarray | None:
    a0 = np.abs(np.asarray(run.initial, dtype=np.float64))
    amax = float(a0.max()) if a0.size else 0.0
    if amax == 0.0:
        return None
    n = a0.shape[0]
    rows, cols = np.indices((n, n))
    out = np.empty(n_positions(run))
    best = 0.0
    finished = finished_by_position(run)
    for p in range(n_positions(run)):
        m = matrix_at(run, p)
        t = finished[p]
        keep = ~((rows > cols) & (cols < t))
        best = max(best, float(np.abs(np.asarray(m, np.float64)[keep]).max()))
        out[p] = best / amax
    return out


def backward_error(run) -> float | None:
    """The backward error (units of n·ε) of a finished run, from its first and last arrays.

    LU: ‖PA − LU‖∞/(n‖A‖∞ε) with P from the recorded swaps; Cholesky:
    ‖A − LLᵀ‖∞/(n‖A‖∞ε).  None for an unfinished or failed run, a run
    without snapshots, or an algorithm with no such measure.
    """
    if "backward_error" in run.metrics:
        return float(run.metrics["backward_error"])
    kind = registry.display(run.algorithm).backward_error
    if kind is None or run.error or run.initial is None:
        return None
    first, last = run.initial, final_array(run)
    if last is None or not (is_square(first) or is_packed(first)):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        return _backward_error(run, kind, first, last)


def _backward_error(run, kind: str, first, last) -> float | None:
    if kind in ("update", "inverse") and not (is_square(first) and is_square(last)):
        return None
    if kind == "update":
        return _update_error(run, first, last)
    if kind == "inverse":
        return _inverse_error(run, first, last)
    if kind == "lu":
        piv = piv_from_swaps(run)
        if piv is None or not is_square(first):
            return None
        return accuracy.lu_backward_error(first, last, piv)
    lower = lower_side(run)
    a, c = full_view(run, first), full_view(run, last)
    a = np.where(np.isnan(a), a.T, a)                # symmetric from its stored triangle
    c = np.nan_to_num(c)
    return accuracy.cholesky_backward_error(a, c, lower)


def _triangle(run, m) -> np.ndarray:
    """The factor's lower triangle (the stored one transposed for an upper run)."""
    m = np.asarray(m, dtype=np.float64)
    return np.tril(m) if lower_side(run) else np.triu(m).T


def _update_error(run, first, last) -> float | None:
    """‖(A ± V·Vᵀ) − L̃·L̃ᵀ‖∞/(n‖A ± V·Vᵀ‖∞ε), A = L·Lᵀ from the factor the run started
    from and V the operand it kept (None without it)."""
    v = inputs(run).get("V")
    if v is None or v.shape[0] != first.shape[0]:
        return None
    low = _triangle(run, first)
    sign = -1.0 if run.params.get("sign") == -1 else 1.0
    target = low @ low.T + sign * (v @ v.T)
    return accuracy.cholesky_backward_error(target, np.asarray(last), lower_side(run))


def _inverse_error(run, first, last) -> float:
    """‖A·X − I‖∞/(n‖A‖∞‖X‖∞ε): A the triangle (trtri) or L·Lᵀ (cho_inverse), X the
    result, made symmetric from its triangle where only one was kept."""
    low = _triangle(run, first)
    x = np.asarray(last, dtype=np.float64)
    if run.algorithm == "trtri":
        inv = np.tril(x) if lower_side(run) else np.triu(x).T
        return accuracy.inverse_error(low, inv.astype(last.dtype))
    tri = np.tril(x) if lower_side(run) else np.triu(x)
    x = tri + tri.T - np.diag(np.diag(tri))
    return accuracy.inverse_error(low @ low.T, x.astype(last.dtype))


# ---- time ------------------------------------------------------------------------------

def step_times_ns(run) -> np.ndarray:
    """Device time of each step (sum of its kernels), ns."""
    return np.array([s.device_ns for s in run.steps], dtype=np.float64)


def step_gflops(run) -> np.ndarray:
    """GFLOP/s of each step from its flop count (NaN where no time was recorded)."""
    t = step_times_ns(run)
    fl = np.array([s.flops for s in run.steps], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, fl / t, np.nan)


def run_gflops(run) -> float | None:
    t = run.device_ns
    return run.flops / t if t > 0 and run.flops > 0 else None


def kernel_origin(run) -> int:
    """The time origin (ns) of a run's timeline: its first kernel's queued time."""
    ks = run.kernels
    return min(k.queued for k in ks) if ks else 0


def slow_kernels(run) -> list:
    """Indices into ``run.kernels`` of kernels much slower than others of their name."""
    ks = run.kernels
    by_name: dict = {}
    for k in ks:
        by_name.setdefault(k.name, []).append(k.duration_ns)
    median = {name: float(np.median(d)) for name, d in by_name.items()}
    return [i for i, k in enumerate(ks)
            if len(by_name[k.name]) > 2 and k.duration_ns >= SLOW_MIN_NS
            and k.duration_ns > SLOW_FACTOR * median[k.name]]


def markers(run) -> list:
    """(position, kind) for the scrub bar: "swap", "slow" (kernel), "fail" (the failing step)."""
    out = []
    for s in run.steps:
        if s.info.get("swaps"):
            out.append((s.index + 1, "swap"))
    ks = run.kernels
    for i in slow_kernels(run):
        out.append((ks[i].step + 1, "slow"))
    failed = failed_position(run)
    if failed is not None:
        out.append((failed, "fail"))
    return out


def bad_pivot(run, value: float) -> bool:
    """A pivot the algorithm cannot go on with: zero or not finite, and for an
    algorithm that needs positive pivots (Cholesky) also negative."""
    if value == 0.0 or not np.isfinite(value):
        return True
    return registry.display(run.algorithm).positive_pivots and value < 0.0


def failed_position(run) -> int | None:
    """Where a failed run broke: where its display says (an update: the step that formed
    the rotations of the order its error names), else the first position whose pivot is
    bad (:func:`bad_pivot`), else its last step.  None for a run that finished."""
    if not run.error or not run.steps:
        return None
    disp = registry.display(run.algorithm)
    if disp.failure is not None:
        found = disp.failure(run)
        if found is not None:
            return found[0]
    for p in range(1, n_positions(run)):
        pv = pivot_value(run, p)
        if pv is not None and bad_pivot(run, pv[0]):
            return p
    return len(run.steps)


def kernel_items(kernel) -> int:
    """Work-items the kernel's NDRange launched (0 for copies)."""
    return int(np.prod(kernel.global_size)) if kernel.global_size else 0


def region_cells(region) -> int:
    r0, r1, c0, c1 = region
    return max(r1 - r0, 0) * max(c1 - c0, 0)


CSV_HEADER = ("run", "algorithm", "variant", "device", "step", "phase", "region", "kernel",
              "queued_ns", "submit_ns", "start_ns", "end_ns", "launch_us", "device_us",
              "global_size", "local_size", "step_flops", "step_gflops")


def timing_rows(recording) -> list:
    """One row per kernel (see :data:`CSV_HEADER`), times relative to each run's origin."""
    rows = []
    for ri, run in enumerate(recording.runs):
        t0 = kernel_origin(run)
        for s in run.steps:
            gf = s.flops / s.device_ns if s.device_ns > 0 else ""
            for k in s.kernels:
                rows.append((ri, run.algorithm, run.variant, run.device, s.index, s.phase,
                             " ".join(map(str, s.region)), k.name, k.queued - t0,
                             k.submit - t0, k.start - t0, k.end - t0,
                             f"{k.launch_ns / 1e3:.3f}", f"{k.duration_ns / 1e3:.3f}",
                             "x".join(map(str, k.global_size or ())),
                             "x".join(map(str, k.local_size or ())), s.flops,
                             f"{gf:.4f}" if gf != "" else ""))
    return rows


def value_range(run) -> float:
    """max |a_ij| over every kept array of the run (the colour scale's half-width)."""
    arrays = [a for a in [run.initial, run.result, *run.snapshots] if a is not None]
    best = 0.0
    for a in arrays:
        a = np.asarray(a, dtype=np.float64)
        finite = a[np.isfinite(a)]
        if finite.size:
            best = max(best, float(np.abs(finite).max()))
    return best or 1.0
