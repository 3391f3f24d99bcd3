"""Tiled Cholesky and LU over several devices (oclla.multi_device, oclla.multi_device_lu)
on PoCL: two sub-devices of the CPU in one context (or, where PoCL cannot partition, two
queues on the device), a third queue on one of them for a three-way round-robin;
backward errors below 30 on orders straddling the tile, both dtypes and triangles,
scipy's pivots; LAPACK's order on failure and info for a zero pivot; a timeline lane per
device; bad input."""

import numpy as np
import pyopencl as cl
import pytest
from numpy.linalg import LinAlgError

import oclla
import scipy.linalg as sl
from scipy.linalg import LinAlgWarning

from oclla import accuracy, multi_device as md, multi_device_lu as mdl

from linalg_helpers import spd


@pytest.fixture(scope="module")
def queues():
    device = oclla.get_queue().device
    try:
        subs = device.create_sub_devices([cl.device_partition_property.EQUALLY, 1])[:2]
    except cl.Error:
        subs = []
    return md.context_queues(subs if len(subs) == 2 else [device, device])


@pytest.mark.parametrize("n, tile", [(1, 16), (47, 16), (64, 16), (61, 20)])
@pytest.mark.parametrize("lower", [True, False])
def test_two_devices(queues, dtype, n, tile, lower):
    a = spd(n, dtype)
    before = a.copy()
    c = md.cholesky(a, queues=queues, tile=tile, lower=lower)
    np.testing.assert_array_equal(a, before)
    assert accuracy.cholesky_backward_error(a, c, lower) < accuracy.THRESHOLD
    assert not (np.triu(c, 1) if lower else np.tril(c, -1)).any()


def test_three_queues_and_the_factor_on_the_devices(queues):
    a = spd(70, np.float64)
    mt = md.MultiTiles.from_numpy(a, queues=queues + queues[:1], tile=16)
    assert [mt.owner(p) for p in range(len(mt.panels))] == [0, 1, 2, 0, 1]
    mt.factor()
    c = mt.to_numpy()
    assert accuracy.cholesky_backward_error(a, c, True) < accuracy.THRESHOLD
    np.testing.assert_allclose(c, np.linalg.cholesky(a), atol=1e-12)


@pytest.mark.parametrize("order", [3, 20, 50])
def test_failure_names_lapack_order(queues, order):
    a = spd(50, np.float32)
    a[order - 1, order - 1] = -1.0
    with pytest.raises(LinAlgError, match=f"leading minor of order {order} is not"):
        md.cholesky(a, queues=queues, tile=16)


def test_a_lane_per_device(queues):
    with oclla.record() as rec:
        md.cholesky(spd(40, np.float32), queues=queues, tile=16)
    run, = rec.runs
    assert run.variant == "multi_device"
    lanes = {k.device for s in run.steps for k in s.kernels}
    devices = {q.device.int_ptr for q in queues}      # two queues on one device: one lane
    assert len(lanes) == len(devices) and all(lane.endswith(("[0]", "[1]")) for lane in lanes)
    assert {s.phase for s in run.steps} >= {"send", "syrk", "trsm"}


@pytest.mark.parametrize("factor", [md.cholesky, mdl.lu_factor], ids=["cholesky", "lu"])
def test_lanes_end_with_the_multi_device_call(factor):
    """The per-device lanes are the multi-device run's own: after a run on two queues of
    one device (as on a GPU that cannot be partitioned), a recording on that device puts
    its kernels on the run's own device again, not on the lane of the last queue."""
    device = oclla.get_queue().device
    factor(spd(40, np.float32), queues=md.context_queues([device, device]), tile=16)
    with oclla.record() as rec:
        oclla.cholesky(spd(40, np.float32), queue=oclla.get_queue())
    assert {k.device for k in rec.runs[-1].kernels} == {""}


def test_bad_input(queues):
    a = spd(20, np.float32)
    with pytest.raises(ValueError, match="one context"):
        md.cholesky(a, queues=[queues[0], oclla.get_queue()])
    with pytest.raises(ValueError, match="at least one"):
        md.cholesky(a, queues=[])
    with pytest.raises(ValueError, match="square"):
        md.cholesky(a[:5], queues=queues)
    bad = a.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        md.cholesky(bad, queues=queues)
    with pytest.raises(TypeError):
        md.cholesky(a.astype(np.int64), queues=queues)
    with pytest.raises(ValueError, match="tile"):
        md.MultiTiles(20, np.float32, queues=queues, tile=-3)


# ---- LU ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n, tile", [(1, 16), (47, 16), (64, 16), (61, 20)])
def test_lu_two_devices(queues, dtype, n, tile):
    a = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
    before = a.copy()
    lu, piv = mdl.lu_factor(a, queues=queues, tile=tile)
    np.testing.assert_array_equal(a, before)
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])


