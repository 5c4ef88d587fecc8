"""Engine throughput vs plain PyTorch on the same model, batch and thread count.

1. forward_backward + optim_step tokens/s through the engine's HTTP API ÷ a plain PyTorch LoRA
   training loop (peft model → log_softmax → weighted NLL → backward → AdamW) in this process.
2. Sampling tokens/s through the engine's asample ÷ transformers `generate` (KV cache, sampling)
   on the same LoRA model.
3. Concurrent single-sample requests (what RL rollouts send: one per env) tokens/s on an engine
   with --continuous-batching ÷ the same requests on the default one-request-at-a-time engine.
Prints the ratios last. Usage: python bench_engine.py --url URL --batching-url URL --threads N
"""

import argparse
import json
import time
import urllib.request

import torch

from tinker_engine.base_models import BaseModelCache, ModelRegistry, instance_sharing_weights
from tinker_engine.lora import LoraSpec, attach_lora

HEADERS = {"Content-Type": "application/json", "X-API-Key": "tml-bench"}


class Http:
    def __init__(self, url):
        self.base = url.rstrip("/") + "/api/v1/"

    def post(self, path, body):
        req = urllib.request.Request(self.base + path, json.dumps(body).encode(), HEADERS, method="POST")
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())

    def result(self, request_id):
        while True:
            try:
                out = self.post("retrieve_future", {"request_id": request_id})
            except urllib.error.HTTPError as e:
                if e.code == 408:
                    continue
                raise
            if "error" in out:
                raise RuntimeError(out["error"])
            return out


def batch(n_datums, length, vocab_offset=1000):
    seqs = [[vocab_offset + (i * 31 + j * 7) % 4000 for j in range(length + 1)] for i in range(n_datums)]
    return seqs


def engine_train(http, args, seqs):
    session = http.post("create_session", {"tags": [], "user_metadata": {}, "sdk_version": "bench"})["session_id"]
    created = http.post("create_model", {"session_id": session, "model_seq_id": 0, "base_model": args.model,
                                         "lora_config": {"rank": args.rank, "seed": 0}})
    http.result(created["request_id"])
    model = created["model_id"]
    data = [{"model_input": {"chunks": [{"tokens": s[:-1]}]},
             "loss_fn_inputs": {"target_tokens": {"data": s[1:], "dtype": "int64"},
                                "weights": {"data": [1.0] * (len(s) - 1), "dtype": "float32"}}} for s in seqs]
    seq = 1

    def step():
        nonlocal seq
        fb = http.post("forward_backward", {"model_id": model, "seq_id": seq,
                                            "forward_backward_input": {"data": data, "loss_fn": "cross_entropy"}})
        opt = http.post("optim_step", {"model_id": model, "seq_id": seq + 1,
                                       "adam_params": {"learning_rate": 1e-3}})
        seq += 2
        http.result(fb["request_id"])
        http.result(opt["request_id"])

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    elapsed = time.perf_counter() - start
    return model, seq, elapsed


def plain_train(args, seqs, peft_model):
    params = [p for p in peft_model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.95), eps=1e-12, weight_decay=0.0)
    ids = torch.tensor([s[:-1] for s in seqs])
    targets = torch.tensor([s[1:] for s in seqs])
    weights = torch.ones(targets.shape)

    def step():
        logits = peft_model(input_ids=ids).logits.float()
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
        loss = -(weights * logprobs).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    return time.perf_counter() - start


def engine_sample(http, model, seq, args, prompt):
    saved = http.post("save_weights_for_sampler", {"model_id": model, "seq_id": seq, "sampling_session_seq_id": 0})
    sampler = http.result(saved["request_id"])["sampling_session_id"]
    produced, elapsed = 0, 0.0
    for i in range(args.warmup + args.sample_rounds):
        start = time.perf_counter()
        sub = http.post("asample", {"sampling_session_id": sampler, "seq_id": i, "num_samples": args.num_samples,
                                    "prompt": {"chunks": [{"tokens": prompt}]},
                                    "sampling_params": {"max_tokens": args.max_tokens, "seed": i}})
        out = http.result(sub["request_id"])
        if i >= args.warmup:
            elapsed += time.perf_counter() - start
            produced += sum(len(s["tokens"]) for s in out["sequences"])
    return produced, elapsed


