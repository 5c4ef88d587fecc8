"""Where a training step's time goes: the engine's TrainingModel against a plain PyTorch + peft loop,
in-process on one device (no HTTP), with torch.profiler's top operators for each.

Usage: python profile_train.py [--device cuda] [--model DIR|tiny-qwen3] [--datums 8 --length 512]
       [--variants] (also times the engine with deterministic mode's NaN fill of new memory, with
       determinism off, with other head chunk sizes, with the fused attention backward on a GPU, and
       the plain loop with determinism off)
       [--quick] (the GPU check's quick profile: the four rows that split bench_engine's training
       ratio, fewer steps, one profiled step each) [--json-out FILE] (every row's tokens/s, rewritten
       after each row)

Both loops run under the engine's settings (configure_determinism: deterministic algorithms and, on
CUDA, the fixed cuBLAS workspace), where bench_engine's plain baseline runs under PyTorch's defaults.
So with bench_engine's two figures these rows split its ratio into factors that multiply to it
(engine/offline/check.py's train_breakdown): serving (the engine over HTTP ÷ its step in-process),
the step (the engine's ÷ the plain loop's, same settings), deterministic algorithms (on the plain
loop) and the rest of the engine's settings (the plain loop under them, determinism off ÷ as
PyTorch's defaults run it).
"""

import argparse
import os
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
    write_json_atomic,
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


def ms_per_step(step, repeats=5, warmup=2):
    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    return 1000 * (time.perf_counter() - start) / repeats


def profile(step, device, label, rows, steps=2):
    from torch.profiler import ProfilerActivity, profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch_profile(activities=activities) as prof:
        for _ in range(steps):
            step()
    key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    print(f"\n== {label}: top operators by {key}", flush=True)
    print(prof.key_averages().table(sort_by=key, row_limit=rows, max_name_column_width=60), flush=True)
    if device.type == "cuda":  # what a launch-bound step pays for: one launch (or graph node) each
        kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        print(f"{label}: {kernels / steps:,.0f} GPU kernels and copies per step", flush=True)


# The rows the quick profile times, by their bench.json keys (engine/offline/check.py reads them).
QUICK_ROWS = {
    "engine": "train_inprocess_engine_tok_s",
    "plain PyTorch + peft": "train_inprocess_plain_tok_s",
    "engine, determinism off": "train_inprocess_engine_nondeterministic_tok_s",
    "plain PyTorch + peft, determinism off": "train_inprocess_plain_nondeterministic_tok_s",
    "engine, fused attention backward": "train_inprocess_engine_fused_attention_tok_s",
}


def main():
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--datums", type=int, default=8)
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--rows", type=int, default=20)
    p.add_argument("--variants", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--json-out", default=None)
    args = p.parse_args()
    device, dtype = resolve_model_arguments(args)
    args.dtype = str(dtype).removeprefix("torch.")
    configure_determinism()  # as the engine runs (every row but those marked 'determinism off')
    torch.set_num_threads(args.threads)  # as bench_engine runs its baseline
    seqs = sequences(args.datums, args.length)
    spec = model_spec(args)
    base = BaseModelCache(device, dtype).model(spec)
    trainer = TrainingModel(base, spec, LoraSpec(rank=args.rank), device, 8192)
    engine = engine_step(trainer, seqs, device)
    plain = plain_train_step(peft_model(args, device, dtype), seqs, device)
    tokens = args.datums * args.length
    timing = dict(repeats=3, warmup=1) if args.quick else {}
    results = {"train_inprocess_shape": f"{args.datums}x{args.length}", "train_inprocess_dtype": args.dtype}
    rows = []

    def row(label, step):
        ms = ms_per_step(step, **timing)
        rows.append((label, ms))
        print(f"{label:40s} {ms:8.1f} ms/step {tokens / ms * 1000:10,.0f} tok/s", flush=True)
        if label in QUICK_ROWS:
            results[QUICK_ROWS[label]] = tokens / ms * 1000
        if args.json_out:  # after every row, so a stage cut short keeps what it measured
            write_json_atomic(args.json_out, results)

    print(f"{args.datums}x{args.length} tokens, rank {args.rank}, {args.dtype}, {device}", flush=True)
    row("engine", engine)
    row("plain PyTorch + peft", plain)
    if device.type != "cpu" and (args.variants or args.quick):
        # What the exact attention backward (a bitwise reproducible step) costs against the fused
        # kernels' (--attention-backward fused); on CPU both are the CPU's own backward.
        fused = TrainingModel(base, spec, LoraSpec(rank=args.rank), device, 8192, exact_attention_backward=False)
        row("engine, fused attention backward", engine_step(fused, seqs, device))
        del fused
    if args.variants and not args.quick:
        # PyTorch's default in deterministic mode, which the engine turns off: every new tensor
        # NaN-filled before its op writes it (a kernel and a memory pass per allocation).
        torch.utils.deterministic.fill_uninitialized_memory = True
        row("engine, deterministic, NaN fill", engine)
        torch.utils.deterministic.fill_uninitialized_memory = False
    if args.variants or args.quick:
        # The cuBLAS workspace setting stays: it is read once, when CUDA starts.
        torch.use_deterministic_algorithms(False)
        row("engine, determinism off", engine)
        row("plain PyTorch + peft, determinism off", plain)
        configure_determinism()
    if args.variants and not args.quick:
        name = "CUDA_CHUNK_ELEMENTS" if device.type == "cuda" else "CHUNK_ELEMENTS"
        default = getattr(head, name)
        for chunk in (default >> 2, default << 2):
            setattr(head, name, chunk)
            row(f"engine, head chunk {chunk >> 20}M logits", engine)
        setattr(head, name, default)
    if not args.no_profile:
        steps = 1 if args.quick else 2
        profile(engine, device, "engine", args.rows, steps)
        profile(plain, device, "plain", args.rows, steps)
    print(f"\n{args.datums}x{args.length} tokens, rank {args.rank}, {args.dtype}, {device}")
    for label, ms in rows:
        print(f"{label:40s} {ms:8.1f} ms/step {tokens / ms * 1000:10,.0f} tok/s")


if __name__ == "__main__":
    main()
