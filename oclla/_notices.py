"""The library's INFO messages passed to a caller for a while.

oclla says at INFO level of its logger ("oclla") what a kernel family's first use on a
device does: its builds and self-check, seconds on a CPU runtime (:mod:`oclla._params`).
:func:`forwarded` hands those messages, one string each, to a function of the caller's
while a block runs: the ``oclla`` command prints them, the viewer's run thread shows them
in the status bar.
"""

from __future__ import annotations

import contextlib
import logging
import threading

LOGGER = "oclla"


class _Forward(logging.Handler):
    """Each INFO (or higher) record's message to ``send``: every thread's, or, with
    ``thread_id``, only that thread's."""

    def __init__(self, send, thread_id: int | None):
        super().__init__(logging.INFO)
        self.send, self.thread_id = send, thread_id

    def emit(self, record: logging.LogRecord) -> None:
        if self.thread_id is None or record.thread == self.thread_id:
            self.send(record.getMessage())


@contextlib.contextmanager
def forwarded(send, *, this_thread_only: bool = False):
    """Within the block, call ``send(message)`` for each message of the "oclla" logger at
    INFO level or above (with ``this_thread_only``, those of the calling thread); the
    logger's level and handlers are as they were afterwards."""
    log = logging.getLogger(LOGGER)
    handler = _Forward(send, threading.get_ident() if this_thread_only else None)
    level = log.level
    log.addHandler(handler)
    if log.getEffectiveLevel() > logging.INFO:
        log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
