"""Shared fixtures: the device queue, dtypes (float64 skipped without fp64), seeded inputs."""

import numpy as np
import pytest
from hypothesis import settings

import oclla
from oclla import _params

settings.register_profile("oclla", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("oclla")


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


def random_matrix(rng, n, dtype, m=None):
    """Seeded standard-normal matrix (n x n, or n x m)."""
    return rng.standard_normal((n, n if m is None else m)).astype(dtype)


def spd(n, dtype, seed=0):
    """Seeded symmetric positive definite matrix with condition number below ~10."""
    x = np.random.default_rng(seed + 7 * n).standard_normal((n, n))
    return (x @ x.T / max(n, 1) + np.eye(n)).astype(dtype)


@pytest.fixture(autouse=True)
def _default_parameters():
    """Kernel-parameter overrides a test makes end with the test."""
    yield
    for family in _params.FAMILIES:
        _params.override(family, None)
