"""Programs are built per dtype, device parameters and variant, never per matrix order."""

import numpy as np
import pytest

import oclla
from oclla import _params, _programs, _warmup

# the CPU code path (the device's own parameters) and a GPU one (gemm tiles with vector
# loads, row leaves, one SMALL_N route) on the same device
PROFILES = (None, "amd-gcn")


@pytest.fixture(params=PROFILES, ids=lambda p: p or "device")
def profile(request):
    checking = _params.selfcheck[0]
    _params.selfcheck[0] = False        # the derived parameters as they are: no fallback
    previous = oclla.set_profile(request.param)
    try:
        yield request.param
    finally:
        oclla.set_profile(previous)
        _params.selfcheck[0] = checking


#: One order of each class a program may depend on: the divisibility of the order by a
#: vector width up to 16 (the per-pivot LU kernels' widths follow it), and the largest
#: order of the test, which takes every route (leaf, blocks, SMALL_N) that orders up to
#: 70 take.  Only one large order: the programs of the blocked methods' routes must
#: serve every alignment of the views into the matrix.
CLASSES = (1, 2, 3, 4, 8, 16, 70)


def _every_routine(queue, dtype, orders, rng) -> None:
    """Every public routine (default methods, both transposes) at each order, the lower
    triangle at orders 0..3 mod 8 and the upper one at 4..7 (each triangle meets every
    residue mod 4); the per-pivot variants at every seventh order (every residue mod 4
    again)."""
    for n in orders:
        _warmup.call_every_routine(queue, dtype, n, rng, teaching=n % 7 == 0,
                                   triangles=((n // 4) % 2 == 0,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_builds_do_not_grow_with_the_orders(queue, profile, dtype):
    """After one order of each class, orders 1..70 build nothing."""
    if dtype == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("no fp64")
    rng = np.random.default_rng(0)
    for n in CLASSES:
        _warmup.call_every_routine(queue, dtype, n, rng)
    classes = _programs.build_count()
    _every_routine(queue, dtype, range(1, 71), rng)
    new = _programs.builds()[classes:]
    assert not new, (f"orders 1..70 built {len(new)} programs beyond those of the orders "
                     f"{CLASSES}:\n"
                     + "\n".join(f"{b.source} {' '.join(b.options)}" for b in new))


def test_build_count_and_seconds(queue):
    """A new (source, options) pair is counted once, with its seconds; a second lookup
    of the same kernel builds nothing."""
    count, seconds = _programs.build_count(), _programs.build_seconds()
    # a define no other call uses: a program of its own
    kernel = _programs.get_kernel(queue, "util.cl", "set_identity", np.float32, OCLLA_TEST_BUILD=1)
    assert _programs.build_count() == count + 1
    last = _programs.builds()[-1]
    assert last.source == "util.cl" and "-DOCLLA_TEST_BUILD=1" in last.options
    assert last.seconds > 0 and _programs.build_seconds() == pytest.approx(seconds
                                                                          + last.seconds)
    assert _programs.get_kernel(queue, "util.cl", "set_identity", np.float32,
                                OCLLA_TEST_BUILD=1) is kernel
    assert _programs.build_count() == count + 1


def test_warmup_leaves_nothing_to_build(queue, monkeypatch):
    """After warmup, calls at orders it did not use build nothing (the device's own
    parameters; a smaller set of warm-up orders keeps the test short)."""
    orders = (1, 2, 3, 4, 8, 16, 65, 131)
    monkeypatch.setattr(_warmup, "warmup_orders", lambda q, dt: orders)
    done = oclla.warmup(np.float32, queue=queue)
    assert done.dtypes == ("float32",) and done.orders == orders
    count = _programs.build_count()
    assert done.programs <= count and done.seconds <= _programs.build_seconds()
    rng = np.random.default_rng(1)
    for n in (5, 7, 30, 67, 100):
        _warmup.call_every_routine(queue, np.float32, n, rng, teaching=n < 10,
                                   triangles=(n % 2 == 0,))
    assert _programs.builds()[count:] == []
    again = oclla.warmup(np.float32, queue=queue)
    assert again.programs == 0


def test_warmup_orders_straddle_the_block_sizes(queue):
    orders = _warmup.warmup_orders(queue, np.float32)
    lu, chol = (_params.params(queue, f, np.float32) for f in ("lu", "chol"))
    assert {1, 2, 3, 4, 8, 16} <= set(orders)
    assert max(orders) > max(2 * lu["NB"], 2 * chol["NB"], lu["SMALL_N"], chol["SMALL_N"])
    assert chol["LEAF"] + 1 in orders


def test_warmup_refuses_other_dtypes(queue):
    with pytest.raises(TypeError, match="float32 or float64"):
        oclla.warmup(np.int32, queue=queue)
