"""The engine's one compute thread: tensor work in submission order, with decode steps between.

Without continuous batching it is a plain FIFO worker. With it, queued work runs first and then
every active decode batch advances one token, so a training op waits for at most one decode step
and sample requests that arrive while others decode join them at the next step.
"""

import collections
import logging
import threading

from .batching import DecodePool

log = logging.getLogger("tinker_engine")


class ComputeThread:
    def __init__(self, pool: DecodePool | None = None):
        self.pool = pool
        self._queue: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="compute", daemon=True)
        self._thread.start()

    def submit(self, work) -> None:
        """Runs work() on the compute thread after everything submitted before it."""
        with self._cv:
            if self._stopped:
                return
            self._queue.append(work)
            self._cv.notify()

    def shutdown(self) -> None:
        with self._cv:
            self._stopped = True
            self._queue.clear()
            self._cv.notify()

    def _decoding(self) -> bool:
        return self.pool is not None and bool(self.pool)

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._decoding() and not self._stopped:
                    self._cv.wait()
                if self._stopped:
                    return
                work = list(self._queue)
                self._queue.clear()
            for item in work:
                try:
                    item()
                except Exception:  # submitted work settles its own future; this is a bug guard
                    log.exception("compute work failed")
            if self._decoding():
                self.pool.step()
