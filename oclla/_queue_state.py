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

_lock = threading.Lock()

#: A field not yet filled (None is an answer: no side queue, no pool).
NOT_MADE = object()


class QueueState:
    """One queue's kept objects; each module fills its own fields, under its own lock.

    ``choices``: (family, dtype as passed) -> the parameters chosen (:mod:`oclla._params`);
    ``derived``: each host thread's values remembered from them (a ``threading.local``);
    ``generation``: the choosing those two belong to (:meth:`forget`);
    ``twin``, ``side``, ``copy``: the queue's other queues, None until made (``side``
    stays :data:`NOT_MADE` until asked for; None if the device refused it);
    ``pool``: its memory pool (None for an out-of-order queue; :data:`NOT_MADE` until
    asked for); ``rank1``: itemsize -> the rank-1 update's scratch.
    """

    __slots__ = ("choices", "derived", "generation", "twin", "side", "copy", "pool", "rank1",
                 "__weakref__")

    def __init__(self):
        self.forget(0)
        self.twin = None
        self.side = NOT_MADE
        self.copy = None
        self.pool = NOT_MADE
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
