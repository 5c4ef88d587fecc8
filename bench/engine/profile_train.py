"""Where a training step's time goes: the engine's TrainingModel against a plain PyTorch + peft loop,
in-process on one device (no HTTP), with torch.profiler's top operators for each.

Usage: python profile_train.py [--device cuda] [--model DIR|tiny-qwen3] [--datums 8 --length 512]
       [--variants] (also times the engine with deterministic mode's NaN fill of new memory, with
       determinism off, with other head chunk sizes, and the plain loop with determinism off)
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "engine"))

from tinker_engine import head  # noqa: E402
from tinker_engine.base_models import BaseModelCache  # noqa: E402
from tinker_engine.cli import configure_determinism  # noqa: E402
from tinker_engine.lora import LoraSpec  # noqa: E402
from tinker_engine.trainer import ADAM_DEFAULTS, TrainingModel  # noqa: E402
from tinker_engine.wire import Datum, ForwardRequest  # noqa: E402

from bench_engine import (  # noqa: E402
    add_model_arguments, model_spec, peft_model, plain_train_step, resolve_model_arguments, sequences, sync,
)


def engine_step(trainer, seqs, device):
    data = [Datum(np.array(s[:-1], dtype=np.int64), {
        "target_tokens": np.array(s[1:], dtype=np.int64), "weights": np.ones(len(s) - 1, dtype=np.float32)})
        for s in seqs]
    req = ForwardRequest(data, "cross_entropy", {}, False)
    adam = dict(ADAM_DEFAULTS, learning_rate=1e-4)

    def step():
        trainer.forward_backward(req)
        trainer.optim_step(adam)
        sync(device)

    return step


def ms_per_step(step, repeats=5):
    step()
    step()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    return 1000 * (time.perf_counter() - start) / repeats


def profile(step, device, label, rows):
    from torch.profiler import ProfilerActivity, profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch_profile(activities=activities) as prof:
        for _ in range(2):
            step()
    key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    print(f"\n== {label}: top operators by {key}")
    print(prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=60))
    if device.type == "cuda":  # what a launch-bound step pays for: one launch (or graph node) each
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        print(f"{label}: {kernels / 2:,.0f} GPU kernels and copies per step")


def main():
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    p.add_argument("--datums", type=int, default=8)
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--rows", type=int, default=20)
    p.add_argument("--variants", action="store_true")
    p.add_argument("--no-profile", action="store_true")
    args = p.parse_args()
    device, dtype = resolve_model_arguments(args)
    configure_determinism()  # as the engine runs (both rows below)
    seqs = sequences(args.datums, args.length)
    spec = model_spec(args)
    base = BaseModelCache(device, dtype).model(spec)
    trainer = TrainingModel(base, spec, LoraSpec(rank=args.rank), device, 8192)
    engine = engine_step(trainer, seqs, device)
    plain = plain_train_step(peft_model(args, device, dtype), seqs, device)
    tokens = args.datums * args.length
    rows = [("engine", ms_per_step(engine)), ("plain PyTorch + peft", ms_per_step(plain))]
    if args.variants:
        # PyTorch's default in deterministic mode, which the engine turns off: every new tensor
        # NaN-filled before its op writes it (a kernel and a memory pass per allocation).
        torch.utils.deterministic.fill_uninitialized_memory = True
        rows.append(("engine, deterministic, NaN fill", ms_per_step(engine)))
        torch.utils.deterministic.fill_uninitialized_memory = False
        torch.use_deterministic_algorithms(False)
        rows.append(("engine, determinism off", ms_per_step(engine)))
        rows.append(("plain PyTorch + peft, determinism off", ms_per_step(plain)))
        configure_determinism()
        name = "CUDA_CHUNK_ELEMENTS" if device.type == "cuda" else "CHUNK_ELEMENTS"
        default = getattr(head, name)
        for chunk in (default >> 2, default << 2):
            setattr(head, name, chunk)
            rows.append((f"engine, head chunk {chunk >> 20}M logits", ms_per_step(engine)))
        setattr(head, name, default)
    if not args.no_profile:
        profile(engine, device, "engine", args.rows)
        profile(plain, device, "plain", args.rows)
    print(f"\n{args.datums}x{args.length} tokens, rank {args.rank}, {str(dtype).removeprefix('torch.')}, {device}")
    for label, ms in rows:
        print(f"{label:40s} {ms:8.1f} ms/step {tokens / ms * 1000:10,.0f} tok/s")


if __name__ == "__main__":
    main()
