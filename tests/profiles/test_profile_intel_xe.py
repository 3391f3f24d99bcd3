"""The correctness core (profile_core.py) under the ``intel-xe`` device-limit profile."""

from profile_core import *  # noqa: F401,F403

PROFILE = "intel-xe"
