"""The fused rank-1 update (oclla.update_product.update_rank1): one launch that solves
for w and sweeps each tile of the upper factor as soon as the chain has reached it,
stopping at a block of w past the guard (the rotations then update the trailing
factor)."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st
from numpy.linalg import LinAlgError

import oclla
from oclla import update_product
from oclla._queue_state import state_of
from oclla._params import params

from test_update import assert_updated, gpu_kernels, problem

TB = update_product.TB


def fused(queue, dtype, **knobs):
    """The device's update knobs with the chained solve (the fused route's condition)
    and the product form for rank 1."""
    return gpu_kernels(queue, dtype, SOLVE="chain", PRODUCT=16, **knobs)


def kernel_names(rec) -> list:
    return [k.name for s in rec.steps for k in s.kernels]


@pytest.mark.parametrize("n", [1, TB - 1, TB, TB + 1, 3 * TB + 5])
def test_one_launch_gives_the_product_forms_factor(queue, dtype, n):
    """Orders straddling the blocks of TB rows: one update_rank1 launch and nothing of
    the four-kernel product form, backward stable, and the product form's factor within
    rounding."""
    at, c, v = problem(n, 1, 1, dtype, seed=3)
    with fused(queue, dtype):
        assert update_product.fuses_rank1(params(queue, "update", dtype), 1, False)
        product = oclla.cholesky_update(c, v, method="product", queue=queue)
        with oclla.record() as rec:
            r = oclla.cholesky_update(c, v, queue=queue)
    names = kernel_names(rec)
    assert names.count("update_rank1") == 1
    product_form = {"solve_chain", "apply_product", "chunk_merge", "row_coefficients"}
    assert not (product_form | {"factor_panel", "factor_panel_local"}) & set(names)
    assert_updated(at, r, sl.cholesky(at), False, f"n={n}")
    np.testing.assert_allclose(r, product, rtol=0,
                               atol=64 * np.finfo(dtype).eps * np.abs(product).max())


def guarded_problem(dtype, block: int, monkeypatch):
    """An upper factor c of order 3 TB + 9 and v with w = c^-T v small in the blocks
    before ``block`` and large from it on, GUARD set between; returns Ã, c, v and the
    list that each call of update_rank1 appends its returned stop row to."""
    n = 3 * TB + 9
    _, c, _ = problem(n, 1, 1, dtype, seed=6)
    v = np.zeros((n, 1), dtype)
    v[:block * TB] = 1e-3
    v[block * TB:] = 2.0
    a = c.astype(np.float64).T @ c.astype(np.float64)
    at = a + v.astype(np.float64) @ v.astype(np.float64).T
    w = sl.solve_triangular(c.astype(np.float64), v.astype(np.float64), trans="T")
    small = np.abs(w[:block * TB]).max(initial=0.0)
    large = np.abs(w[block * TB:TB * (block + 1)]).max()
    assert small < large
    monkeypatch.setattr(update_product, "GUARD", float(np.sqrt(max(small, 1e-9) * large)))
    stops = []
    real = update_product.update_rank1

    def spy(*args, **kwargs):
        stops.append(real(*args, **kwargs))
        return stops[-1]

    monkeypatch.setattr(update_product, "update_rank1", spy)
    return at, c, v, stops


@pytest.mark.parametrize("parts", [p for p in (1, 2, 4)
                                   if p != update_product.RANK1_PARTS])
def test_items_per_row_give_the_same_factor(queue, dtype, parts, monkeypatch):
    """RANK1_PARTS items a row, each a part of a tile's columns: the factor of the
    shipped count within rounding, backward stable, and past the guard the same stop."""
    n = 2 * TB + 7
    at, c, v = problem(n, 1, 1, dtype, seed=8)
    with fused(queue, dtype):
        shipped = oclla.cholesky_update(c, v, queue=queue)
        monkeypatch.setattr(update_product, "RANK1_PARTS", parts)
        r = oclla.cholesky_update(c, v, queue=queue)
    assert_updated(at, r, sl.cholesky(at), False, f"parts={parts}")
    np.testing.assert_allclose(r, shipped, rtol=0,
                               atol=64 * np.finfo(dtype).eps * np.abs(shipped).max())
    at, c, v, stops = guarded_problem(dtype, 1, monkeypatch)
    with fused(queue, dtype):
        stopped = oclla.cholesky_update(c, v, queue=queue)
    assert stops == [TB]
    assert_updated(at, stopped, sl.cholesky(at), False, f"parts={parts}, stopped")


def test_other_updates_keep_their_routes(queue):
    """A lower factor, rank 2, a downdate and method="product" do not take it."""
    dtype = np.float32
    at, c, v = problem(2 * TB + 3, 2, 1, dtype, seed=4)
    with fused(queue, dtype):
        for kwargs, vv in (({"lower": True}, v[:, :1]), ({}, v), ({"method": "product"},
                                                                 v[:, :1])):
            factor = c.T.copy() if kwargs.get("lower") else c
            with oclla.record() as rec:
                oclla.cholesky_update(factor, vv, queue=queue, **kwargs)
            assert "update_rank1" not in kernel_names(rec), kwargs
        _, cd, vd = problem(2 * TB + 3, 1, -1, dtype, seed=4)
        with oclla.record() as rec:
            oclla.cholesky_update(cd, vd, sign=-1, queue=queue)
        assert "update_rank1" not in kernel_names(rec)


@pytest.mark.parametrize("block", [0, 1, 2])
def test_a_block_past_the_guard_leaves_the_rest_to_the_rotations(queue, dtype, block,
                                                                 monkeypatch):
    """w small in the blocks before ``block`` and large from it on, the guard between:
    the launch stops at that block's first row (its return value), the rotations update
    the trailing factor by the vector it leaves in v, and the whole is backward stable
    and the caller's V untouched."""
    at, c, v, stops = guarded_problem(dtype, block, monkeypatch)
    v_before = v.copy()
    with fused(queue, dtype), oclla.record() as rec:
        r = oclla.cholesky_update(c, v, queue=queue)
    assert stops == [block * TB]
    names = kernel_names(rec)
    assert names.index("update_rank1") < min(i for i, name in enumerate(names)
                                             if name.startswith("factor_panel"))
    assert_updated(at, r, sl.cholesky(at), False, f"block={block}")
    np.testing.assert_array_equal(v, v_before)


