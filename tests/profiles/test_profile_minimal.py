"""The correctness core (profile_core.py) under the ``minimal`` device-limit profile."""

from profile_core import *  # noqa: F401,F403

PROFILE = "minimal"
