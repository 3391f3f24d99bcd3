"""What the package keeps per queue (oclla/_queue_state.py) lives as long as the queue: a
caller's queue, dropped after routines made its twin, side and copy queues, pools, rank-1
scratch and choices, is freed with all of them; choices are forgotten when parameters are
chosen anew; one state per queue object, across threads."""

import gc
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import oclla
from oclla import _params, _scratch, accuracy, rfp, tiled
from oclla._queue_state import NOT_MADE, state_of
from oclla.blas import trsm_kernel

from test_update import problem
from test_update_rank1 import fused


def _profiling_queue(queue):
    return cl.CommandQueue(queue.context, queue.device,
                           properties=cl.command_queue_properties.PROFILING_ENABLE)


def _use(q, dtype):
    """Routines on ``q`` that fill every field of its state; their results checked."""
    rng = np.random.default_rng(5)
    n = 200
    x = rng.standard_normal((n, n))
    a = (x @ x.T + n * np.eye(n)).astype(dtype)
    lu, piv = oclla.lu_factor(cl_array.to_device(q, a), queue=q)
    assert accuracy.passes(accuracy.lu_backward_error(a, lu.get(), piv.get()))
    arf = rfp.pack(a, lower=False, queue=q)
    factor = rfp.unpack(rfp.cholesky(arf, n, lower=False, queue=q), n, lower=False, queue=q)
    assert accuracy.passes(accuracy.cholesky_backward_error(a, factor, False))
    for k in (1, 3):                      # the rank-1 route and the product form
        at, c, v = problem(60, k, 1, dtype, seed=k)
        with fused(q, dtype):
            updated = oclla.cholesky_update(cl_array.to_device(q, c), cl_array.to_device(q, v),
                                            queue=q).get()
        assert accuracy.passes(accuracy.cholesky_backward_error(at, updated, False))
    _scratch.buffer(q, 64)
    _scratch.buffer(state_of(q).twin, 64)
    assert tiled.copy_queue(q) is tiled.copy_queue(q)
    q.finish()


def test_a_dropped_queue_is_freed_with_all_it_kept(queue, dtype):
    q = _profiling_queue(queue)
    _use(q, dtype)
    state = state_of(q)
    assert state.choices and state.rank1
    assert state.twin is not None and state.copy is not None
    assert state.pool is not NOT_MADE
    assert NOT_MADE not in (state.twin, state.copy)
    kept = [weakref.ref(state), weakref.ref(state_of(state.twin)),
            weakref.ref(state_of(state.copy))]
    if state.side not in (NOT_MADE, None):
        kept.append(weakref.ref(state_of(state.side)))
    del q, state
    gc.collect()
    assert [r() for r in kept] == [None] * len(kept)


def test_the_states_are_the_queues_own(queue):
    q = _profiling_queue(queue)
    with ThreadPoolExecutor(4) as pool:
        states = list(pool.map(lambda _: state_of(q), range(16)))
    assert all(s is states[0] for s in states)
    assert state_of(queue) is not states[0]
    assert state_of(queue) is state_of(queue)


def test_choices_are_forgotten_when_parameters_are_chosen_anew(queue):
    q = _profiling_queue(queue)
    first = _params.params(q, "trsm", np.float32)
    kernel = trsm_kernel(q, "trsm_block", np.float32)
    assert trsm_kernel(q, "trsm_block", np.float32) is kernel       # remembered
    nb = first["TRSM_NB"] // 2 if first["TRSM_NB"] > 1 else 2
    _params.override("trsm", {"TRSM_NB": nb})
    assert _params.params(q, "trsm", np.float32)["TRSM_NB"] == nb
    assert trsm_kernel(q, "trsm_block", np.float32) is not kernel
    _params.override("trsm", None)
    assert _params.params(q, "trsm", np.float32) == first
