"""Seeded initialisation on torch's global random state, one thread at a time.

Hugging Face builds a model from its config, and peft initialises adapters, with torch's default
CPU generator, which is one per process, not per thread. Two threads that seed it, draw from it, or
fork it and put it back at the same time interleave: a built-in base model initialised while
another thread counted parameters (a `healthz` on a just-restarted engine that a worker's retried
sample had reached first) came out with other weights, and a run replayed on that engine diverged
from its uninterrupted twin. Every use of the global generator in the engine goes through here.
"""

import contextlib
import threading

import torch

_GLOBAL_RNG = threading.RLock()


@contextlib.contextmanager
def global_rng(seed: int | None = None):
    """Holds the global generator alone; seeds it when `seed` is given; puts its state back after."""
    with _GLOBAL_RNG, torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        yield
