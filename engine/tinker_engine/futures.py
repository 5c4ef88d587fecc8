"""Futures: results of asynchronous requests, long-polled through retrieve_future."""

import asyncio
import collections
import logging
import time
from dataclasses import dataclass, field

from .tracing import REQUEST_TRACE

log = logging.getLogger("tinker_engine")

PENDING, DONE, FAILED = "pending", "done", "failed"


@dataclass
class Future:
    request_id: str
    request_type: str  # ForwardBackward, Sample, OptimStep, ... (as in X-Tinker-Request-Type)
    state: str = PENDING
    result: object = None
    error: str = ""
    category: str = "user"
    event: asyncio.Event = field(default_factory=asyncio.Event)
    # For /metrics and request spans: when it was accepted, started running and settled (Unix ns),
    # the caller's trace (tracing.py; None unless tracing is on), and the work it carries.
    created_ns: int = field(default_factory=time.time_ns)
    started_ns: int = 0
    settled_ns: int = 0
    trace: object = field(default_factory=REQUEST_TRACE.get)
    datums: int = 0
    tokens: int = 0


class FutureStore:
    """Keeps every future until `max_finished` newer ones have finished (then the oldest go)."""

    def __init__(self, max_finished: int = 20000):
        self._futures: dict = {}
        self._finished: collections.deque = collections.deque()
        self.max_finished = max_finished
        # Called with each future as it settles, on the loop thread (metrics.py, tracing.py).
        self.listeners: list = []

    def create(self, request_id: str, request_type: str) -> Future:
        fut = Future(request_id, request_type)
        self._futures[request_id] = fut
        return fut

    def get(self, request_id: str):
        return self._futures.get(request_id)

    def complete(self, fut: Future, result) -> None:
        fut.state, fut.result = DONE, result
        self._finished_one(fut)

    def fail(self, fut: Future, message: str, category: str) -> None:
        fut.state, fut.error, fut.category = FAILED, message, category
        self._finished_one(fut)

    def pending(self) -> list:
        return [f for f in self._futures.values() if f.state == PENDING]

    def _finished_one(self, fut: Future) -> None:
        fut.settled_ns = time.time_ns()
        fut.event.set()
        for listener in self.listeners:
            try:
                listener(fut)
            except Exception:  # metrics or tracing must never fail a request
                log.exception("future listener failed")
        self._finished.append(fut.request_id)
        while len(self._finished) > self.max_finished:
            old = self._finished.popleft()
            if old in self._futures and self._futures[old].state != PENDING:
                del self._futures[old]
