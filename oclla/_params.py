"""Kernel parameters: measured ones where a tuner stored them, else from the device's limits.

Every tunable (tile sizes, vector widths, work-group sizes, block sizes) is
decided here and nowhere else.  For a family of parameters, :func:`params`
returns, in this order of preference:

1. an :func:`override` set by the program (the tuner, tests);
2. parameters measured by ``oclla tune`` on this device (same device name,
   driver and dtype), stored in the user cache directory (:func:`user_file`);
3. parameters shipped with the package for a device of the same name
   (``oclla/data/tuned.json``);
4. defaults derived from what the device reports: kind, maximum work-group
   size and work-item sizes, local memory, native vector width (the widest
   that really compiles; :func:`oclla._device.vector_width`), all narrowed by
   a device-limit profile if one is set (:mod:`oclla._profiles`; stored
   parameters are then not used).  Derived parameters are not trusted
   blindly: before first use, the family's self-check (:mod:`oclla._selfcheck`:
   build its kernels, run a tiny case, compare with numpy) runs with them; if
   it fails, the next rung of the family's :func:`ladder` is tried (safer
   limits, down to a floor any device runs), with one ``RuntimeWarning``.
   Verdicts are remembered per device, driver, profile and dtype
   (:mod:`oclla._checked`); only when every rung fails does
   :class:`oclla.DeviceError` carry the last failure's build log.

Stored parameters are validated against the device's limits (:func:`check`)
before use, so a file written for another device never produces a kernel
that cannot launch.

Each family's knobs (what they mean, their default rules, allowed values,
the kernels that read them and the values the tuner tries) are declared once
in :mod:`oclla._knobs`; docs/parameters.md is generated from there.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import warnings
from functools import lru_cache
from importlib import resources

import numpy as np
import pyopencl as cl

from . import _checked, _knobs, _trace_hooks
from ._device import DeviceError, device_info, get_queue, vector_width, vectors_build
from ._queue_state import QueueState, state_of
# the drivers import these here
from ._knobs import chol_apply_rows, chol_row_leaf, thin_gemm  # noqa: F401

_log = logging.getLogger("oclla")

FAMILIES = tuple(_knobs.FAMILIES)
DATA_VERSION = 1
_overrides: dict = {}


def override(family: str, params: dict | None) -> None:
    """Use ``params`` for ``family`` from now on (``None`` restores the normal choice).

    Keys not given keep their device defaults (a gemm set must be complete).
    """
    if family not in FAMILIES:
        raise KeyError(family)
    if params is None:
        _overrides.pop(family, None)
    else:
        _overrides[family] = dict(params)
    _forget()


def reload() -> None:
    """Forget cached choices (after ``oclla tune`` wrote a new file, or the device-limit
    profile changed)."""
    _forget()
    _stored_entries.cache_clear()
    _checked.forget()


def _forget() -> None:
    _chosen.clear()
    _generation[0] += 1


# ---- device-limit defaults -------------------------------------------------------------

def _native_width(queue, info, itemsize: int) -> int:
    """The widest native vector the device reports (``info``, which a profile or a
    safer rung may narrow) and really compiles (:func:`oclla._device.vector_width`)."""
    reported = info.native_width_double if itemsize == 8 else info.native_width_float
    width = _knobs.pow2_at_most(max(1, min(16, reported)))
    return 1 if width == 1 else min(width, vector_width(queue, itemsize))


def _device(queue, info, itemsize: int) -> _knobs.Device:
    """The device as the knobs' default rules see it: ``info`` with this queue's vector
    answers (:func:`_native_width`, :func:`oclla._device.vectors_build`)."""
    return _knobs.Device(info, itemsize, native=lambda: _native_width(queue, info, itemsize),
                         builds=lambda width: vectors_build(queue, itemsize, width))


def _defaults(queue, info, family: str, itemsize: int) -> dict:
    """The set of ``family`` derived from the device's limits (:func:`oclla._knobs.derive`)."""
    return _knobs.derive(family, _device(queue, info, itemsize))


# ---- validation -----------------------------------------------------------------------

