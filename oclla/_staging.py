"""Page-locked staging buffers between a host matrix and the device, double-buffered.

A copy from ordinary (pageable) host memory goes through the driver's own
bounce buffer: NVIDIA's OpenCL then moves about 8 GB/s and blocks the host
thread.  A buffer made with ``CL_MEM_ALLOC_HOST_PTR`` and mapped once is
page-locked host memory: a copy from (or to) its mapped pointer is a DMA at
the bus's full speed and returns at once.  :class:`Staging` holds ``slots``
such buffers of one panel each; a transfer of a rectangle of the caller's
C-contiguous host matrix goes

* up:   host rectangle → staging slot (host threads, :data:`COPY_THREADS`
  row blocks at once) → device buffer (DMA on the copy queue);
* down: device buffer → staging slot (DMA) → host rectangle (a host thread,
  once the DMA's event completes; the caller's thread does not wait).

Slots are taken round-robin: a slot is reused once its DMA (upload) or its
landing in host memory (download) is done, so with two or more slots one
panel's host copy runs while the other's DMA is on the bus.  An upload of a
rectangle that a pending download writes waits for that download to land.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyopencl as cl

#: Host threads that copy between the caller's matrix and the staging buffers
#: (numpy releases the GIL while it copies): one thread moves 5-10 GB/s.
COPY_THREADS = 8

#: Rectangles of fewer entries are copied by the calling thread alone.
SMALL = 1 << 20


class Staging:
    """``slots`` page-locked buffers of ``entries`` entries of ``dtype`` on ``copyq``'s
    context (the transfers are enqueued on ``copyq``).  Use as a context manager, or
    call :meth:`close` (waits for the pending downloads, unmaps the buffers).

    Attributes
    ----------
    host_copy_s : float
        Seconds the calling thread spent copying into the slots (the uploads' host
        part; the downloads' host part runs beside it).
    """

    def __init__(self, copyq: cl.CommandQueue, entries: int, dtype, *, slots: int = 3,
                 threads: int = COPY_THREADS):
        self.copyq = copyq
        self.dtype = np.dtype(dtype)
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
        self.buffers, self.arrays = [], []
        for _ in range(slots):
            buf = cl.Buffer(copyq.context, flags, max(entries, 1) * self.dtype.itemsize)
            arr, event = cl.enqueue_map_buffer(copyq, buf, cl.map_flags.READ | cl.map_flags.WRITE,
                                               0, (max(entries, 1),), self.dtype)
            event.wait()
            self.buffers.append(buf)
            self.arrays.append(arr)
        self.busy = [None] * slots            # an Event or a Future per slot
        self.next = 0
        self.threads = max(1, int(threads))
        self.copiers = ThreadPoolExecutor(self.threads)
        self.lander = ThreadPoolExecutor(1)
        self.landing = []                     # (host, r0, r1, c0, c1, future)
        self.host_copy_s = 0.0

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _slot(self) -> int:
        s = self.next
        self.next = (s + 1) % len(self.arrays)
        pending = self.busy[s]
        if isinstance(pending, cl.Event):
            pending.wait()
        elif pending is not None:
            pending.result()
        self.busy[s] = None
        return s

    def _copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        """dst[...] = src, in row blocks on the copy threads for large rectangles."""
        rows = dst.shape[0]
        if dst.size < SMALL or rows < 2:
            np.copyto(dst, src)
            return
        step = -(-rows // self.threads)
        jobs = [self.copiers.submit(np.copyto, dst[i:i + step], src[i:i + step])
                for i in range(0, rows, step)]
        for job in jobs:
            job.result()

    def _settle(self, host: np.ndarray, r0: int, r1: int, c0: int, c1: int) -> None:
        """Wait for the pending downloads into ``host`` that overlap the rectangle."""
        keep = []
        for item in self.landing:
            h, a0, a1, b0, b1, future = item
            if h is host and a0 < r1 and r0 < a1 and b0 < c1 and c0 < b1:
                future.result()
            elif not future.done():
                keep.append(item)
        self.landing = keep

    def upload(self, buf: cl.Buffer, host: np.ndarray, r0: int, c0: int, h: int, w: int, *,
               wait_for=None) -> cl.Event:
        """Enqueue the copy of host[r0:r0+h, c0:c0+w] into ``buf`` (row-major, leading
        dimension w) on the copy queue after ``wait_for``; returns the DMA's event."""
        self._settle(host, r0, r0 + h, c0, c0 + w)
        s = self._slot()
        stage = self.arrays[s][:h * w].reshape(h, w)
        began = time.perf_counter()
        self._copy(stage, host[r0:r0 + h, c0:c0 + w])
        self.host_copy_s += time.perf_counter() - began
        event = cl.enqueue_copy(self.copyq, buf, stage, is_blocking=False, wait_for=wait_for)
        self.busy[s] = event
        return event

    def download(self, buf: cl.Buffer, host: np.ndarray, r0: int, c0: int, h: int, w: int,
                 *, wait_for=None) -> cl.Event:
        """Enqueue the copy of ``buf`` (h x w, row-major) into host[r0:r0+h, c0:c0+w]:
        the DMA on the copy queue after ``wait_for``, the host part on a thread once the
        DMA is done.  Returns the DMA's event."""
        s = self._slot()
        stage = self.arrays[s][:h * w].reshape(h, w)
        event = cl.enqueue_copy(self.copyq, stage, buf, is_blocking=False, wait_for=wait_for)
        self.copyq.flush()
        target = host[r0:r0 + h, c0:c0 + w]

        def land():
            event.wait()
            self._copy(target, stage)

        future = self.lander.submit(land)
        self.busy[s] = future
        self.landing.append((host, r0, r0 + h, c0, c0 + w, future))
        return event

    def close(self) -> None:
        """Wait for every pending transfer, then unmap and free the buffers."""
        try:
            for pending in self.busy:
                if isinstance(pending, cl.Event):
                    pending.wait()
                elif pending is not None:
                    pending.result()
        finally:
            self.lander.shutdown(wait=True)
            self.copiers.shutdown(wait=True)
            for arr, buf in zip(self.arrays, self.buffers):
                arr.base.release(self.copyq)
                buf.release()
            self.copyq.finish()
            self.arrays, self.buffers, self.busy, self.landing = [], [], [], []
