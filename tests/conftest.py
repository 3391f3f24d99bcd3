"""Shared fixtures (the device queue, dtypes with float64 skipped without fp64, the
small-memory device).  Helpers test modules import live in linalg_helpers.py."""

import numpy as np
import pytest
from hypothesis import settings

import oclla
from oclla import _params

from linalg_helpers import SMALL_MEMORY

settings.register_profile("oclla", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("oclla")


def pytest_sessionstart(session):
    """Without an OpenCL device that compiles kernels there is nothing to test: one line
    saying why and how to get one, instead of the same error for every test."""
    try:
        oclla.get_queue()
    except oclla.DeviceError as exc:
        pytest.exit(f"oclla's tests need an OpenCL device that compiles kernels: {exc}",
                    returncode=1)


@pytest.fixture(scope="session")
def queue():
    return oclla.get_queue()


@pytest.fixture(params=[np.float32, np.float64], ids=["float32", "float64"])
def dtype(request, queue):
    dt = np.dtype(request.param)
    if dt == np.float64 and not oclla.device_info(queue).fp64:
        pytest.skip("device has no fp64")
    return dt


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture(autouse=True)
def _default_parameters():
    """Kernel-parameter overrides a test makes end with the test."""
    yield
    for family in _params.FAMILIES:
        _params.override(family, None)


@pytest.fixture(scope="module")
def small_device():
    """The default queue under :data:`linalg_helpers.SMALL_MEMORY`; the previous profile restored after."""
    previous = oclla.set_profile(SMALL_MEMORY)
    try:
        yield oclla.get_queue()
    finally:
        oclla.set_profile(previous)
