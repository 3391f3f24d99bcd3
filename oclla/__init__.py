"""oclla: portable OpenCL linear algebra, fast and step-by-step visible.

The public API mirrors :mod:`scipy.linalg` where scipy has a name::

    import numpy as np, oclla
    a = np.random.default_rng(0).standard_normal((500, 500)).astype(np.float32)
    lu, piv = oclla.lu_factor(a)                 # blocked LU on the default device
    x = oclla.lu_solve((lu, piv), np.ones(500, np.float32))

Devices: :func:`get_queue`, :func:`devices`, device-limit profiles
(:func:`set_profile`, :data:`PROFILES`, or ``OCLLA_PROFILE``); traces: :func:`record`,
:func:`load_recording`; accuracy measures: :mod:`oclla.accuracy`.
"""

from . import accuracy, blas
from ._device import DeviceError, DeviceInfo, device_info, devices, get_queue
from ._profiles import PROFILES, Profile, set_profile
from .lu import lu, lu_factor, lu_solve
from . import rfp
from .ad2at import assemble_ad2at
from .cholesky import cho_factor, cho_solve, cholesky
from .wls import WLSResult, wls_solve
from .trace import Recording, RecordingError, load_recording, record

__version__ = "0.1.0"

__all__ = [
    "DeviceError", "DeviceInfo", "PROFILES", "Profile", "Recording", "RecordingError",
    "accuracy", "blas", "device_info", "devices", "get_queue", "load_recording", "lu",
    "lu_factor", "lu_solve", "record", "set_profile",
    "WLSResult", "assemble_ad2at", "cho_factor", "cho_solve", "cholesky", "rfp", "wls_solve",
]