@pytest.mark.parametrize("bad", [0, TB + 3, 2 * TB + 10])
def test_zero_diagonal_is_named_at_its_order(queue, bad):
    """A zero diagonal entry makes w not finite in its block: the launch stops there and
    the rotations name the entry's order in the whole factor (LAPACK's order)."""
    n = 3 * TB
    c = np.triu(np.ones((n, n), np.float32)) + n * np.eye(n, dtype=np.float32)
    c[bad, bad] = 0.0
    with fused(queue, np.float32):
        with pytest.raises(LinAlgError, match=f"zero diagonal entry at order {bad + 1}"):
            oclla.cholesky_update(c, np.ones(n, np.float32), queue=queue)


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 4 * TB + 3), seed=st.integers(0, 2 ** 16), double=st.booleans())
def test_any_order_is_backward_stable(queue, n, seed, double):
    dtype = np.float64 if double and oclla.device_info(queue).fp64 else np.float32
    at, c, v = problem(n, 1, 1, dtype, seed=seed)
    with fused(queue, dtype):
        r = oclla.cholesky_update(c, v[:, 0], queue=queue)
    assert_updated(at, r, sl.cholesky(at), False, f"n={n}")


def kept_scratch(queue, dtype):
    """The queue's kept scratch of update_rank1 for ``dtype``: (the object, its regions as
    the integer words of their reals, its state's two ints)."""
    item = np.dtype(dtype).itemsize
    kept = state_of(queue).rank1[item]
    bits = update_product.UNSTORED[item]
    words = np.empty(kept.state_at // item, bits.dtype)
    state = np.empty(2, np.int32)
    cl.enqueue_copy(queue, words, kept.buffer)
    cl.enqueue_copy(queue, state, kept.buffer, src_offset=kept.state_at)
    return kept, words.reshape(2, -1), state


def test_kept_scratch_is_left_ready_for_the_next_launch(queue, dtype, monkeypatch):
    """Orders up, down and equal on one queue, and a launch stopped by the guard between:
    every factor right; after each launch the region the next one takes is UNSTORED
    whole and the state's ints hold UNSTORED_WORD again (the ticket count put back by
    the launch, the stop row by the host), with nothing filled by the host once the
    scratch holds the largest order."""
    word = int(update_product.UNSTORED[np.dtype(dtype).itemsize].view(np.int32)[0])
    fills = []                                  # the buffers filled
    real_fill = cl.enqueue_fill_buffer
    monkeypatch.setattr(cl, "enqueue_fill_buffer",
                        lambda *args, **kw: fills.append(args[1]) or real_fill(*args, **kw))
    largest, guard = 0, update_product.GUARD
    with fused(queue, dtype):
        for n in (2 * TB + 5, 3 * TB, TB - 3, 2 * TB + 5, 1, 3 * TB):
            at, c, v = problem(n, 1, 1, dtype, seed=n)
            fills.clear()
            r = oclla.cholesky_update(c, v, queue=queue)
            assert_updated(at, r, sl.cholesky(at), False, f"n={n}")
            kept, regions, state = kept_scratch(queue, dtype)
            assert kept.cap >= n and kept.cap % TB == 0
            assert (regions[kept.region] == update_product.UNSTORED[kept.item][0]).all(), n
            assert (state == word).all(), (n, state)
            if n <= largest:                   # only a larger order than before fills
                assert not [f for f in fills if f is kept.buffer], n
            largest = max(largest, n)
        at, c, v, stops = guarded_problem(dtype, 1, monkeypatch)
        stopped = oclla.cholesky_update(c, v, queue=queue)
        assert stops == [TB]
        assert_updated(at, stopped, sl.cholesky(at), False, "stopped")
        assert (kept_scratch(queue, dtype)[2] == word).all()
        monkeypatch.setattr(update_product, "GUARD", guard)
        at, c, v = problem(3 * TB + 9, 1, 1, dtype, seed=1)
        assert_updated(at, oclla.cholesky_update(c, v, queue=queue), sl.cholesky(at), False,
                       "after the stop")
        assert stops[-1] == 3 * TB + 9                 # this one ran to the end


def test_threads_on_one_queue_take_the_kept_scratch_in_turn(queue):
    """Rank-1 updates from four threads on one queue at once: each thread's factors
    right (the scratch is held from a launch to its read of the state)."""
    dtype = np.float32
    cases = [problem(n, 1, 1, dtype, seed=n) for n in (TB + 1, 2 * TB, 3 * TB - 1, 70)]
    with fused(queue, dtype):
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(
                lambda case: [oclla.cholesky_update(case[1], case[2], queue=queue)
                              for _ in range(3)], cases))
    for (at, _, _), factors in zip(cases, results):
        for r in factors:
            assert_updated(at, r, sl.cholesky(at), False, f"n={at.shape[0]}")


