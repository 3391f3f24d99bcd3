"""The faithful per-pivot LU's trace: snapshots show L's finished columns and the live U."""

import numpy as np
import pytest

import oclla

POST_A = [[2, 4, 3, 5], [-4, -7, -5, 8], [6, 8, 2, 9], [4, 9, -2, 14]]


def reference_snapshots(a):
    """Host elimination without pivoting: the packed matrix after each pivot column."""
    u = np.array(a, dtype=np.float64)
    n = u.shape[0]
    l = np.zeros_like(u)
    out = []
    for col in range(n - 1):
        l[col + 1:, col] = u[col + 1:, col] / u[col, col]
        u[col + 1:, col:] -= np.outer(l[col + 1:, col], u[col, col:])
        packed = u.copy()
        for c in range(col + 1):
            packed[c + 1:, c] = l[c + 1:, c]
        out.append(packed)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_snapshots_follow_the_post_step_by_step(dtype):
    a = np.array(POST_A, dtype=dtype)
    with oclla.record(snapshots=True) as rec:
        lu, _ = oclla.lu_factor(a, method="pivot", variant="faithful")
    run = rec.runs[-1]
    assert [s.phase for s in run.steps] == ["setup"] + ["eliminate"] * 3 + ["combine"]
    np.testing.assert_array_equal(run.snapshot_at(-1), a)
    np.testing.assert_array_equal(run.snapshot_at(0), a)         # L = I, U = A
    for k, expected in enumerate(reference_snapshots(a)):
        assert run.steps[k + 1].pivot == (k, k)
        np.testing.assert_array_equal(run.snapshot_at(k + 1), expected)
    np.testing.assert_array_equal(run.snapshot_at(4), lu)
    assert [k.name for k in run.steps[4].kernels] == ["combine"]
