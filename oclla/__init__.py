"""oclla: portable OpenCL linear algebra, fast and step-by-step visible.

The public API mirrors :mod:`scipy.linalg` where scipy has a name::

    import numpy as np, oclla
    a = np.random.default_rng(0).standard_normal((500, 500)).astype(np.float32)
    lu, piv = oclla.lu_factor(a)                 # blocked LU on the default device
    x = oclla.lu_solve((lu, piv), np.ones(500, np.float32))

Devices: :func:`get_queue`, :func:`devices`, device-limit profiles
(:func:`set_profile`, :data:`PROFILES`, or ``OCLLA_PROFILE``); traces: :func:`record`,
:func:`load_recording`; accuracy measures: :mod:`oclla.accuracy`.

A tour of the source
--------------------
Where each algorithm lives (kernels_cl/README.md maps each paper to its module and kernels):

* ``lu.py`` the LU API (``lu_factor``, ``lu_solve``, ``lu``); ``lu_pivot.py`` the per-pivot
  teaching variants (the SYCL post's ``faithful`` port, ``inplace``, ``crout``, ``window``);
  ``lu_blocked.py`` the blocked LU and its panel strategies.
* ``cholesky.py`` full-storage Cholesky (per-pivot and blocked) and its solve; ``rfp.py``
  LAPACK's rectangular full packed storage and the packed Cholesky; ``ad2at.py`` A·D²·Aᵀ;
  ``wls.py`` weighted least squares with mixed-precision refinement; ``hybrid.py`` the
  Cholesky whose diagonal blocks the host's LAPACK factors while the device updates.
* ``tiled.py`` matrices in many buffers (``TiledMatrix``) and the tiled Cholesky;
  ``tiled_lu.py`` the LU with partial pivoting on tiles; ``tiled_ad2at.py`` A·D²·Aᵀ into
  tiles; ``tiled_inverse.py`` the SPD inverse and log-determinant on tiles;
  ``out_of_core.py`` the Cholesky of a host matrix streamed through the device
  (``_staging.py`` its page-locked staging buffers); ``multi_device.py`` and
  ``multi_device_lu.py`` the tiled Cholesky and LU over several devices of one context;
  ``tile_tasks.py`` the tile kernels one at a time, for external schedulers;
  ``tile_graph.py`` the tile Cholesky's task graph (``distributed.py`` runs it on Dask).
* ``blas.py`` the device-level GEMM/SYRK/TRSM/laswp that the factorizations share, on
  ``View`` s (buffer, element offset, leading dimension; the queue first, as in BLAS).
* ``_validate.py`` what every public function does with its arguments: validation, views
  gathered and scattered, the factor/solve prologues (``factor_in_place``,
  ``solve_in_place``).

How a kernel is built and parameterised: a driver calls
``_programs.get_kernel(queue, "file.cl", "name", dtype, **defines)``; the program is built
once per context, source and ``-D`` options (``_programs``), with the tunables of a
parameter family from ``_params.params(queue, family, dtype)``: a tuned entry
(``data/tuned.json`` or the user's ``oclla tune`` file), else values derived from the
device's limits (``_device.device_info``, narrowed by a ``_profiles`` profile), checked
once by ``_selfcheck`` before first use, with safer fallbacks (``_params.ladder``).

How a trace is recorded: every launch goes through ``_programs.enqueue``, which reports
the kernel and its OpenCL profiling event to the recording open in this thread
(``_trace_hooks``); the algorithms mark their steps with ``trace.run`` and ``trace.step``
(phase, active region, pivot, flops); ``record()`` collects them and ``Recording.save``
writes the file the viewer replays.
"""

import os as _os

# A source checkout keeps the viewer and the kernels beside this package (viewer/,
# kernels_cl/); an installed wheel has them inside it.  Either way they are imported as
# oclla.viewer and oclla.kernels_cl.
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if (not _os.path.isdir(_os.path.join(__path__[0], "kernels_cl"))
        and _os.path.isfile(_os.path.join(_checkout, "kernels_cl", "__init__.py"))):
    __path__.append(_checkout)
