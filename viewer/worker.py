"""Runs happen here, off the GUI thread, so the window never freezes.

:class:`RunThread` wraps :func:`viewer.runner.execute`: it reports the step
count as the algorithm records steps, stops at the next step boundary when
cancelled, and hands back a :class:`~viewer.runner.RunOutcome`.  OpenCL
objects stay in this thread: oclla builds its kernel objects per thread, so
nothing is shared with the GUI thread but the finished recording.
"""

from __future__ import annotations

import logging
import threading

from PySide6 import QtCore

from .runner import RunRequest, execute, expected_steps


class _Notices(logging.Handler):
    """The INFO messages that one thread's calls give the "oclla" logger (a kernel
    family's first use on a device: its builds and self-check, seconds on a CPU
    runtime), each passed to ``send``."""

    def __init__(self, thread_id: int, send):
        super().__init__(logging.INFO)
        self.thread_id, self.send = thread_id, send

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread_id:
            self.send(record.getMessage())


class RunThread(QtCore.QThread):
    """One run; ``progress(done, expected)`` while it runs, ``notice(text)`` for each of
    the library's messages meanwhile, ``outcome(obj)`` at the end."""

    progress = QtCore.Signal(int, int)
    notice = QtCore.Signal(str)
    outcome = QtCore.Signal(object)

    def __init__(self, request: RunRequest, purpose: str = "main", parent=None):
        super().__init__(parent)
        self.request = request
        self.purpose = purpose            # "main" or "compare": where the result goes
        self.expected = expected_steps(request)
        self._cancel = threading.Event()

    def cancel(self) -> None:
        """Stop at the next step boundary (the outcome says ``cancelled``)."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def run(self) -> None:
        log = logging.getLogger("oclla")
        handler, level = _Notices(threading.get_ident(), self.notice.emit), log.level
        log.addHandler(handler)
        if log.getEffectiveLevel() > logging.INFO:
            log.setLevel(logging.INFO)
        try:
            result = execute(self.request,
                             on_step=lambda k: self.progress.emit(k, self.expected),
                             cancel=self._cancel)
        finally:
            log.removeHandler(handler)
            log.setLevel(level)
        self.outcome.emit(result)
