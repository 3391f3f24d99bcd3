"""A·D²·Aᵀ into tiles with A streamed in column blocks (oclla.tiled_ad2at): both
triangles and symmetric storage against numpy, blocks and tiles that straddle the
orders, the public assemble_ad2at routed there under a device-limit profile, its
Cholesky, bad input."""

import numpy as np
import pytest

import oclla
from oclla import _params, accuracy, tiled_ad2at


def problem(m, n, dtype, seed=0):
    rng = np.random.default_rng(seed + m + n)
    return rng.standard_normal((m, n)).astype(dtype), rng.random(n).astype(dtype)


def reference(a, d2):
    a64 = a.astype(np.float64)
    return (a64 * d2.astype(np.float64)) @ a64.T


#: a tiled GEMM set: the products then take W transposed (oclla.ad2at.Scaled)
TILED = dict(KERNEL="tiled", TILE_M=16, TILE_N=16, TILE_K=8, WPT_M=2, WPT_N=2, VEC=2)


@pytest.mark.parametrize("m, n, tile, chunk", [(1, 3, 16, 2), (37, 50, 16, 16), (40, 93, 20, 31)])
@pytest.mark.parametrize("storage", ["lower", "upper", "symmetric"])
@pytest.mark.parametrize("gemm", [None, TILED], ids=["device", "tiled"])
def test_tiles(queue, dtype, m, n, tile, chunk, storage, gemm):
    if gemm is not None:
        _params.override("gemm", gemm)
    a, d2 = problem(m, n, dtype)
    c = tiled_ad2at.assemble_tiles(a, d2, lower=storage != "upper",
                                   symmetric=storage == "symmetric", queue=queue, tile=tile,
                                   chunk=chunk)
    assert c.triangle == (None if storage == "symmetric" else storage)
    got = c.to_numpy()
    ref = reference(a, d2)
    if storage == "lower":
        ref = np.tril(ref)
    elif storage == "upper":
        ref = np.triu(ref)
    scale = np.abs(a).max() ** 2 * d2.max() * n
    assert np.abs(got - ref).max() <= 4 * n * accuracy.eps(dtype) * scale
    if storage != "upper":
        factor = oclla.cholesky(c, lower=True, queue=queue)
        assert accuracy.cholesky_backward_error(reference(a, d2), factor.to_numpy(), True) \
            < accuracy.THRESHOLD


def test_public_function_routes_to_tiles(small_device):
    q = small_device
    a, d2 = problem(300, 500, np.float64)              # A 1.1 MiB, beyond one buffer
    assert tiled_ad2at.route(a, q)
    before = a.copy()
    with oclla.record() as rec:
        c = oclla.assemble_ad2at(a, d2, queue=q)
    assert [r.variant for r in rec.runs] == ["tiled"]
    np.testing.assert_array_equal(a, before)
    np.testing.assert_allclose(c, np.tril(reference(a, d2)), rtol=0, atol=1e-10 * 500)
    full = oclla.assemble_ad2at(a, d2, symmetric=True, queue=q)
    np.testing.assert_allclose(full, reference(a, d2), rtol=0, atol=1e-10 * 500)
    with pytest.raises(ValueError, match="blocked method only"):
        oclla.assemble_ad2at(a, d2, method="pivot", queue=q)
    with pytest.raises(ValueError, match=">= 0"):
        oclla.assemble_ad2at(a, -d2, queue=q)
    with pytest.raises(ValueError, match="m > n"):
        oclla.assemble_ad2at(a[:, :200], d2[:200], queue=q)
    bad = a.copy()
    bad[7, 9] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        oclla.assemble_ad2at(bad, d2, queue=q)
    with pytest.raises(oclla.DeviceError, match="one buffer"):
        oclla.assemble_ad2at(a, d2, packed=True, queue=q)
