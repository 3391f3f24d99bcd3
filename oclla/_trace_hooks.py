"""The single switch between algorithms and the trace.

The active recorder is context-local (a :class:`contextvars.ContextVar`):
each thread, and each asyncio task, sees only the recorder it opened
itself, so calls in other threads are never captured and several threads
may record at the same time.  ``active()`` is ``None`` unless an
:func:`oclla.record` block is open in the current context, so an
algorithm's cost with no recorder is one context-variable lookup per
kernel: no lock, no allocation.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

_recorder: ContextVar = ContextVar("oclla_recorder", default=None)

active = _recorder.get
"""``active()``: the recorder open in the current thread or task, or None."""


def activate(recorder):
    """Make ``recorder`` the current context's; returns the token :func:`restore` takes."""
    return _recorder.set(recorder)


def restore(token) -> None:
    """Undo the :func:`activate` call that returned ``token``."""
    _recorder.reset(token)


@contextmanager
def suspended():
    """No recorder is active inside the block (in this thread or task only).

    For work the library does on its own behalf (e.g. self-checks of
    kernels) that must not appear in the user's recording; the recorder
    that was active is restored on exit, also after an exception.
    """
    token = _recorder.set(None)
    try:
        yield
    finally:
        _recorder.reset(token)
