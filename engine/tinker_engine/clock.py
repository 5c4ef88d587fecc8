"""Emulated clock cycles (`--clock-cycle-ms`): training work runs only at cycle boundaries.

The hosted service trains in lock-step *clock cycles* of a shared worker pool: each cycle runs the
forward_backward and optim_step work queued for its models, so a client that submits step N+1
only after step N's results are back misses a cycle per step, while one that queues ahead never
waits. This clock emulates that so that pipelining can be measured locally.

Boundaries lie at multiples of the period on the engine's monotonic clock (origin: engine start).
At a boundary every held operation is handed to the training compute thread in the order it was
released by the per-model seq-id queue; the cycle lasts until that work has finished. Work that
arrives meanwhile waits for the next boundary, and boundaries that pass while a cycle executes
are skipped (the next cycle starts at the first boundary after it finishes).

Everything here runs on the asyncio loop thread (the seq-id queue releases operations there), so
the held list needs no lock.
"""

import asyncio
import logging
import math
import time

log = logging.getLogger("tinker_engine")


class CycleClock:
    def __init__(self, period_ms: float, compute):
        self.period_ms = period_ms
        self.period = period_ms / 1000.0
        self.compute = compute  # the training ComputeThread
        self.origin = time.monotonic()
        self._held: list = []  # dispatch callables, in release order
        self._task: asyncio.Task | None = None
        self.cycles = 0  # boundaries at which a cycle started (idle ones included)
        self.cycles_with_work = 0
        self.ops = 0  # operations run by cycles
        self.executing = False  # a cycle's work is on the compute thread
        self.last_work_cycle_ms = None  # engine clock when the last cycle with work began

    def elapsed(self) -> float:
        return time.monotonic() - self.origin

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._task = loop.create_task(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def hold(self, dispatch) -> None:
        """Runs dispatch() (which queues the work on the compute thread) at the next boundary."""
        self._held.append(dispatch)

    def info(self) -> dict:
        return {
            "cycle_ms": self.period_ms,
            "clock_ms": round(self.elapsed() * 1000.0, 3),  # now, on the clock the boundaries are on
            "cycles": self.cycles,
            "cycles_with_work": self.cycles_with_work,
            "ops": self.ops,
            "held": len(self._held),
            "executing": self.executing,
            "last_work_cycle_ms": self.last_work_cycle_ms,
        }

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        boundary = 0  # index of the last boundary a cycle started at
        while True:
            now = self.elapsed()
            # The next boundary still ahead, never the one just run (the loop may wake a hair early).
            boundary = max(boundary + 1, math.floor(now / self.period) + 1)
            await asyncio.sleep(boundary * self.period - now)
            self.cycles += 1
            batch, self._held = self._held, []
            if not batch:
                continue
            self.cycles_with_work += 1
            self.ops += len(batch)
            self.executing, self.last_work_cycle_ms = True, round(self.elapsed() * 1000.0, 3)
            for dispatch in batch:
                try:
                    dispatch()  # only queues the work (which settles its own future) on the compute thread
                except Exception:  # a bug guard: keep the clock and the other operations going
                    log.exception("clock cycle dispatch failed")
            # The compute thread is FIFO: this marker runs once the cycle's work is done.
            finished = asyncio.Event()
            self.compute.submit(lambda: loop.call_soon_threadsafe(finished.set))
            await finished.wait()
            self.executing = False
