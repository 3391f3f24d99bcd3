"""Build every program the library uses on a device once, before the first real call.

A program is built once per process for each (context, source, options); its options
depend on the dtype, the device's parameters and the variant of an algorithm (which
triangle, which transpose), and on the sizes of the data only through a few classes:
the divisibility of the order by a vector width (the per-pivot LU kernels), the route a
blocked method takes (one leaf, several blocks, above its SMALL_N), and 64-bit indices
for operands of 2³¹ elements or more.  :func:`warmup` calls each
public routine in each of its variants at a few orders chosen from the device's block
sizes, so that every code path (a single leaf, several block columns, above each
SMALL_N) has run once: afterwards a call at any order builds nothing in this process,
and the driver's own binary cache (pyopencl's, PoCL's, NVIDIA's) holds the programs for
the next process.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _programs
from ._device import device_info, resolve_queue
from ._params import params


class Warmup(NamedTuple):
    """What :func:`warmup` did: the dtypes it covered, the orders it called the
    routines at, and the programs it built (how many, in how many seconds)."""

    dtypes: tuple
    orders: tuple
    programs: int
    seconds: float


def warmup_orders(queue, dtype) -> tuple:
    """The orders :func:`warmup` calls each routine at: 1, 2, 3, 4, 8 and 16 (every
    divisibility class of a vector width up to 16: a per-pivot kernel's width follows
    the order), one above the Cholesky's leaf, one spanning a few blocks of each blocked
    method and of the TRSM, and one past each method's SMALL_N (the order above which
    the blocked methods change their route)."""
    lu, chol = params(queue, "lu", dtype), params(queue, "chol", dtype)
    trsm = params(queue, "trsm", dtype)
    orders = {1, 2, 3, 4, 8, 16, chol["LEAF"] + 1, 2 * chol["NB"] + 3, 2 * lu["NB"] + 3,
              lu["SMALL_N"] + 1, chol["SMALL_N"] + 1, 4 * trsm["TRSM_NB"] + 3}
    return tuple(sorted(orders))


def _spd(n: int, dtype, rng) -> np.ndarray:
    x = rng.standard_normal((n, n))
    return (x @ x.T / n + np.eye(n)).astype(dtype)


#: The per-pivot (teaching) methods run at orders up to this only: their programs follow
#: the order's small divisibility classes alone, and their host loops take a launch per
#: pivot.
TEACHING_ORDERS = 200


def call_every_routine(queue, dtype, n: int, rng, *, teaching: bool = True,
                       triangles: tuple = (True, False)) -> None:
    """Every public routine at order n in each of its variants: both transposes, full and
    packed storage, the ``triangles`` (lower: True, upper: False) of the symmetric ones;
    the per-pivot (teaching) methods too if ``teaching``."""
    from . import rfp
    from .ad2at import assemble_ad2at
    from .cholesky import cho_solve, cholesky
    from .inverse import cho_inverse, cho_logdet, inv_spd, trtri
    from .update import cholesky_update
    from .lu import VARIANTS, lu, lu_factor, lu_solve
    a = rng.standard_normal((n, n)).astype(dtype) + n * np.eye(n, dtype=dtype)
    b = rng.standard_normal((n, 2)).astype(dtype)
    spd = _spd(n, dtype, rng)
    methods = ("pivot", "blocked") if teaching else ("blocked",)
    for method in methods:                 # the blocked factor last: the solves use it
        for variant in VARIANTS[method]:
            factor = lu_factor(a, method=method, variant=variant,
                               pivoting="none" if variant == "faithful" else "partial",
                               queue=queue)
    for trans in (0, 1):
        lu_solve(factor, b, trans=trans, queue=queue)
    lu(a, queue=queue)
    for lower in triangles:
        for method in methods:
            c = cholesky(spd, lower=lower, method=method, queue=queue)
        cho_solve((c, lower), b, queue=queue)
        cho_inverse((c, lower), queue=queue)
        cho_logdet((c, lower), queue=queue)
        trtri(c, lower=lower, queue=queue)
        inv_spd(spd, lower=lower, queue=queue)
        v = (b / (2 * np.linalg.norm(b))).astype(dtype)   # ‖V·Vᵀ‖ <= 1/4 < λmin(A)
        for sign in (1, -1):
            cholesky_update(c, v, sign=sign, lower=lower, queue=queue)
        arf = rfp.pack(spd, lower=lower, queue=queue)
        factor = rfp.cholesky(arf, n, lower=lower, queue=queue)
        rfp.cho_solve((factor, lower), b, queue=queue)
        rfp.unpack(factor, n, lower=lower, queue=queue)
        wide = rng.standard_normal((n, n + 2)).astype(dtype)
        d2 = rng.uniform(0.5, 2.0, n + 2).astype(dtype)
        for method in methods:
            for packed in (False, True):
                assemble_ad2at(wide, d2, packed=packed, lower=lower, method=method,
                               queue=queue)


def warmup(dtype=None, *, queue=None) -> Warmup:
    """Build every program the library uses on the queue's device.

    Parameters
    ----------
    dtype : numpy dtype or None
        float32 or float64; None: both, float64 only where the device has
        ``cl_khr_fp64``.
    queue : pyopencl.CommandQueue, optional
        The device (default :func:`oclla.get_queue`).

    Returns
    -------
    Warmup
        The dtypes and orders covered, and the programs built: afterwards a call of
        any public routine at any order builds no program in this process
        (:func:`oclla._programs.build_count`).

    Raises
    ------
    TypeError
        A dtype other than float32 or float64.
    oclla.DeviceError
        float64 asked of a device without ``cl_khr_fp64``, or a kernel family
        that fails to build or run with every parameter set.
    """
    queue = resolve_queue(queue)
    if dtype is None:
        dtypes = (np.dtype(np.float32),) + ((np.dtype(np.float64),)
                                           if device_info(queue).fp64 else ())
    else:
        dtypes = (np.dtype(dtype),)
        if dtypes[0] not in (np.float32, np.float64):
            raise TypeError(f"dtype must be float32 or float64, got {dtypes[0]}")
    count, seconds = _programs.build_count(), _programs.build_seconds()
    rng = np.random.default_rng(0)
    orders = ()
    for dt in dtypes:
        dt_orders = warmup_orders(queue, dt)
        orders += dt_orders
        for n in dt_orders:
            call_every_routine(queue, dt, n, rng, teaching=n <= TEACHING_ORDERS)
    return Warmup(tuple(str(d) for d in dtypes), tuple(sorted(set(orders))),
                  _programs.build_count() - count, _programs.build_seconds() - seconds)
