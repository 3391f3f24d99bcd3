"""Host arrays as large as the caller's matrix (oclla._validate.check_host_room): the
routes beyond the device's memory (tiles, streaming) refuse, before any work, a new host
array the machine has no room for, with MemoryError and how to do without it; the
caller's array is untouched, and the in-place forms still run."""

import numpy as np
import pytest

import oclla
from oclla import _validate, accuracy, out_of_core_lu, tiled, tiled_ad2at, tiled_lu, update_stream

from linalg_helpers import spd
from test_out_of_core_lu import general

GIB = 2 ** 30


def _meminfo() -> dict:
    with open("/proc/meminfo", encoding="ascii") as f:
        return {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in f)}


MEMINFO = """MemTotal:       32000000 kB
MemFree:         1000000 kB
MemAvailable:   20000000 kB
SwapTotal:       4000000 kB
SwapFree:        3000000 kB
"""


def test_available_memory_is_memavailable_and_free_swap(monkeypatch, tmp_path):
    path = tmp_path / "meminfo"
    path.write_text(MEMINFO)
    real_open = open
    monkeypatch.setattr(_validate, "open", lambda name, *args, **kwargs: real_open(
        path if name == "/proc/meminfo" else name, *args, **kwargs), raising=False)
    assert _validate.host_bytes_available() == (20000000 + 3000000) * 1024
    path.write_text(MEMINFO.replace("MemAvailable", "Cached"))   # without it: physical memory
    pages = 1234
    monkeypatch.setattr(_validate.os, "sysconf",
                        lambda name: {"SC_PHYS_PAGES": pages, "SC_PAGE_SIZE": 4096}[name])
    assert _validate.host_bytes_available() == pages * 4096


def test_available_memory_is_within_the_machines():
    available = _validate.host_bytes_available()
    try:
        info = _meminfo()
    except OSError:
        pytest.skip("no /proc/meminfo")
    assert 0 < available <= info["MemTotal"] + info["SwapTotal"]


def test_room_is_checked_against_it(monkeypatch):
    monkeypatch.setattr(_validate, "host_bytes_available", lambda: 3 * GIB)
    _validate.check_host_room(3 * GIB, "x")
    with pytest.raises(MemoryError, match=r"^the thing needs 4\.0 GiB of new host memory, "
                                          r"more than the 3\.0 GiB available; do this$"):
        _validate.check_host_room(4 * GIB, "the thing", "do this")
    monkeypatch.setattr(_validate, "host_bytes_available", lambda: None)    # unknown: no check
    _validate.check_host_room(2 ** 62, "x")


def test_contiguous_copies_are_checked_and_contiguous_arrays_pass(monkeypatch):
    monkeypatch.setattr(_validate, "host_bytes_available", lambda: 100)
    a = np.ones((10, 10))
    assert _validate.contiguous_host(a, "a") is a
    with pytest.raises(MemoryError, match="copy of a needs"):
        _validate.contiguous_host(np.asfortranarray(a), "copy of a")
    monkeypatch.setattr(_validate, "host_bytes_available", lambda: 800)
    copy = _validate.contiguous_host(np.asfortranarray(a), "copy of a")
    assert copy.flags.c_contiguous and (copy == a).all()


@pytest.fixture
def little_host(monkeypatch):
    """Host memory for a 300 x 300 float64 matrix and not much more."""
    monkeypatch.setattr(_validate, "host_bytes_available", lambda: 300 * 300 * 8)


def _refused(call, a, match):
    before = a.copy()
    with oclla.record() as rec, pytest.raises(MemoryError, match=match):
        call()
    assert rec.runs == []                      # refused before any work on the device
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_beyond_the_device(small_device, little_host, lower):
    q = small_device
    for n, route in ((401, "tiled"), (701, "out_of_core")):
        a = spd(n, np.float64)
        assert tiled.route(a, q) == route
        _refused(lambda: oclla.cholesky(a, lower=lower, queue=q), a,
                 rf"factor of a {n} x {n} float64 matrix needs .* overwrite_a=True")
        _refused(lambda: oclla.cho_factor(a, lower=lower, queue=q), a, "overwrite_a=True")
        work = a.copy()
        c = oclla.cholesky(work, lower=lower, overwrite_a=True, queue=q)
        assert c is work
        assert accuracy.cholesky_backward_error(a, c, lower) < accuracy.THRESHOLD


def test_lu_beyond_the_device(small_device, little_host):
    q = small_device
    a = general(401, np.float64)
    assert tiled_lu.route(a, q) == "tiled"
    _refused(lambda: oclla.lu_factor(a, queue=q), a, "factor of a 401 x 401 float64")
    a = general(501, np.float64)
    assert out_of_core_lu.route(a, q) == "out_of_core"
    _refused(lambda: oclla.lu_factor(a, queue=q), a, "overwrite_a=True")
    work = a.copy()
    lu, piv = oclla.lu_factor(work, overwrite_a=True, queue=q)
    assert lu is work
    assert accuracy.lu_backward_error(a, lu, piv) < accuracy.THRESHOLD


def test_streamed_solves_copy_only_what_is_not_contiguous(small_device, monkeypatch):
    q = small_device
    a = spd(701, np.float64)
    c = oclla.cholesky(a, queue=q)
    lu, piv = oclla.lu_factor(a, queue=q)
    b = np.linspace(-1, 1, 701)
    monkeypatch.setattr(_validate, "host_bytes_available", lambda: 300 * 300 * 8)
    for factor, solve in (((c, False), oclla.cho_solve), ((lu, piv), oclla.lu_solve)):
        x = solve(factor, b, queue=q)                      # C-contiguous: no copy
        assert accuracy.solve_backward_error(a, x, b) < accuracy.THRESHOLD
        fortran = (np.asfortranarray(factor[0]), factor[1])
        _refused(lambda: solve(fortran, b, queue=q), fortran[0],
                 "C-contiguous copy of the 701 x 701 factor")


def test_streamed_update(small_device, little_host):
    q = small_device
    a = spd(701, np.float64)
    c = np.linalg.cholesky(a).T.copy()
    v = np.linspace(-0.5, 0.5, 701)
    assert update_stream.streams(c, q)
    _refused(lambda: oclla.cholesky_update(c, v, queue=q), c,
             "updated 701 x 701 factor .* overwrite_c=True")
    work = c.copy()
    assert oclla.cholesky_update(work, v, overwrite_c=True, queue=q) is work


def test_tiled_assembly(small_device, little_host):
    q = small_device
    rng = np.random.default_rng(1)
    a, d2 = rng.standard_normal((400, 500)), rng.random(500)
    assert tiled_ad2at.route(a, q)
    _refused(lambda: oclla.assemble_ad2at(a, d2, queue=q), a, "the 400 x 400 product needs")


def test_tiled_matrices_to_and_from_the_host(small_device, monkeypatch):
    q = small_device
    a = spd(401, np.float64)
    tm = tiled.TiledMatrix.from_numpy(a, queue=q)
    monkeypatch.setattr(_validate, "host_bytes_available", lambda: 300 * 300 * 8)
    try:
        with pytest.raises(MemoryError, match="pass out="):
            tm.to_numpy()
        out = np.empty_like(a)
        assert tm.to_numpy(out) is out
        np.testing.assert_array_equal(out, a)
        with pytest.raises(MemoryError, match="C-contiguous copy of the 401 x 401 matrix"):
            tiled.TiledMatrix.from_numpy(np.asfortranarray(a), queue=q)
    finally:
        tm.release()