def concurrent_sample(http, args, prompt):
    """`--concurrent` single-sample requests submitted at once, all retrieved: tokens/s."""
    session = http.post("create_session", {"tags": [], "user_metadata": {}, "sdk_version": "bench"})["session_id"]
    sampler = http.post("create_sampling_session", {"session_id": session, "sampling_session_seq_id": 0,
                                                    "base_model": args.model})["sampling_session_id"]
    produced, elapsed = 0, 0.0
    for r in range(args.warmup + args.sample_rounds):
        start = time.perf_counter()
        ids = [http.post("asample", {"sampling_session_id": sampler, "seq_id": r * args.concurrent + i, "num_samples": 1,
                                     "prompt": {"chunks": [{"tokens": prompt[: 8 + i % 8]}]},
                                     "sampling_params": {"max_tokens": args.max_tokens, "seed": i}})["request_id"]
               for i in range(args.concurrent)]
        outs = [http.result(i) for i in ids]
        if r >= args.warmup:
            elapsed += time.perf_counter() - start
            produced += sum(len(s["tokens"]) for out in outs for s in out["sequences"])
    return produced / elapsed


def generate_baseline(args, prompt, peft_model):
    ids = torch.tensor([prompt])
    produced, elapsed = 0, 0.0
    for i in range(args.warmup + args.sample_rounds):
        torch.manual_seed(i)
        start = time.perf_counter()
        with torch.no_grad():
            out = peft_model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0, top_k=0,
                top_p=1.0, max_new_tokens=args.max_tokens, min_new_tokens=args.max_tokens,
                num_return_sequences=args.num_samples, use_cache=True, pad_token_id=0,
            )
        if i >= args.warmup:
            elapsed += time.perf_counter() - start
            produced += (out.shape[1] - ids.shape[1]) * out.shape[0]
    return produced, elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--batching-url", required=True, help="an engine started with --continuous-batching")
    p.add_argument("--concurrent", type=int, default=32)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--model", default="tiny-qwen3")
    p.add_argument("--rank", type=int, default=32)
    p.add_argument("--datums", type=int, default=4)
    p.add_argument("--length", type=int, default=128)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--num-samples", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--sample-rounds", type=int, default=3)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)

    http = Http(args.url)
    seqs = batch(args.datums, args.length)
    tokens = args.datums * args.length
    model, seq, engine_s = engine_train(http, args, seqs)

    registry, cache = ModelRegistry(), BaseModelCache(torch.device("cpu"), torch.float32)
    spec = registry.resolve(args.model)
    peft_model = attach_lora(instance_sharing_weights(cache.model(spec)), LoraSpec(rank=args.rank, seed=0))
    plain_s = plain_train(args, seqs, peft_model)
    train_engine = tokens * args.steps / engine_s
    train_plain = tokens * args.steps / plain_s
    print(f"forward_backward+optim_step: engine {train_engine:,.0f} tok/s, plain PyTorch {train_plain:,.0f} tok/s "
          f"({args.datums}x{args.length} tokens, rank {args.rank}, {args.threads} threads)")

    prompt = seqs[0][:16]
    produced, sample_s = engine_sample(http, model, seq, args, prompt)
    # Same architecture and adapter shapes as the engine's sampler (only the trained values differ).
    base_tokens, base_s = generate_baseline(args, prompt, peft_model)
    sample_engine, sample_generate = produced / sample_s, base_tokens / base_s
    print(f"sampling: engine {sample_engine:,.0f} tok/s, transformers generate {sample_generate:,.0f} tok/s "
          f"({args.num_samples} samples x {args.max_tokens} tokens)")
    one_at_a_time = concurrent_sample(http, args, prompt)
    batched = concurrent_sample(Http(args.batching_url), args, prompt)
    print(f"{args.concurrent} concurrent single-sample requests: continuous batching {batched:,.0f} tok/s, "
          f"one request at a time {one_at_a_time:,.0f} tok/s ({args.max_tokens} tokens each)")
    print(f"forward_backward ratio (engine / plain PyTorch, goal >= 0.9): {train_engine / train_plain:.2f}")
    print(f"sampling ratio (engine / transformers generate, goal >= 0.8): {sample_engine / sample_generate:.2f}")
    print(f"concurrent sampling ratio (continuous batching / one at a time): {batched / one_at_a_time:.2f}")


if __name__ == "__main__":
    main()
