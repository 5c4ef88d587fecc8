"""Where a decode step of the fast sampler goes: its FastSampler in-process on one device (no HTTP),
N single-sample rows of one LoRA snapshot decoding together, each step split into the model step
(a CUDA graph replay on CUDA), the draws, and the host's bookkeeping; then torch.profiler's top
operators of two eager steps (what a graph replay holds). With --variants, also without CUDA
graphs and without the adapter (base model), which says what graphs buy and what the unmerged
float32 LoRA path costs.

The split is measured with a device sync around each part (on CUDA), so parts add up to a step
whose launches could not overlap; the "as run" rate has no added syncs. Bandwidth counts the bytes
a model step must read at least (weights, the KV cache up to the step's length bucket) and the
logits it writes, against the card's measured copy bandwidth.

Usage: python profile_decode.py [--device cuda --model DIR] [--rows 64,512] [--tokens 64] [--variants]
"""

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "engine"))

from tinker_engine import fast_decode  # noqa: E402
from tinker_engine.base_models import BaseModelCache, instance_sharing_weights  # noqa: E402
from tinker_engine.cli import configure_determinism  # noqa: E402
from tinker_engine.fast_decode import FastJob, FastSampler  # noqa: E402
from tinker_engine.lora import LoraSpec, attach_lora  # noqa: E402
from tinker_engine.sampler import SamplingParams  # noqa: E402

from bench_engine import (  # noqa: E402
    add_model_arguments, card_peaks, model_sizes, model_spec, release, resolve_model_arguments, rl_prompts, sync,
)
from profile_train import profile  # noqa: E402


def adapted_model(base, rank: int):
    """A LoRA snapshot with a non-zero adapter (as after training), so the adapter path does real work."""
    model = attach_lora(instance_sharing_weights(base), LoraSpec(rank=rank, seed=0))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.01, generator=torch.Generator(device=p.device).manual_seed(len(name)))
    return model


class Parts:
    """Seconds spent in the model steps and the draws, with the device synced around each."""

    def __init__(self, device):
        self.device = device
        self.model = self.draws = 0.0
        self._decode, self._draw = fast_decode._Lane.decode, fast_decode.draw_rows

    def __enter__(self):
        parts, decode, draw = self, self._decode, self._draw

        def timed_decode(lane, n, max_position):
            sync(parts.device)
            start = time.perf_counter()
            decode(lane, n, max_position)
            sync(parts.device)
            parts.model += time.perf_counter() - start

        def timed_draw(*args):
            sync(parts.device)
            start = time.perf_counter()
            out = draw(*args)
            sync(parts.device)
            parts.draws += time.perf_counter() - start
            return out

        fast_decode._Lane.decode, fast_decode.draw_rows = timed_decode, timed_draw
        return self

    def __exit__(self, *exc):
        fast_decode._Lane.decode, fast_decode.draw_rows = self._decode, self._draw


def run_rows(args, base, snapshot, rows: int, graphs: bool, profile_label: str | None = None) -> dict:
    """Times --tokens decode steps of `rows` rows that never stop: ms per step as run and split into
    parts, and the length bucket they reached. With profile_label, then prints the profile of two
    eager steps."""
    sampler = FastSampler(args.device, args.cache_bytes, max_slots=max(rows, 8))
    sampler.use_graphs = graphs and args.device.type == "cuda"
    total = args.warmup + 2 * args.tokens + 8  # never reached: every step decodes all rows
    key = ("snapshot", id(snapshot)) if snapshot is not None else ("base",)
    failures = []
    for i, prompt in enumerate(rl_prompts(rows, args)):
        params = SamplingParams(max_tokens=total, temperature=1.0, seed=i)
        sampler.submit(FastJob(key, base, (lambda: snapshot) if snapshot is not None else None, prompt, 1, params,
                               [], None, on_done=lambda r: None, on_error=failures.append,
                               fallback=lambda: failures.append("fell back to the reference path")))
    sampler.step()  # admission: prefill, first draws and decode
    for _ in range(args.warmup):  # graph captures for the buckets the timed steps use
        sampler.step()
    sync(args.device)
    start = time.perf_counter()
    for _ in range(args.tokens):
        sampler.step()
    sync(args.device)
    as_run = (time.perf_counter() - start) / args.tokens
    with Parts(args.device) as parts:
        start = time.perf_counter()
        for _ in range(args.tokens):
            sampler.step()
        split = time.perf_counter() - start
    if profile_label:
        # Eager steps: a graph replay shows as one launch, eager steps show the operators inside it.
        for lane in sampler.lanes:
            lane.stop_graphs()
        profile(lambda: (sampler.step(), sync(args.device)), args.device, profile_label, args.profile_rows)
    lane = sampler.lanes[0]
    length = min(fast_decode.length_bucket(max(r.position for r in lane.rows) + 1), lane.length)
    sampler.fail_all(RuntimeError("profile done"))
    if any(not isinstance(f, RuntimeError) or str(f) != "profile done" for f in failures):
        raise RuntimeError(f"decode failed: {failures[0]!r}")
    n = args.tokens
    return {"as_run": 1000 * as_run, "model": 1000 * parts.model / n, "draws": 1000 * parts.draws / n,
            "host": 1000 * (split - parts.model - parts.draws) / n, "length": length}


