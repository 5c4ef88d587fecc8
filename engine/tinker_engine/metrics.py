"""`/metrics`: the engine's state and throughput in the Prometheus text format (0.0.4).

Standard library only (the environment's cache key is requirements.txt's hash, see otlp.py).
Counters and histograms are updated as futures settle (FutureStore.listeners, on the loop thread);
gauges are read when scraped. Names follow Prometheus conventions: `tinker_engine_` prefix, base
units (seconds, bytes), `_total` on counters.
"""

import math
import os
import threading

from .futures import DONE

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
TOKEN_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)


def _labels(names: tuple, values: tuple, extra: str = "") -> str:
    pairs = [f'{n}="{_escape(v)}"' for n, v in zip(names, values)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _escape(value) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    def __init__(self, name: str, help_text: str, labels: tuple = ()):
        self.name, self.help, self.label_names = name, help_text, labels
        self.values: dict = {}
        self.lock = threading.Lock()

    def inc(self, amount: float = 1, *labels) -> None:
        with self.lock:
            self.values[labels] = self.values.get(labels, 0) + amount

    def render(self) -> list:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self.lock:
            items = sorted(self.values.items())
        lines += [f"{self.name}{_labels(self.label_names, k)} {_number(v)}" for k, v in items]
        return lines


class Histogram:
    def __init__(self, name: str, help_text: str, buckets: tuple, labels: tuple = ()):
        self.name, self.help, self.label_names, self.buckets = name, help_text, labels, buckets
        self.series: dict = {}  # labels → [bucket counts..., +Inf count, sum]
        self.lock = threading.Lock()

    def observe(self, value: float, *labels) -> None:
        with self.lock:
            counts = self.series.setdefault(labels, [0] * (len(self.buckets) + 1) + [0.0])
            for i, bound in enumerate(self.buckets):
                if value <= bound:
                    counts[i] += 1
            counts[len(self.buckets)] += 1
            counts[-1] += value

    def render(self) -> list:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self.lock:
            items = sorted((k, list(v)) for k, v in self.series.items())
        for key, counts in items:
            bounds = [_number(b) for b in self.buckets] + ["+Inf"]
            for bound, count in zip(bounds, counts):
                le = 'le="' + bound + '"'
                lines.append(f"{self.name}_bucket{_labels(self.label_names, key, le)} {count}")
            lines.append(f"{self.name}_sum{_labels(self.label_names, key)} {_number(counts[-1])}")
            lines.append(f"{self.name}_count{_labels(self.label_names, key)} {counts[len(self.buckets)]}")
        return lines


def _gauge(name: str, help_text: str, samples: list, label_names: tuple = ()) -> list:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    lines += [f"{name}{_labels(label_names, labels)} {_number(value)}" for labels, value in samples]
    return lines


class EngineMetrics:
    def __init__(self, engine):
        self.engine = engine
        self.requests = Counter("tinker_engine_requests_total", "Requests settled, by type and outcome.",
                                ("type", "outcome"))
        self.sampled = Counter("tinker_engine_sampled_tokens_total", "Tokens sampled (completions of settled sample requests).")
        self.trained = Counter("tinker_engine_trained_tokens_total", "Tokens of settled forward_backward requests.")
        self.forwarded = Counter("tinker_engine_forward_tokens_total", "Tokens of settled forward-only requests.")
        self.queued = Histogram("tinker_engine_request_queue_seconds",
                                "Time a request waited before it ran (seq order, clock cycle, compute thread).",
                                LATENCY_BUCKETS, ("type",))
        self.compute = Histogram("tinker_engine_request_compute_seconds", "Time a request ran until it settled.",
                                 LATENCY_BUCKETS, ("type",))
        self.batch_datums = Histogram("tinker_engine_batch_size",
                                      "Datums per forward(_backward) request, sequences per sample request.",
                                      SIZE_BUCKETS, ("type",))
        self.batch_tokens = Histogram("tinker_engine_batch_tokens", "Tokens per forward(_backward) request.",
                                      TOKEN_BUCKETS, ("type",))

    def future_settled(self, fut) -> None:
        kind = fut.request_type
        self.requests.inc(1, kind, fut.state)
        if fut.started_ns:
            self.queued.observe(max(0, fut.started_ns - fut.created_ns) / 1e9, kind)
            self.compute.observe(max(0, fut.settled_ns - fut.started_ns) / 1e9, kind)
        if fut.state != DONE:
            return
        if kind in ("ForwardBackward", "Forward"):
            (self.trained if kind == "ForwardBackward" else self.forwarded).inc(fut.tokens)
            self.batch_datums.observe(fut.datums, kind)
            self.batch_tokens.observe(fut.tokens, kind)
        elif kind == "Sample":
            sequences = (fut.result or {}).get("sequences") or []
            self.sampled.inc(sum(len(s.get("tokens") or ()) for s in sequences))
            self.batch_datums.observe(len(sequences), kind)

    def render(self) -> str:
        """The exposition (called on the loop thread, where futures change)."""
        lines = []
        for metric in (self.requests, self.sampled, self.trained, self.forwarded, self.queued, self.compute,
                       self.batch_datums, self.batch_tokens):
            lines += metric.render()
        queued, running = {}, {}
        for fut in self.engine.futures.pending():
            into = running if fut.started_ns else queued
            into[fut.request_type] = into.get(fut.request_type, 0) + 1
        lines += _gauge("tinker_engine_queue_depth", "Requests accepted that have not started running, by type.",
                        [((k,), v) for k, v in sorted(queued.items())], ("type",))
        lines += _gauge("tinker_engine_requests_running", "Requests running (or decoding), by type.",
                        [((k,), v) for k, v in sorted(running.items())], ("type",))
        lines += _gauge("tinker_engine_models", "Training models loaded.", [((), len(self.engine.models))])
        lines += _gauge("tinker_engine_samplers", "Sampling sessions open.", [((), len(self.engine.samplers))])
        lines += self._kv_cache()
        lines += self._memory()
        return "\n".join(lines) + "\n"

    def _kv_cache(self) -> list:
        fast = self.engine.fast
        if fast is None:  # the reference sampler keeps no cache between requests
            return []
        try:
            used = sum(l.bytes_for(l.slots, l.length) for l in list(fast.lanes) + list(fast.idle))
        except Exception:  # lanes change on the sampling thread while we read: report next scrape
            return []
        return (_gauge("tinker_engine_kv_cache_used_bytes", "KV cache held by the fast sampler's decode lanes.",
                       [((), used)])
                + _gauge("tinker_engine_kv_cache_capacity_bytes", "The fast sampler's KV cache budget (--kv-cache-gb).",
                         [((), fast.cache_bytes)]))

    def _memory(self) -> list:
        device = self.engine.device
        lines = []
        if device.type == "cuda":
            import torch

            lines += _gauge("tinker_engine_device_memory_allocated_bytes", "Device memory allocated by tensors.",
                            [((str(device),), torch.cuda.memory_allocated(device))], ("device",))
            lines += _gauge("tinker_engine_device_memory_reserved_bytes", "Device memory reserved by the allocator.",
                            [((str(device),), torch.cuda.memory_reserved(device))], ("device",))
        rss = _resident_bytes()
        if rss is not None:
            lines += _gauge("process_resident_memory_bytes", "Resident memory of the engine process.", [((), rss)])
        return lines


def _resident_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None
