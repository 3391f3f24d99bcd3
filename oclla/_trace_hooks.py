"""The single switch between algorithms and the trace.

``active`` is ``None`` unless a :func:`oclla.record` block is open, so an
algorithm's cost with no recorder is one attribute test per kernel.
"""

active = None
