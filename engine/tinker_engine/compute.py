"""A compute thread: tensor work in submission order, with decode steps between.

The engine runs training on one such thread and, with the fast sampler, sampling on a second, so
that rollouts of step N+1 decode while step N trains. Without a decode pool a thread is a plain
FIFO worker. With one, queued work runs first and then every active decode batch advances one
token, so queued work waits for at most one decode step and sample requests that arrive while
others decode join them at the next step. On CUDA each thread issues its kernels on a stream of
its own, so the two threads' kernels can run at the same time.
"""

import collections
import logging
import threading

log = logging.getLogger("tinker_engine")


class ComputeThread:
    def __init__(self, pool=None, name: str = "compute", cuda_device=None):
        self.pool = pool
        self.cuda_device = cuda_device
        self._queue: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
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
        if self.cuda_device is not None:
            import torch

            torch.cuda.set_stream(torch.cuda.Stream(self.cuda_device))
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
