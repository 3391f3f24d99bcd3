"""Device arrays that are views -- offsets, strides, reversed steps, transposes,
sub-blocks -- in every public function that takes device arrays.

Each property test calls a function on a view and on a contiguous copy of the
same values: the results must be identical, the caller's view must be written
only with ``overwrite_*`` (then holding the result), and nothing of the parent
buffer outside the view may ever change.  The parent's entries outside the
view are NaN, so a kernel that reads outside the view also shows up (through
``check_finite`` or in the result).  Then one test per reported case, and the
dtype rules of the solves.
"""

from typing import NamedTuple

import numpy as np
import pyopencl.array as cl_array
import pytest
from hypothesis import given, settings, strategies as st
from scipy.linalg import lapack

import oclla
from oclla import _params, _validate, rfp

from linalg_helpers import spd

DTYPES = [np.float32, np.float64]
EXAMPLES = settings(max_examples=15, deadline=None)


@pytest.fixture(scope="module", params=DTYPES, ids=["float32", "float64"])
def dtype(request, queue):
    """As conftest's, at module scope for hypothesis (no function-scoped fixtures)."""
    dt = np.dtype(request.param)
    if dt == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no fp64")
    return dt


# ---- views ---------------------------------------------------------------------------------

class Layout(NamedTuple):
    """A view of a parent array: ``parent[index]``, transposed if ``transpose``."""

    parent_shape: tuple
    index: tuple
    transpose: bool

    def of(self, parent):
        """The view of a parent (numpy or pyopencl: the same slicing)."""
        view = parent[self.index]
        return view.T if self.transpose else view


@st.composite
def layouts(draw, shape):
    """Layouts of a view of ``shape``: per axis a step (1, 2, 3, -1 or -2), an offset
    of 0-3 entries and 0-2 entries after it; 2-D views may be transposes."""
    transpose = len(shape) == 2 and draw(st.booleans())
    parent_shape, index = [], []
    for length in (shape[::-1] if transpose else shape):
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        start, pad = draw(st.integers(0, 3)), draw(st.integers(0, 2))
        size = start + abs(step) * (length - 1) + 1 + pad
        if step > 0:
            index.append(slice(start, start + step * (length - 1) + 1, step))
        else:
            first = size - 1 - start
            stop = first + step * (length - 1) - 1
            index.append(slice(first, stop if stop >= 0 else None, step))
        parent_shape.append(size)
    return Layout(tuple(parent_shape), tuple(index), transpose)


class DeviceView(NamedTuple):
    """A device view holding ``values``, its parent buffer and the parent as it was."""

    layout: Layout
    before: np.ndarray          # host copy of the parent before the call
    parent: cl_array.Array      # the device parent
    view: cl_array.Array        # layout.of(parent)

    def contiguous(self, queue):
        """A C-contiguous device copy of the view's values."""
        return cl_array.to_device(queue, np.ascontiguousarray(self.layout.of(self.before)))

    def check(self, written=None):
        """The parent outside the view is unchanged; the view holds ``written``
        (a host array), or its own values if None."""
        after = self.parent.get()
        outside = np.ones(after.shape, bool)
        self.layout.of(outside)[...] = False
        np.testing.assert_array_equal(after[outside], self.before[outside])
        expected = self.layout.of(self.before) if written is None else written
        np.testing.assert_array_equal(self.layout.of(after), expected)


def device_view(queue, layout, values, fill=np.nan) -> DeviceView:
    """Upload a parent of ``fill`` whose ``layout`` view holds ``values``."""
    values = np.asarray(values)
    before = np.full(layout.parent_shape, fill, values.dtype)
    layout.of(before)[...] = values
    parent = cl_array.to_device(queue, before)
    return DeviceView(layout, before, parent, layout.of(parent))


def host(x):
    """``x`` as a numpy array (a device array read back, gathered first if a view)."""
    return _validate.dense(x.queue, x).get() if isinstance(x, cl_array.Array) else np.asarray(x)


def assert_same(got, expected):
    """Identical values (device arrays, views included, read back)."""
    np.testing.assert_array_equal(host(got), host(expected))


def shapes(max_rows=6, max_cols=6):
    return st.tuples(st.integers(1, max_rows), st.integers(1, max_cols))


# ---- the helpers: gather, scatter, holds_results -------------------------------------------