def test_a_call_stopped_between_launch_and_read_leaves_no_stale_scratch(queue, dtype,
                                                                         monkeypatch):
    """An exception (here a KeyboardInterrupt) after the launch and before its read of the
    state leaves the kept scratch unsettled: the next call, of another factor and v,
    fills it whole first (the interrupted launch's w, d and b are where it would look
    for UNSTORED; on a CPU its work-groups happen to overwrite them before reading) and
    gets its own factor; the call after that fills nothing."""
    n = 2 * TB + 3
    real = update_product._Rank1Scratch.launched
    fills = []                                  # the buffers filled
    real_fill = cl.enqueue_fill_buffer
    monkeypatch.setattr(cl, "enqueue_fill_buffer",
                        lambda *args, **kw: fills.append(args[1]) or real_fill(*args, **kw))

    def interrupted(self, launch, order):
        launch.wait()
        raise KeyboardInterrupt
    with fused(queue, dtype):
        _, c, v = problem(n, 1, 1, dtype, seed=11)
        oclla.cholesky_update(c, v, queue=queue)
        monkeypatch.setattr(update_product._Rank1Scratch, "launched", interrupted)
        _, c, v = problem(n, 1, 1, dtype, seed=12)
        with pytest.raises(KeyboardInterrupt):
            oclla.cholesky_update(c, v, queue=queue)
        monkeypatch.setattr(update_product._Rank1Scratch, "launched", real)
        for seed, refilled in ((13, True), (14, False)):
            fills.clear()
            at, c, v = problem(n, 1, 1, dtype, seed=seed)
            assert_updated(at, oclla.cholesky_update(c, v, queue=queue), sl.cholesky(at),
                           False, f"seed {seed}")
            kept = state_of(queue).rank1[np.dtype(dtype).itemsize]
            assert any(f is kept.buffer for f in fills) == refilled, seed
