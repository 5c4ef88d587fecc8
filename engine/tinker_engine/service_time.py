"""Emulated sampling service time (`--sample-ms-per-token F --sample-slots K`), for benchmarks of
many-engine rollouts on a machine too small to make sampling take GPU-like time.

Each sample request, once its real compute is done, holds one of K engine-wide slots for F × (the
tokens it generated, over all its samples) milliseconds — an asyncio sleep, no CPU — before its
future settles. So an engine serves at most K requests' emulated time at once, like a GPU with a
fixed batch capacity; requests beyond that wait for a slot, first come first served. Results are
unchanged: only when they become visible moves.

Everything here runs on the asyncio loop thread.
"""

import asyncio
import logging

log = logging.getLogger("tinker_engine")


def generated_tokens(result) -> int:
    """Tokens a sample result generated, over all its sequences."""
    if not isinstance(result, dict):
        return 0
    return sum(len(seq.get("tokens") or ()) for seq in result.get("sequences") or () if isinstance(seq, dict))


class SampleServiceTime:
    def __init__(self, ms_per_token: float, slots: int):
        if not (isinstance(slots, int) and slots >= 1) or not 0 <= ms_per_token < float("inf"):
            raise ValueError(f"sample service time needs ms_per_token finite >= 0 and slots an integer >= 1, "
                             f"got {ms_per_token!r}, {slots!r}")
        self.ms_per_token = ms_per_token
        self.slots = slots
        self._semaphore: asyncio.Semaphore | None = None
        self._tasks: set = set()
        self.busy = 0  # requests holding a slot now
        self.waiting = 0  # requests waiting for one
        self.peak_busy = 0
        self.requests = 0  # requests that held a slot (and were released)
        self.held_ms = 0.0  # emulated time served, summed over requests

    def hold(self, fut, result, complete) -> None:
        """On the loop thread: settles `fut` with `result` through `complete(fut, result)` after the
        request's emulated service time (at once when it generated nothing)."""
        ms = self.ms_per_token * generated_tokens(result)
        if ms <= 0:
            complete(fut, result)
            return
        task = asyncio.get_running_loop().create_task(self._hold(fut, result, complete, ms))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _hold(self, fut, result, complete, ms: float) -> None:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.slots)
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.busy += 1
        self.peak_busy = max(self.peak_busy, self.busy)
        try:
            await asyncio.sleep(ms / 1000.0)
        finally:
            self.busy -= 1
            self._semaphore.release()
        self.requests += 1
        self.held_ms += ms
        complete(fut, result)

    def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def info(self) -> dict:
        return {
            "ms_per_token": self.ms_per_token,
            "slots": self.slots,
            "busy": self.busy,
            "waiting": self.waiting,
            "peak_busy": self.peak_busy,
            "requests": self.requests,
            "held_ms": round(self.held_ms, 3),
        }