def main():
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    p.add_argument("--rows", default=None, help="comma list of concurrent rows; default 64,512 on CUDA, 32 on CPU")
    p.add_argument("--tokens", type=int, default=None, help="timed decode steps; default 64 on CUDA, 8 on CPU")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--prompt-tokens", default="32,63", help="lo,hi prompt lengths")
    p.add_argument("--kv-cache-gb", type=float, default=0.0, help="default: 40%% of the card, 2 on CPU")
    p.add_argument("--profile-rows", type=int, default=20, help="operators listed (0: no torch.profiler table)")
    p.add_argument("--variants", action="store_true")
    args = p.parse_args()
    configure_determinism()  # as the engine runs; before CUDA starts (cuBLAS workspace setting)
    args.device, dtype = resolve_model_arguments(args)
    cuda = args.device.type == "cuda"
    rows_list = [int(x) for x in (args.rows or ("64,512" if cuda else "32")).split(",")]
    args.tokens = args.tokens or (64 if cuda else 8)
    args.prompt_tokens = [int(x) for x in args.prompt_tokens.split(",")]
    if args.kv_cache_gb > 0:
        args.cache_bytes = int(args.kv_cache_gb * (1 << 30))
    else:
        args.cache_bytes = int(0.4 * torch.cuda.get_device_properties(args.device).total_memory) if cuda else 2 << 30
    spec = model_spec(args)
    base = BaseModelCache(args.device, dtype).model(spec)
    snapshot = adapted_model(base, args.rank)
    _, weight_bytes, kv_per_token = model_sizes(args, args.device, dtype)
    bandwidth = card_peaks(args.device)[0] if cuda else None
    vocab = spec.config.vocab_size

    graphs = ", CUDA graphs" if cuda else ""
    variants = [(f"LoRA rank {args.rank}{graphs}", snapshot, True)]
    if args.variants:
        if cuda:
            variants.append((f"LoRA rank {args.rank}, eager", snapshot, False))
        variants.append((f"base model{graphs}", None, True))
    lines = []
    for rows in rows_list:
        for label, snap, use_graphs in variants:
            profile_label = f"{rows} rows, LoRA rank {args.rank}, eager steps" \
                if args.profile_rows and label == variants[0][0] else None
            r = run_rows(args, base, snap, rows, use_graphs, profile_label)
            step_bytes = weight_bytes + rows * r["length"] * kv_per_token + rows * vocab * 4
            share = "" if bandwidth is None else f" {step_bytes / (r['model'] / 1000) / bandwidth:6.1%} of copy bandwidth"
            lines.append(f"{rows:5d} rows {label:34s} {r['as_run']:8.2f} ms/step {rows / r['as_run'] * 1000:10,.0f} tok/s"
                         f" | model {r['model']:7.2f}  draws {r['draws']:6.2f}  host {r['host']:6.2f} ms"
                         f" (length bucket {r['length']}){share}")
            release(args.device)
    print(f"\nfast sampler decode, {args.model_name}, {str(dtype).removeprefix('torch.')}, {args.device}, "
          f"{args.tokens} timed steps")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
