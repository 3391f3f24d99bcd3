"""Runs happen here, off the GUI thread, so the window never freezes.

:class:`RunThread` wraps :func:`viewer.runner.execute`: it reports the step
count as the algorithm records steps, stops at the next step boundary when
cancelled, and hands back a :class:`~viewer.runner.RunOutcome`.  OpenCL
objects stay in this thread: oclla builds its kernel objects per thread, so
nothing is shared with the GUI thread but the finished recording.
"""

from __future__ import annotations

import threading

from PySide6 import QtCore

from oclla._notices import forwarded

from .runner import RunRequest, execute, expected_steps


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
        # the library's messages meanwhile (a kernel family's first use: its builds and
        # self-check, seconds on a CPU runtime), this thread's only
        with forwarded(self.notice.emit, this_thread_only=True):
            result = execute(self.request,
                             on_step=lambda k: self.progress.emit(k, self.expected),
                             cancel=self._cancel)
        self.outcome.emit(result)
