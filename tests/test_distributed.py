"""Tile Cholesky on Dask (oclla.distributed).

One LocalCluster of two worker processes (one thread each) on the default device for
the module: the same factor as the in-process run (bit for bit: the same kernels on
the same device) and as the tiled factorization, backward errors below 30 in both
dtypes on orders that straddle the tile, both triangles, dask-array input and output,
LAPACK's order for a failing pivot, the worker plugin; every bad input rejected
before any task with the caller's array untouched.  The symbolic DAG: task counts,
dependencies in order, flops that add up to LAPACK's count.
"""

import numpy as np
import pyopencl.array as cl_array
import pytest
from numpy.linalg import LinAlgError

import oclla
from oclla import accuracy, tiled
from oclla import distributed as dd
from oclla.cholesky import cholesky_flops

from linalg_helpers import spd

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        c.register_plugin(dd.OpenCLDevice())
        yield c


def test_same_factor_on_two_workers_as_in_process(client, queue, dtype):
    n, tile = 97, 32                            # 4 x 4 tiles, the last one 1 wide
    a = spd(n, dtype)
    kept = a.copy()
    runs = []
    l = dd.cholesky(a, lower=True, tile=tile, client=client, runs=runs)
    np.testing.assert_array_equal(a, kept)
    assert accuracy.cholesky_backward_error(a, l, True) < accuracy.THRESHOLD
    np.testing.assert_array_equal(l, dd.cholesky(a, lower=True, tile=tile))
    ref = tiled.factor_host(a, lower=True, overwrite_a=False, check_finite=True, clean=True,
                            block=None, queue=queue, tile=tile)
    np.testing.assert_allclose(l, ref, rtol=0, atol=1e-4 if dtype == np.float32 else 1e-12)
    t = -(-n // tile)
    assert sorted(r.task for r in runs) == sorted(dd.task_graph(t))
    workers = set(client.scheduler_info()["workers"])
    assert {r.lane for r in runs} <= workers
    assert all(r.stop >= r.start for r in runs)


def test_upper_factor_and_dask_array_in_and_out(client):
    a = spd(75, np.float64)
    u = dd.cholesky(a, tile=20, client=client)
    assert accuracy.cholesky_backward_error(a, u, False) < accuracy.THRESHOLD
    assert not np.tril(u, -1).any()
    lazy = dd.cholesky(da.from_array(a, chunks=30), lower=True, tile=20)
    assert isinstance(lazy, da.Array) and lazy.chunks[0] == (20, 20, 20, 15)
    np.testing.assert_array_equal(client.compute(lazy).result(), u.T)


def test_failing_pivot_names_lapacks_order(client):
    a = spd(50, np.float64)
    a[40, 40] = -100.0
    kept = a.copy()
    with pytest.raises(LinAlgError, match="order 41 is not positive definite"):
        dd.cholesky(a, lower=True, tile=16, client=client)
    np.testing.assert_array_equal(a, kept)
    with pytest.raises(LinAlgError, match="order 41 is not"):
        client.compute(dd.cholesky(da.from_array(a, chunks=16), tile=16)).result()


def test_each_worker_holds_its_queue(client):
    def queue_name(dask_worker):
        return dd._queues[dask_worker.address].device.name
    names = client.run(queue_name)
    assert len(names) == 2 and set(names.values()) == {oclla.get_queue().device.name}


def test_plugin_picks_a_device_per_worker_number(monkeypatch):
    picked = []
    monkeypatch.setattr(dd, "get_queue", lambda spec: picked.append(spec) or spec)

    class Worker:
        def __init__(self, name):
            self.name, self.address = name, f"tcp://w{name}"
    plugin = dd.OpenCLDevice(["a", "b"])
    for w in range(3):
        plugin.setup(Worker(w))
    assert picked == ["a", "b", "a"] and dd._queues["tcp://w1"] == "b"
    plugin.teardown(Worker(1))
    assert "tcp://w1" not in dd._queues
    with pytest.raises(ValueError, match="empty"):
        dd.OpenCLDevice([]).setup(Worker(0))


@pytest.mark.parametrize("bad, error, match", [
    (np.ones((3, 4)), ValueError, "square"),
    (np.ones((2, 2, 2)), ValueError, "square"),
    (np.ones((3, 3), np.complex128), TypeError, "float32 or float64"),
    (np.ones((3, 3), np.int64), TypeError, "float32 or float64"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), ValueError, "infs or NaNs"),
    (np.array([[np.inf, 0.0], [0.0, 1.0]]), ValueError, "infs or NaNs"),
])
def test_bad_inputs(bad, error, match):
    kept = bad.copy()
    with pytest.raises(error, match=match):
        dd.cholesky(bad, tile=2)
    np.testing.assert_array_equal(bad, kept)