def chol_fused_leaf(p: dict, gemm: dict) -> bool:
    """Whether the blocked Cholesky with ``chol`` parameters ``p`` factors each next leaf
    in the trailing update's launch (syrk_leaf.cl): FUSE_LEAF set, row leaves, and
    ``gemm`` parameters of the tiled kernel whose tiles hold a LEAF x LEAF block and
    whose work-groups have at least LEAF items."""
    return (bool(p["FUSE_LEAF"]) and chol_row_leaf(p) and gemm.get("KERNEL") == "tiled"
            and min(gemm["TILE_M"], gemm["TILE_N"]) >= p["LEAF"]
            and (gemm["TILE_M"] // gemm["WPT_M"]) * (gemm["TILE_N"] // gemm["WPT_N"])
            >= p["LEAF"])


def check(family: str, p: dict, info, itemsize: int) -> str | None:
    """None if ``p`` is a usable parameter set of ``family`` on this device, else why not
    (:func:`oclla._knobs.check`; a gemm set as :func:`oclla._knobs.complete_gemm`
    reads it)."""
    if family in ("gemm", "gemm_thin"):
        p = _knobs.complete_gemm(p)
    return _knobs.check(family, p, _knobs.Device(info, itemsize))


# ---- stored (tuned) parameters ----------------------------------------------------------

def user_file() -> str:
    """The user's tuned-parameter file (``oclla tune`` writes it)."""
    env = os.environ.get("OCLLA_TUNED_FILE")
    if env:
        return env
    import platformdirs
    return os.path.join(platformdirs.user_cache_dir("oclla"), "tuned.json")


def read_entries(text: str) -> list:
    """Entries of a tuned-parameter file's text (empty list if unreadable)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    if not isinstance(data, dict) or data.get("version") != DATA_VERSION:
        return []
    return [e for e in data.get("entries", []) if isinstance(e, dict)]


@lru_cache(maxsize=None)
def _stored_entries() -> tuple:
    """(user entries, shipped entries)."""
    user = []
    path = user_file()
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            user = read_entries(f.read())
    shipped = read_entries(resources.files(__package__).joinpath("data", "tuned.json")
                           .read_text(encoding="utf-8"))
    return user, shipped


def stored(info, dtype_name: str) -> dict:
    """The stored parameter families for this device and dtype ({} if none)."""
    user, shipped = _stored_entries()
    for entries, need_driver in ((user, True), (shipped, True), (shipped, False)):
        for e in entries:
            if (e.get("device") == info.name and e.get("dtype") == dtype_name
                    and (not need_driver or e.get("driver") == info.driver_version)):
                return e.get("params", {})
    return {}


def _merge(family: str, base: dict, given: dict) -> dict:
    """``given`` over ``base`` (a gemm set stands alone: its keys depend on its KERNEL;
    knobs added since it was stored take the values it meant,
    :func:`oclla._knobs.complete_gemm`)."""
    if family in ("gemm", "gemm_thin"):
        return _knobs.complete_gemm(dict(given))
    return {**base, **given}


_chosen: dict = {}         # (cl.Device, family, dtype name) -> the chosen items


def _cached(queue, family: str, dtype_name: str) -> tuple:
    """The chosen items of ``family`` for ``queue``'s device, chosen once per device: the
    choice depends on the device alone (and a cache keyed by queues would keep them
    alive, :mod:`oclla._queue_state`)."""
    key = (queue.device, family, dtype_name)
    chosen = _chosen.get(key)
    if chosen is None:
        chosen = _chosen[key] = _choose(queue, family, dtype_name)
    return chosen


def _choose(queue, family: str, dtype_name: str) -> tuple:
    info = device_info(queue)
    itemsize = np.dtype(dtype_name).itemsize
    chosen = _defaults(queue, info, family, itemsize)
    if family in _overrides:
        return tuple(sorted(_merge(family, chosen, _overrides[family]).items()))
    if os.environ.get("OCLLA_TUNED", "1") != "0" and info.profile is None:
        tuned = stored(info, dtype_name).get(family)
        if tuned:
            candidate = _merge(family, chosen, tuned)
            problem = check(family, candidate, info, itemsize)
            if problem is None:
                return tuple(sorted(candidate.items()))     # measured on this device
            warnings.warn(f"ignoring stored {family} parameters for {info.name}: {problem}",
                          RuntimeWarning, stacklevel=3)
    if not selfcheck[0]:
        return tuple(sorted(chosen.items()))
    return tuple(sorted(_first_working(queue, info, family, dtype_name).items()))


#: ``selfcheck[0]``: whether derived parameters are self-checked before first use
#: (``OCLLA_SELFCHECK=0`` turns it off: the derived set is used as it is, which the
#: tests of the derived sets themselves want, so that no fallback hides a failure).
selfcheck = [os.environ.get("OCLLA_SELFCHECK", "1") != "0"]


# ---- fallback: derived parameters are tried before use -----------------------------------

#: Limits of the safer rungs of every family's ladder: the device's own (its
#: kind kept), narrowed to the ``minimal`` profile, then to a floor that any
#: OpenCL device runs (tiny work-groups, scalar code, little local memory).
SAFER_LIMITS = (
    dict(max_work_group_size=64, local_mem_size=16 * 1024, native_width_float=1,
         native_width_double=1),
    dict(max_work_group_size=4, local_mem_size=8 * 1024, native_width_float=1,
         native_width_double=1, kind="CPU"),
)


def ladder(queue, family: str, dtype) -> list:
    """The parameter sets of ``family`` in the order they are tried on this device: those
    derived from its limits, then those derived from :data:`SAFER_LIMITS` (each
    valid for the device, no repeats)."""
    info = device_info(queue)
    itemsize = np.dtype(dtype).itemsize
    rungs = []
    for limits in ({},) + SAFER_LIMITS:
        narrowed = dict(info.as_dict(), **{
            key: min(getattr(info, key), value) if isinstance(value, int) else value
            for key, value in limits.items()})
        narrowed["max_work_item_sizes"] = tuple(
            min(s, narrowed["max_work_group_size"]) for s in info.max_work_item_sizes)
        p = _defaults(queue, type(info)(**narrowed), family, itemsize)
        if p not in rungs and check(family, p, info, itemsize) is None:
            rungs.append(p)
    return rungs


class UnusableFamily(DeviceError):
    """No parameter set of a family passes its self-check on this device."""


_verify_lock = threading.RLock()
_trial = threading.local()      # .sets: {(cl.Device, family, dtype name): parameters}
_trials_running = [0]           # how many trials are open in any thread (fast path: 0)


@contextlib.contextmanager
def trial(queue, family: str, dtype, p: dict):
    """Within the block, :func:`params` of ``family`` returns ``p`` in this thread, for
    every queue on ``queue``'s device (host loops use twin queues)."""
    sets = getattr(_trial, "sets", None)
    if sets is None:
        sets = _trial.sets = {}
    key = (queue.device, family, np.dtype(dtype).name)
    before = sets.get(key)
    sets[key] = dict(p)
    _trials_running[0] += 1
    try:
        yield
    finally:
        _trials_running[0] -= 1
        if before is None:
            del sets[key]
        else:
            sets[key] = before


def try_parameters(queue, family: str, dtype, p: dict) -> str | None:
    """Run ``family``'s self-check (:mod:`oclla._selfcheck`) with ``p``: None if it builds,
    runs and computes correctly, else what went wrong.  Nothing is recorded."""
    from ._selfcheck import CheckFailed, run_check
    with trial(queue, family, dtype, p), _trace_hooks.suspended():
        try:
            run_check(queue, family, np.dtype(dtype))
        except CheckFailed as exc:
            return str(exc)
        except UnusableFamily:
            raise                       # another family the check needs: not this one's fault
        except (DeviceError, cl.Error, np.linalg.LinAlgError, ArithmeticError) as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


def _first_working(queue, info, family: str, dtype_name: str) -> dict:
    """The first rung of :func:`ladder` whose self-check passes on this device, tried once
    per device, driver, profile and dtype (:mod:`oclla._checked` remembers verdicts).

    Where every rung failed and some of those failures were remembered from an earlier
    process, those rungs are checked once more before the family is given up: a failure
    that was not the device's (another program holding its memory, a check cut short)
    must not make the family unusable for good."""
    with _verify_lock:
        queue = get_queue(queue.device)        # the checks call the public API
        rungs = ladder(queue, family, dtype_name)
        if not rungs:
            raise UnusableFamily(f"no {family} parameter set fits the limits of {info.name}: "
                              f"{info.describe()}")

        def check(p) -> tuple:
            # a first use's check builds and runs the family's kernels (seconds on a
            # CPU runtime): said at INFO level, which the oclla command shows
            _log.info("building and checking the %s kernels (%s) on %s: their first use "
                      "with this device and driver", family, dtype_name, info.name)
            problem = try_parameters(queue, family, dtype_name, p)
            verdict = (problem is None, problem or "")
            _checked.put(_checked.key(info, dtype_name, family, p), *verdict)
            return verdict

        failures, remembered = [], []          # failures[i]: why rung i failed
        for i, p in enumerate(rungs):
            verdict = _checked.get(_checked.key(info, dtype_name, family, p))
            fresh = verdict is None
            if fresh:
                verdict = check(p)
            if verdict[0]:
                if failures and fresh:
                    warnings.warn(_fallback_message(info, family, rungs[0], p, failures[0]),
                                  RuntimeWarning, stacklevel=2)
                return p
            failures.append(verdict[1])
            if not fresh:
                remembered.append(i)
        for i in remembered:                   # every rung failed: those again, once
            verdict = check(rungs[i])
            if verdict[0]:
                if i:
                    warnings.warn(_fallback_message(info, family, rungs[0], rungs[i],
                                                    failures[0]),
                                  RuntimeWarning, stacklevel=2)
                return rungs[i]
            failures[i] = verdict[1]
    raise UnusableFamily(f"every {family} parameter set failed on {info.name} "
                      f"(driver {info.driver_version}); the last, {rungs[-1]}:\n"
                      f"{failures[-1]}")


def changed_values(first: dict, used: dict) -> str:
    """The values of ``used`` that differ from ``first``, as "KEY old -> new, ..."."""
    return ", ".join(f"{k} {first.get(k)} -> {v}" for k, v in sorted(used.items())
                     if first.get(k) != v)


def _fallback_message(info, family: str, first: dict, used: dict, why: str) -> str:
    changed = changed_values(first, used)
    lines = [line.strip() for line in why.strip().splitlines() if line.strip()] or ["unknown"]
    reason = next((line for line in lines[1:] if "error" in line.lower()), lines[0])
    return (f"oclla: on {info.name} (driver {info.driver_version}) the {family} kernels "
            f"failed with the parameters derived from the device's limits ({reason}); "
            f"using safer ones instead ({changed}): correct, possibly slower. "
            f"Remembered in {_checked.path()}")


def is_stored(queue, family: str, dtype) -> bool:
    """Whether ``family``'s parameters on this device come from an override or a stored
    (tuned) entry rather than from the device's limits."""
    info = device_info(queue)
    if family in _overrides:
        return True
    return (os.environ.get("OCLLA_TUNED", "1") != "0" and info.profile is None
            and bool(stored(info, np.dtype(dtype).name).get(family))
            and [params(queue, family, dtype)] != ladder(queue, family, dtype)[:1])


_generation = [0]          # counts the times the choices were forgotten


def _current(queue) -> QueueState:
    """``queue``'s state, its choices and remembered values dropped if they were made
    before the parameters were last chosen anew."""
    state = state_of(queue)
    if state.generation != _generation[0]:
        state.forget(_generation[0])
    return state


def remembered(queue, key: tuple, make):
    """``make()``, remembered for ``queue`` under ``key`` by this thread until the
    parameters are chosen anew (an override, :func:`reload`); made afresh while trials
    run.  For what the host loops derive from the parameters on every launch (a kernel
    and its launch shape: a blocked LU enqueues several hundred kernels, and its host
    work, not the device, set its time in some processes:
    benchmarks/results/nvidia-h200-2026-12-01-host-time.txt).  Per thread, as the
    kernels of :func:`oclla._programs.get_kernel` are."""
    if _trials_running[0]:
        return make()
    derived = _current(queue).derived
    values = getattr(derived, "values", None)
    if values is None:
        values = derived.values = {}
    value = values.get(key)
    if value is None:
        value = values[key] = make()
    return value


def params(queue, family: str, dtype) -> dict:
    """Parameters of ``family`` for this queue's device and dtype: the first of the
    module docstring's sources (docs/parameters.md lists every family's knobs).

    A fresh dict each call; looked up by the call's own arguments first
    (host loops ask thousands of times per factorization).
    """
    if _trials_running[0]:
        tried = getattr(_trial, "sets", {}).get((queue.device, family, np.dtype(dtype).name))
        if tried is not None:
            return dict(tried)
    choices = _current(queue).choices
    chosen = choices.get((family, dtype))
    if chosen is None:
        if family not in FAMILIES:
            raise KeyError(family)
        chosen = choices[family, dtype] = _cached(queue, family, np.dtype(dtype).name)
    return dict(chosen)