def test_lu_three_queues_and_a_zero_pivot(queues):
    a = np.random.default_rng(3).standard_normal((70, 70))
    a[:, 37] = 0.0
    with pytest.warns(LinAlgWarning, match="Diagonal number 38 is exactly zero"):
        lu, piv = mdl.lu_factor(a, queues=queues + queues[:1], tile=16)
    with pytest.warns(LinAlgWarning):
        np.testing.assert_array_equal(piv, sl.lu_factor(a)[1])
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD
    with oclla.record() as rec:
        mdl.lu_factor(a[:40, :40] + np.eye(40), queues=queues, tile=16)
    lanes = {k.device for s in rec.runs[0].steps for k in s.kernels}
    assert rec.runs[0].variant == "multi_device" and rec.runs[0].algorithm == "lu"
    assert len(lanes) == len({q.device.int_ptr for q in queues})
    assert all(lane.endswith(("[0]", "[1]")) for lane in lanes)


def test_lu_bad_input(queues):
    with pytest.raises(ValueError, match="square"):
        mdl.lu_factor(np.ones((3, 4)), queues=queues)
    with pytest.raises(ValueError, match="full storage"):
        mdl.factor_lu_multi(md.MultiTiles(8, np.float32, queues=queues, tile=4))
    with pytest.raises(ValueError, match="lower-triangle panels"):
        md.factor_multi(md.MultiTiles(8, np.float32, queues=queues, tile=4, full=True))


# ---- the relay ---------------------------------------------------------------------------


@pytest.mark.parametrize("nbytes, row, most, least", [(0, 8, 4, 1), (100, 8, 4, 10),
                                                       (1000, 7, 4, 10), (35, 10, 4, 10),
                                                       (35, 10, 4, 40), (4096, 64, 3, 1)])
def test_chunks_split_whole_rows(monkeypatch, nbytes, row, most, least):
    """Whole rows, in order, at most CHUNKS, each at least CHUNK_BYTES; a head of its own."""
    monkeypatch.setattr(md, "CHUNKS", most)
    monkeypatch.setattr(md, "CHUNK_BYTES", least)
    pieces = md.chunks(nbytes, row)
    assert pieces[0][0] == 0 and pieces[-1][1] == nbytes
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
    assert 1 <= len(pieces) <= most
    assert all(lo % row == 0 for lo, _ in pieces)
    if len(pieces) > 1:
        assert all(hi - lo >= least for lo, hi in pieces[:-1])
    expected = max(1, min(most, nbytes // least, -(-nbytes // row)))
    assert len(pieces) == expected
    head = row * (nbytes // row // 2)
    headed = md.chunks(nbytes, row, head)
    if 0 < head < nbytes:
        assert headed[0] == (0, head)
        assert headed[1:] == [(head + lo, head + hi) for lo, hi in md.chunks(nbytes - head, row)]
    else:
        assert headed == pieces


def test_chunked_relay_and_its_trace(monkeypatch, queues):
    """Panels relayed in three row chunks (the last shorter): the factors are those of
    one piece, and the trace holds each chunk's download and uploads."""
    monkeypatch.setattr(md, "CHUNKS", 3)
    monkeypatch.setattr(md, "CHUNK_BYTES", 64)
    a = spd(61, np.float64)
    with oclla.record() as rec:
        c = md.cholesky(a, queues=queues, tile=20)
    assert accuracy.cholesky_backward_error(a, c, True) < accuracy.THRESHOLD
    names = [k.name for k in rec.runs[0].kernels]
    # panels 0, 1, 2 (61, 41, 21 rows x 20 columns) are sent: panels 0 and 1 as the 40
    # rows through the next panel's diagonal tile, then the rest (21 rows, 1 row) in 3
    # and 1 chunks; panel 2, whose head is all of it, in 3 chunks
    assert names.count("relay down") == 4 + 2 + 3 and names.count("relay up") == 9
    b = np.random.default_rng(5).standard_normal((61, 61))
    lu, piv = mdl.lu_factor(b, queues=queues, tile=20)
    assert accuracy.lu_backward_error(b, lu, piv) < accuracy.THRESHOLD
    np.testing.assert_array_equal(piv, sl.lu_factor(b)[1])


def test_the_exchange_is_made_once_and_freed(queues):
    mt = md.MultiTiles(40, np.float32, queues=queues, tile=16)
    ex = mt.exchange
    assert len(ex.recv) == 2 and all(len(r) == md.SLOTS for r in ex.recv)
    assert ex.relay is not None and ex.scratch is None and ex.relay_piv is None
    one = md.MultiTiles(40, np.float32, queues=queues[:1], tile=16, full=True)
    assert one.exchange.relay is None and len(one.exchange.scratch) == 1
    for m in (mt, one):
        m.release()
        assert m.exchange is None and m.panels == []
