"""lu_solve with a device ``piv``: checked on the device beside the solve.

An out-of-range entry (2**28, 1-based pivots, a negative entry) used to crash
the interpreter or return garbage; it must raise the ValueError a numpy piv
gets.  Every call with an invalid device piv runs in a subprocess, so a
regression that crashes fails its test instead of killing pytest.
"""

import pathlib
import subprocess
import sys

import numpy as np
import pyopencl.array as cl_array
import pytest

import oclla

REPO = pathlib.Path(__file__).resolve().parents[1]

# Solves with the device pivots of argv[1] ("big", "one_based" or "negative"),
# one line per call: "ValueError: <message>", or "returned" if no error came.
SCRIPT = r"""
import sys
import numpy as np
import pyopencl.array as cl_array
import oclla

q = oclla.get_queue()
n = 8
rng = np.random.default_rng(3)
a = rng.standard_normal((n, n)) + n * np.eye(n)
lu, piv = oclla.lu_factor(a, queue=q)
bad = {"big": piv.copy(), "one_based": piv + 1, "negative": piv.copy()}[sys.argv[1]]
bad[3] = {"big": 2 ** 28, "one_based": bad[3], "negative": -5}[sys.argv[1]]
b = rng.standard_normal((n, 2))
d_lu = cl_array.to_device(q, lu)
d_b = cl_array.to_device(q, b)
b_parent = cl_array.to_device(q, np.repeat(b, 2, axis=1))
parent = cl_array.to_device(q, np.repeat(bad.astype(np.int32), 2))    # a strided view
calls = [
    ("host b", lambda p: oclla.lu_solve((lu, p), b, queue=q)),
    ("trans", lambda p: oclla.lu_solve((d_lu, p), b[:, 0], trans=1, queue=q)),
    ("device b", lambda p: oclla.lu_solve((d_lu, p), d_b, queue=q).get()),
    ("no check_finite", lambda p: oclla.lu_solve((d_lu, p), d_b, check_finite=False,
                                                 queue=q).get()),
    ("overwrite_b", lambda p: oclla.lu_solve((d_lu, p), d_b.copy(), overwrite_b=True,
                                             queue=q).get()),
    ("overwrite_b view", lambda p: oclla.lu_solve((d_lu, p), b_parent[:, ::2],
                                                  overwrite_b=True, queue=q)),
]
for name, call in calls:
    for p in (cl_array.to_device(q, bad.astype(np.int32)), parent[::2]):
        try:
            call(p)
            print(name, "returned")
        except ValueError as exc:
            print(name, "ValueError:", exc)
assert (d_b.get() == b).all(), "b was written without overwrite_b"
assert (b_parent.get() == np.repeat(b, 2, axis=1)).all(), "a view of b was written"
print("done")
"""


@pytest.mark.parametrize("kind", ["big", "one_based", "negative"])
def test_invalid_device_piv_raises_instead_of_crashing(kind):
    run = subprocess.run([sys.executable, "-c", SCRIPT, kind], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr[-3000:]}"
    lines = run.stdout.splitlines()
    assert lines[-1] == "done"
    assert len(lines) == 13
    for line in lines[:-1]:
        assert "ValueError: piv entries must lie in [0, 8)" in line, line


def test_device_piv_views_solve_as_the_host_piv(queue, rng, dtype):
    n = 12
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, 3)).astype(dtype)
    lu, piv = oclla.lu_factor(a, queue=queue)
    expected = oclla.lu_solve((lu, piv), b, queue=queue)
    parent = np.zeros(3 * n + 5, np.int32) - 7          # invalid entries outside the view
    parent[4::3][:n] = piv
    d_parent = cl_array.to_device(queue, parent)
    reversed_parent = cl_array.to_device(queue, parent[::-1].copy())
    for d_piv in (d_parent[4::3][:n], reversed_parent[3 * n::-3][:n]):
        x = oclla.lu_solve((lu, d_piv), b, queue=queue)
        np.testing.assert_array_equal(x, expected)
    np.testing.assert_array_equal(d_parent.get(), parent)


def test_device_piv_of_the_wrong_kind(queue):
    lu, piv = oclla.lu_factor(np.eye(4) * 2, queue=queue)
    for bad in (cl_array.to_device(queue, piv.astype(np.int64)),
                cl_array.to_device(queue, piv[:3])):
        with pytest.raises(ValueError, match=r"int32 device array of shape \(4,\)"):
            oclla.lu_solve((lu, bad), np.ones(4), queue=queue)