@EXAMPLES
@given(data=st.data(), shape=shapes())
def test_gather_and_scatter_address_the_views_entries(queue, data, shape):
    layout = data.draw(layouts(shape))
    values = np.arange(1.0, 1 + shape[0] * shape[1]).reshape(shape)
    v = device_view(queue, layout, values)
    assert _validate.is_view(v.view) == (v.view.offset != 0 or not v.view.flags.c_contiguous)
    gathered = _validate.gather(queue, v.view)
    assert gathered.flags.c_contiguous and gathered.offset == 0
    np.testing.assert_array_equal(gathered.get(), values)
    v.check()
    _validate.scatter(queue, cl_array.to_device(queue, -values), v.view)
    v.check(written=-values)


@pytest.mark.parametrize("runs", [0, 1])
def test_gather_and_scatter_of_views_longer_than_a_launch(queue, runs):
    """Views of more entries than a launch has work-items, both ways of sharing them (wg1d
    RUNS: contiguous runs per item, their base index stepped across row ends; or entries
    a launch's width apart): every entry gathered, scattered back into the view's own
    entries, the rest of the buffer untouched."""
    _params.override("wg1d", {"RUNS": runs})
    base = np.arange(600.0 * 701.0, dtype=np.float32).reshape(600, 701)
    for pick in (lambda m: m[5:590, 3:700:2], lambda m: m.T[7:690, 1:]):
        parent = cl_array.to_device(queue, base)
        view, expected = pick(parent), pick(base)
        assert view.size > 65536
        np.testing.assert_array_equal(_validate.gather(queue, view).get(), expected)
        _validate.scatter(queue, cl_array.to_device(queue, -np.ascontiguousarray(expected)),
                          view)
        written = base.copy()
        pick(written)[...] = -expected
        np.testing.assert_array_equal(parent.get(), written)


@EXAMPLES
@given(data=st.data(), length=st.integers(1, 12))
def test_gather_one_dimensional_views(queue, data, length):
    layout = data.draw(layouts((length,)))
    values = np.arange(length, dtype=np.float32) + 1
    v = device_view(queue, layout, values)
    np.testing.assert_array_equal(_validate.gather(queue, v.view).get(), values)


def test_holds_results(queue):
    a = cl_array.zeros(queue, (4, 6), np.float32)
    for view in (a, a[1:3], a[:, ::2], a.T, a[::-1, 1::3].T):
        assert _validate.holds_results(view)
    repeated_row = cl_array.Array(queue, (3, 6), np.float32, strides=(0, 4), data=a.base_data)
    interleaved = cl_array.Array(queue, (3, 3), np.float32, strides=(4, 8), data=a.base_data)
    assert not _validate.holds_results(repeated_row)
    assert not _validate.holds_results(interleaved)


# ---- the public API on views (property tests) ----------------------------------------------

@EXAMPLES
@given(data=st.data(), n=st.integers(1, 40), overwrite=st.booleans(), check_finite=st.booleans(),
       method=st.sampled_from(["blocked", "pivot"]))
def test_lu_factor_on_views(queue, dtype, data, n, overwrite, check_finite, method):
    a = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
    v = device_view(queue, data.draw(layouts((n, n))), a)
    lu, piv = oclla.lu_factor(v.view, overwrite_a=overwrite, check_finite=check_finite,
                              method=method, queue=queue)
    ref_lu, ref_piv = oclla.lu_factor(v.contiguous(queue), method=method, queue=queue)
    assert_same(lu, ref_lu)
    assert_same(piv, ref_piv)
    assert (lu is v.view) == overwrite
    v.check(written=ref_lu.get() if overwrite else None)


@EXAMPLES
@given(data=st.data(), n=st.integers(1, 40), nrhs=st.integers(0, 3),
       overwrite=st.booleans(), trans=st.sampled_from([0, 1]))
def test_lu_solve_on_views(queue, dtype, data, n, nrhs, overwrite, trans):
    rng = np.random.default_rng(n)
    lu, piv = oclla.lu_factor(rng.standard_normal((n, n)).astype(dtype), queue=queue)
    b = rng.standard_normal((n, nrhs) if nrhs else n).astype(dtype)
    lu_v = device_view(queue, data.draw(layouts((n, n))), lu)
    piv_v = device_view(queue, data.draw(layouts((n,))), piv, fill=-7)
    b_v = device_view(queue, data.draw(layouts(b.shape)), b)
    x = oclla.lu_solve((lu_v.view, piv_v.view), b_v.view, trans=trans, overwrite_b=overwrite,
                       queue=queue)
    ref = oclla.lu_solve((lu, piv), b, trans=trans, queue=queue)
    assert_same(x, ref)
    assert (x is b_v.view) == overwrite
    lu_v.check()
    piv_v.check()
    b_v.check(written=ref if overwrite else None)