del _checkout, _os

# The public names are imported on first use (PEP 562): ``import oclla`` costs no pyopencl,
# scipy.linalg or kernel driver until a name that needs one is asked for (a replay of a
# recording needs none).  ``from oclla import X`` and ``oclla.X`` work as if imported here;
# type checkers and doc tools read the block below.
import importlib as _importlib
import sys as _sys
import types as _types
from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    from . import accuracy, blas
    from ._device import DeviceError, DeviceInfo, device_info, devices, get_queue
    from ._profiles import PROFILES, Profile, set_profile
    from .lu import lu, lu_factor, lu_solve
    from . import hybrid, rfp
    from . import sparse
    from .ad2at import assemble_ad2at
    from .cholesky import cho_factor, cho_solve, cholesky
    from . import tiled
    from .tiled import TiledMatrix
    from . import multi_device, multi_device_lu, tile_tasks
    from .inverse import cho_inverse, cho_logdet, inv_spd, trtri
    from .update import cholesky_update
    from .wls import WLSResult, wls_solve
    from .trace import Recording, RecordingError, load_recording, record
    from ._warmup import warmup

_SUBMODULES = ("accuracy", "blas", "hybrid", "rfp", "sparse", "tiled", "multi_device",
               "multi_device_lu", "tile_tasks")
"""The public submodules."""

_FROM = {
    "._device": ("DeviceError", "DeviceInfo", "device_info", "devices", "get_queue"),
    "._profiles": ("PROFILES", "Profile", "set_profile"),
    ".lu": ("lu", "lu_factor", "lu_solve"),
    ".ad2at": ("assemble_ad2at",),
    ".cholesky": ("cho_factor", "cho_solve", "cholesky"),
    ".tiled": ("TiledMatrix",),
    ".inverse": ("cho_inverse", "cho_logdet", "inv_spd", "trtri"),
    ".update": ("cholesky_update",),
    ".wls": ("WLSResult", "wls_solve"),
    ".trace": ("Recording", "RecordingError", "load_recording", "record"),
    "._warmup": ("warmup",),
}
_HOME = {name: module for module, names in _FROM.items() for name in names}
"""Public name -> the module that defines it."""


def __getattr__(name: str):
    """A public name, imported now (and kept); any other submodule, imported."""
    if name in _HOME:
        value = getattr(_importlib.import_module(_HOME[name], __name__), name)
    elif name in _SUBMODULES or (not name.startswith("__") and _is_submodule(name)):
        value = _importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def _is_submodule(name: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(f"{__name__}.{name}") is not None


def __dir__():
    return sorted(set(globals()) | set(__all__))


class _Package(_types.ModuleType):
    """``oclla.lu`` and ``oclla.cholesky`` are functions, though modules of those names
    exist: importing one of them (which sets the package's attribute of its name) binds the
    function of its name instead, as ``from .lu import lu`` did."""

    def __setattr__(self, name, value):
        if name in ("lu", "cholesky") and isinstance(value, _types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

__version__ = "0.1.0"

__all__ = [
    "DeviceError", "DeviceInfo", "PROFILES", "Profile", "Recording", "RecordingError",
    "accuracy", "blas", "device_info", "devices", "get_queue", "load_recording", "lu",
    "lu_factor", "lu_solve", "record", "set_profile",
    "WLSResult", "assemble_ad2at", "cho_factor", "cho_solve", "cholesky", "rfp", "wls_solve",
    "cholesky_update",
    "cho_inverse", "cho_logdet", "inv_spd", "trtri",
    "warmup", "sparse", "TiledMatrix", "tiled", "hybrid",
    "multi_device", "multi_device_lu", "tile_tasks",
]
