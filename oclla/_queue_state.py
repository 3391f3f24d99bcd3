"""What the package keeps for one command queue, for as long as that queue lives.

A queue's routines reuse things between calls: its parameter choices, the kernels its
host loops derive from them, its twin queue (:func:`oclla._programs.launch_queue`), its
side queue for a look-ahead, its copy queue for tile transfers, its scratch memory pool
and the rank-1 update's scratch.  pyopencl's queues take no weak references, so a
module-level dictionary keyed by queues would keep every queue a caller ever passed
alive, and with it those queues and the device memory its pool holds: a service that
makes a queue per request would grow without bound.  The state therefore lives on the
queue object itself (its attribute ``_oclla_state``) and is freed with it.

Two pyopencl objects for one OpenCL queue (``cl.CommandQueue.from_int_ptr``) keep
two states; each is correct alone (a pool serves the commands of one in-order queue).
"""

from __future__ import annotations

import threading

ATTRIBUTE = "_oclla_state"

_lock = threading.RLock()         # made states and fields (held while one is made)

#: A field not yet made (None is an answer: no side queue, no pool).
NOT_MADE = object()


class QueueState:
    """One queue's kept objects.

    ``choices``: (family, dtype as passed) -> the parameters chosen (:mod:`oclla._params`);
    ``derived``: each host thread's values remembered from them (a ``threading.local``);
    ``generation``: the choosing those two belong to (:meth:`forget`);
    ``twin``, ``side``, ``copy``: the queue's other queues (``side`` None if the device
    refused it); ``pool``: its memory pool (None for an out-of-order queue): these four
    :data:`NOT_MADE` until :func:`made`; ``rank1``: itemsize -> the rank-1 update's
    scratch.
    """

    __slots__ = ("choices", "derived", "generation", "twin", "side", "copy", "pool", "rank1",
                 "__weakref__")

    def __init__(self):
        self.forget(0)
        self.twin = self.side = self.copy = self.pool = NOT_MADE
        self.rank1: dict = {}

    def forget(self, generation: int) -> None:
        """Drop the choices and the values derived from them (the parameters were chosen
        anew: ``generation``)."""
        self.choices: dict = {}
        self.derived = threading.local()
        self.generation = generation


def state_of(queue) -> QueueState:
    """``queue``'s state, made on first use."""
    state = getattr(queue, ATTRIBUTE, None)
    if state is None:
        with _lock:
            state = getattr(queue, ATTRIBUTE, None)
            if state is None:
                state = QueueState()
                setattr(queue, ATTRIBUTE, state)
    return state


def made(queue, field: str, make):
    """The ``field`` of ``queue``'s state, ``make()`` on first use (once, however many
    threads ask at the same time)."""
    state = state_of(queue)
    value = getattr(state, field)
    if value is NOT_MADE:
        with _lock:
            value = getattr(state, field)
            if value is NOT_MADE:
                value = make()
                setattr(state, field, value)
    return value