@EXAMPLES
@given(data=st.data(), n=st.integers(1, 40), lower=st.booleans(), overwrite=st.booleans(),
       clean=st.booleans(), method=st.sampled_from(["blocked", "pivot"]))
def test_cholesky_on_views(queue, dtype, data, n, lower, overwrite, clean, method):
    factor = oclla.cholesky if clean else \
        (lambda *args, **kw: oclla.cho_factor(*args, **kw)[0])
    v = device_view(queue, data.draw(layouts((n, n))), spd(n, dtype))
    c = factor(v.view, lower=lower, overwrite_a=overwrite, method=method, queue=queue)
    ref = factor(v.contiguous(queue), lower=lower, method=method, queue=queue)
    assert_same(c, ref)
    assert (c is v.view) == overwrite
    v.check(written=ref.get() if overwrite else None)


@EXAMPLES
@given(data=st.data(), n=st.integers(1, 40), nrhs=st.integers(0, 3), lower=st.booleans(),
       overwrite=st.booleans())
def test_cho_solve_on_views(queue, dtype, data, n, nrhs, lower, overwrite):
    c, _ = oclla.cho_factor(spd(n, dtype), lower=lower, queue=queue)
    b = np.random.default_rng(n).standard_normal((n, nrhs) if nrhs else n).astype(dtype)
    c_v = device_view(queue, data.draw(layouts((n, n))), c)
    b_v = device_view(queue, data.draw(layouts(b.shape)), b)
    x = oclla.cho_solve((c_v.view, lower), b_v.view, overwrite_b=overwrite, queue=queue)
    ref = oclla.cho_solve((c, lower), b, queue=queue)
    assert_same(x, ref)
    assert (x is b_v.view) == overwrite
    c_v.check()
    b_v.check(written=ref if overwrite else None)


@EXAMPLES
@given(data=st.data(), n=st.integers(1, 40), lower=st.booleans(), overwrite=st.booleans(),
       method=st.sampled_from(["blocked", "pivot"]))
def test_rfp_on_views(queue, dtype, data, n, lower, overwrite, method):
    a_v = device_view(queue, data.draw(layouts((n, n))), spd(n, dtype))
    arf = rfp.pack(a_v.view, lower=lower, queue=queue)
    assert_same(arf, rfp.pack(a_v.contiguous(queue), lower=lower, queue=queue))
    a_v.check()
    arf_v = device_view(queue, data.draw(layouts(arf.shape)), arf.get())
    assert_same(rfp.unpack(arf_v.view, n, lower=lower, queue=queue),
                rfp.unpack(arf, n, lower=lower, queue=queue))
    c = rfp.cholesky(arf_v.view, n, lower=lower, overwrite_a=overwrite, method=method,
                     queue=queue)
    ref = rfp.cholesky(arf, n, lower=lower, method=method, queue=queue)
    assert_same(c, ref)
    assert (c is arf_v.view) == overwrite
    arf_v.check(written=ref.get() if overwrite else None)
    b = np.random.default_rng(n).standard_normal((n, 2)).astype(dtype)
    b_v = device_view(queue, data.draw(layouts(b.shape)), b)
    assert_same(rfp.cho_solve((c, lower), b_v.view, queue=queue),
                rfp.cho_solve((ref, lower), b, queue=queue))
    b_v.check()


@EXAMPLES
@given(data=st.data(), m=st.integers(1, 20), extra=st.integers(0, 20), packed=st.booleans(),
       lower=st.booleans())
def test_assemble_ad2at_on_views(queue, dtype, data, m, extra, packed, lower):
    rng = np.random.default_rng(m)
    a = rng.random((m, m + extra)).astype(dtype)
    d2 = rng.random(m + extra).astype(dtype)
    a_v = device_view(queue, data.draw(layouts(a.shape)), a)
    d2_v = device_view(queue, data.draw(layouts(d2.shape)), d2)
    c = oclla.assemble_ad2at(a_v.view, d2_v.view, packed=packed, lower=lower, queue=queue)
    ref = oclla.assemble_ad2at(a_v.contiguous(queue), cl_array.to_device(queue, d2),
                               packed=packed, lower=lower, queue=queue)
    assert_same(c, ref)
    a_v.check()
    d2_v.check()


@settings(max_examples=4, deadline=None)
@given(data=st.data(), m=st.integers(1, 12), extra=st.integers(0, 12))
def test_wls_solve_on_views(queue, dtype, data, m, extra):
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, m + extra)).astype(dtype)
    d2, b = (rng.random(m + extra).astype(dtype) + 0.5 for _ in range(2))
    views = [device_view(queue, data.draw(layouts(x.shape)), x) for x in (a, d2, b)]
    res = oclla.wls_solve(*(v.view for v in views), queue=queue)
    ref = oclla.wls_solve(a, d2, b, queue=queue)
    np.testing.assert_array_equal(res.x, ref.x)
    for v in views:
        v.check()