@pytest.mark.parametrize("tile", [0, -3, 1.5, True, None, "8"])
def test_bad_tile(tile):
    with pytest.raises(ValueError, match="tile"):
        dd.cholesky(np.eye(4), tile=tile)


def test_device_array_and_lazy_runs_refused(queue):
    with pytest.raises(TypeError, match="pyopencl"):
        dd.cholesky(cl_array.to_device(queue, np.eye(4)), tile=2)
    with pytest.raises(ValueError, match="runs"):
        dd.cholesky(da.eye(4, chunks=2), tile=2, runs=[])
    nan = da.from_array(np.where(np.eye(4) > 0, np.nan, 0.0), chunks=2)
    with pytest.raises(ValueError, match="infs or NaNs"):
        dd.cholesky(nan, tile=2).compute()


def test_empty_and_one_tile():
    assert dd.cholesky(np.zeros((0, 0)), tile=4).shape == (0, 0)
    a = spd(7, np.float32)
    l = dd.cholesky(a, tile=64, lower=True)
    assert accuracy.cholesky_backward_error(a, l, True) < accuracy.THRESHOLD


@pytest.mark.parametrize("n, tile", [(97, 32), (64, 16), (5, 7), (30, 1)])
def test_task_graph_counts_order_and_flops(n, tile):
    t = -(-n // tile)
    graph = dd.task_graph(t)
    kinds = [task.kind for task in graph]
    assert [kinds.count(k) for k in dd.KINDS] == [t, t * (t - 1) // 2, t * (t - 1) // 2,
                                                  t * (t - 1) * (t - 2) // 6]
    seen = set()
    for task, needs in graph.items():
        assert set(needs) <= seen, task        # listed after every task it needs
        seen.add(task)
    assert sum(dd.task_flops(task, n, tile) for task in graph) == cholesky_flops(n)
    with pytest.raises(ValueError):
        dd.task_graph(-1)


# ---- LU with partial pivoting -------------------------------------------------------------

def test_lu_on_two_workers_matches_one_process_and_scipy(client, dtype):
    import scipy.linalg as sl
    a = np.random.default_rng(5).standard_normal((97, 97)).astype(dtype)
    kept = a.copy()
    lu, piv = dd.lu_factor(a, tile=32, client=client)
    np.testing.assert_array_equal(a, kept)
    assert lu.dtype == dtype and piv.dtype == np.int32
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])      # no ties in random data
    here = dd.lu_factor(a, tile=32)
    np.testing.assert_array_equal(lu, here[0])
    np.testing.assert_array_equal(piv, here[1])


@pytest.mark.parametrize("n, tile", [(1, 4), (5, 7), (17, 2), (40, 40)])
def test_lu_orders_and_tiles(n, tile):
    a = np.random.default_rng(n).standard_normal((n, n))
    lu, piv = dd.lu_factor(a, tile=tile)
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    assert dd.lu_factor(np.zeros((0, 0)), tile=3)[0].shape == (0, 0)


def test_lu_singular_warns_with_lapacks_info():
    from scipy.linalg import LinAlgWarning
    a = np.random.default_rng(1).standard_normal((20, 20))
    a[:, 13] = 0.0                                # column 13 zero: U[13, 13] = 0 exactly
    with pytest.warns(LinAlgWarning, match="Diagonal number 14 is exactly zero"):
        lu, piv = dd.lu_factor(a, tile=8)
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD


def test_lu_bad_inputs():
    with pytest.raises(ValueError, match="square"):
        dd.lu_factor(np.ones((3, 4)), tile=2)
    with pytest.raises(ValueError, match="infs or NaNs"):
        dd.lu_factor(np.array([[1.0, np.nan], [0.0, 1.0]]), tile=2)
    with pytest.raises(TypeError, match="float32 or float64"):
        dd.lu_factor(np.eye(3, dtype=np.int32), tile=2)
    with pytest.raises(TypeError, match="numpy array"):
        dd.lu_factor(da.eye(4, chunks=2), tile=2)
    with pytest.raises(ValueError, match="tile"):
        dd.lu_factor(np.eye(3), tile=0)
