"""Hand-made runs for viewer tests that need exact control (no device involved), and
recording files edited on purpose."""

import json

import numpy as np

from oclla.trace import KernelRecord, Recording, Run, Step


def synthetic_run(n=5, algorithm="lu", variant="test", durations=None, swaps=None,
                  error=None) -> Run:
    """A hand-made per-pivot run of order n with known regions, pivots and kernel times.

    Step k (k = 0 … n−2) has region (k, n, k, n), pivot (k, k), one kernel
    "k_elim" starting at 1000·k µs lasting ``durations[k]`` ns (default 1000),
    the snapshot equal to k+1 everywhere; ``swaps`` maps step -> [(a, b)].
    """
    durations = durations or [1000] * (n - 1)
    swaps = swaps or {}
    run = Run(algorithm, variant, (n, n), "float64", "test device", {}, error=error)
    run.initial = np.zeros((n, n))
    for k in range(n - 1):
        t0 = 1_000_000 * k
        kern = KernelRecord("k_elim", t0, t0 + 100, t0 + 500, t0 + 500 + durations[k],
                            (64,), (64,), k)
        info = {"swaps": swaps[k]} if k in swaps else {}
        run.steps.append(Step(algorithm, k, "eliminate", (k, n, k, n), (k, k), 10.0 * (n - k),
                              0.0, info, [kern], k))
        run.snapshots.append(np.full((n, n), float(k + 1)))
    run.result = run.snapshots[-1]
    return run


def synthetic_recording(*runs) -> Recording:
    rec = Recording()
    rec.runs.extend(runs or [synthetic_run()])
    return rec


def zero_pivot_matrix() -> np.ndarray:
    """A = L·U with small integer factors and U[2, 2] = 0: elimination without pivoting
    meets an exactly zero pivot in column 2 (all arithmetic exact)."""
    low = np.array([[1, 0, 0, 0, 0], [2, 1, 0, 0, 0], [-1, 3, 1, 0, 0], [1, -2, 2, 1, 0],
                    [3, 1, -1, 2, 1]], dtype=float)
    up = np.array([[2, 1, -1, 3, 1], [0, 1, 2, -1, 2], [0, 0, 0, 1, 1], [0, 0, 0, 2, -1],
                   [0, 0, 0, 0, 3]], dtype=float)
    return low @ up


def save_tampered(rec, path, change, pick=lambda runs: runs[-1]):
    """Save ``rec`` to ``path``, then rewrite the file with ``change(header_run)`` applied
    to the JSON header's run that ``pick(header_runs)`` chooses (default: the last)."""
    rec.save(path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays["meta"].tobytes())
    change(pick(header["runs"]))
    arrays["meta"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)