# ---- the reported cases --------------------------------------------------------------------

def test_strided_b_with_overwrite_writes_only_its_columns(queue, rng):
    """lu_solve(..., b_dev[:, ::2], overwrite_b=True) wrote the parent's other columns."""
    a = rng.standard_normal((8, 8))
    parent = rng.standard_normal((8, 6))
    d_parent = cl_array.to_device(queue, parent)
    factors = oclla.lu_factor(a, queue=queue)
    x = oclla.lu_solve(factors, d_parent[:, ::2], overwrite_b=True, queue=queue)
    expected = oclla.lu_solve(factors, parent[:, ::2], queue=queue)
    after = d_parent.get()
    np.testing.assert_array_equal(after[:, 1::2], parent[:, 1::2])
    np.testing.assert_array_equal(after[:, ::2], expected)
    assert x.shape == (8, 3)


def test_row_block_factored_in_place(queue, rng):
    """lu_factor(big[10:20], overwrite_a=True) factored rows 0-9 of the buffer."""
    big = rng.standard_normal((30, 10))
    d_big = cl_array.to_device(queue, big)
    lu, piv = oclla.lu_factor(d_big[10:20], overwrite_a=True, check_finite=False, queue=queue)
    ref_lu, ref_piv = oclla.lu_factor(big[10:20], queue=queue)
    after = d_big.get()
    np.testing.assert_array_equal(after[10:20], ref_lu)
    np.testing.assert_array_equal(np.delete(after, np.s_[10:20], axis=0),
                                  np.delete(big, np.s_[10:20], axis=0))
    np.testing.assert_array_equal(piv.get(), ref_piv)


def test_lu_of_a_transposed_device_array(queue, rng):
    a = rng.standard_normal((6, 6))
    factors = oclla.lu(cl_array.to_device(queue, a).T, queue=queue)
    for got, expected in zip(factors, oclla.lu(a.T.copy(), queue=queue)):
        assert isinstance(got, cl_array.Array)          # results stay on the device
        np.testing.assert_array_equal(got.get(), expected)
    pl, u = oclla.lu(cl_array.to_device(queue, a), permute_l=True, block=2, queue=queue)
    np.testing.assert_allclose(pl.get() @ u.get(), a, atol=1e-12)


def offset_view(queue, values, before=3):
    """A device view at an offset: ``values`` after ``before`` rows (entries) of NaN."""
    pad = np.full((before,) + values.shape[1:], np.nan, values.dtype)
    parent = cl_array.to_device(queue, np.concatenate([pad, values]))
    return parent, parent[before:]


def _lu_solve(queue, b):
    return oclla.lu_solve(oclla.lu_factor(spd(10, np.float64), queue=queue), b, queue=queue)


@pytest.mark.parametrize("values, call", [
    (spd(10, np.float64), lambda q, m: oclla.lu_factor(m, queue=q)[0]),
    (spd(10, np.float64), lambda q, m: oclla.lu_factor(m, method="pivot", queue=q)[0]),
    (spd(10, np.float64), lambda q, m: oclla.cholesky(m, overwrite_a=True, queue=q)),
    (spd(10, np.float64), lambda q, m: rfp.pack(m, queue=q)),
    (lapack.dtrttf(spd(10, np.float64), uplo="L")[0],
     lambda q, m: rfp.cholesky(m, 10, overwrite_a=True, queue=q)),
    (np.ones((10, 2)), _lu_solve),
], ids=["check_finite", "pivot", "cholesky-overwrite", "rfp.pack", "rfp.cholesky-overwrite",
        "lu_solve-b"])
def test_offset_views_are_supported(queue, values, call):
    """Device arrays at an offset raised pyopencl's ArrayHasOffsetError."""
    parent, view = offset_view(queue, values)
    got = call(queue, view)
    ref = call(queue, cl_array.to_device(queue, values))
    assert_same(got, ref)
    assert np.isnan(parent.get()[:3]).all()


@pytest.mark.parametrize("solve", [
    lambda q, b: oclla.lu_solve(oclla.lu_factor(spd(8, np.float64), queue=q), b, queue=q),
    lambda q, b: oclla.cho_solve(oclla.cho_factor(spd(8, np.float64), queue=q), b, queue=q),
], ids=["lu_solve", "cho_solve"])
def test_non_contiguous_b_without_overwrite(queue, rng, solve):
    """A strided device b raised pyopencl's "cannot copy non-contiguous array"."""
    parent = rng.standard_normal((8, 6))
    d_parent = cl_array.to_device(queue, parent)
    x = solve(queue, d_parent[:, ::2])
    assert x.flags.c_contiguous and x.shape == (8, 3)
    np.testing.assert_array_equal(x.get(), solve(queue, parent[:, ::2]))
    np.testing.assert_array_equal(d_parent.get(), parent)


def test_nan_in_a_view_of_b_with_overwrite_leaves_it_untouched(queue):
    """The NaN check of a gathered b runs beside the solve; X is scattered only after."""
    parent = np.ones((4, 4))
    parent[2, 2] = np.nan
    d_parent = cl_array.to_device(queue, parent)
    with pytest.raises(ValueError, match="infs or NaNs"):
        oclla.lu_solve(oclla.lu_factor(spd(4, np.float64), queue=queue), d_parent[:, ::2],
                       overwrite_b=True, queue=queue)
    np.testing.assert_array_equal(d_parent.get(), parent)


def test_overwrite_into_a_view_that_overlaps_itself_returns_a_new_array(queue):
    """Interleaved strides (entry (0, 1) is entry (1, 0)) cannot hold a result:
    overwrite_a is a permission, and the caller's buffer stays as it was."""
    values = np.array([4.0, 1.0, 0.5, 3.0, 2.0, 5.0, 7.0])
    strides = (8, 16)
    base = cl_array.to_device(queue, values)
    view = cl_array.Array(queue, (3, 3), np.float64, strides=strides, data=base.base_data)
    lu, _ = oclla.lu_factor(view, overwrite_a=True, queue=queue)
    assert lu is not view
    np.testing.assert_array_equal(base.get(), values)
    same = np.lib.stride_tricks.as_strided(values, (3, 3), strides).copy()
    assert_same(lu, oclla.lu_factor(same, queue=queue)[0])


# ---- the dtype of b, overwrite_b with numpy ------------------------------------------------

SOLVES = {
    "lu_solve": lambda dt, b, **kw: oclla.lu_solve(oclla.lu_factor(spd(4, dt)), b, **kw),
    "cho_solve": lambda dt, b, **kw: oclla.cho_solve(oclla.cho_factor(spd(4, dt)), b, **kw),
    "rfp.cho_solve": lambda dt, b, **kw: rfp.cho_solve(
        (rfp.cholesky(rfp.pack(spd(4, dt)), 4), True), b, **kw),
}


@pytest.mark.parametrize("solve", SOLVES.values(), ids=SOLVES.keys())
def test_float64_b_with_a_float32_factor_is_refused(solve):
    with pytest.raises(TypeError, match=r"float64 but the factor is float32.*"
                                        r"b\.astype\(numpy\.float32\)"):
        solve(np.float32, np.ones(4))
    with pytest.raises(TypeError, match="int64 but the factor is float32"):
        solve(np.float32, np.ones(4, np.int64))
    with pytest.raises(TypeError, match="complex128"):
        solve(np.float64, np.ones(4, complex))


@pytest.mark.parametrize("solve", SOLVES.values(), ids=SOLVES.keys())
def test_exact_conversions_of_b_are_accepted(solve):
    expected = solve(np.float64, np.arange(4.0))
    for b in (np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int64),
              np.arange(4, dtype=np.float32)):
        x = solve(np.float64, b)
        assert x.dtype == np.float64
        np.testing.assert_array_equal(x, expected)
    x = solve(np.float32, np.array([True, False, True, True]))
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x, solve(np.float32, np.array([1, 0, 1, 1], np.float32)))


def test_device_b_must_have_the_factors_dtype(queue):
    lu, piv = oclla.lu_factor(spd(4, np.float64), queue=queue)
    with pytest.raises(TypeError, match="device array b has dtype float32 but the factor"):
        oclla.lu_solve((lu, piv), cl_array.to_device(queue, np.ones(4, np.float32)),
                       queue=queue)


@pytest.mark.parametrize("solve", SOLVES.values(), ids=SOLVES.keys())
def test_overwrite_b_never_writes_a_numpy_b(solve):
    """overwrite_b is a permission (as in scipy): a numpy b is copied to the device."""
    b = np.arange(4.0)
    x = solve(np.float64, b, overwrite_b=True)
    assert x is not b
    np.testing.assert_array_equal(b, np.arange(4.0))
    np.testing.assert_array_equal(x, solve(np.float64, np.arange(4.0)))
