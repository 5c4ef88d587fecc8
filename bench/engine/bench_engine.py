"""Engine throughput against plain PyTorch / transformers on the same device, dtype and batch.

Starts its own engines (loopback, free ports) and builds every baseline in this process on the
same device and dtype as the engine. Sections (--sections, comma-separated, default all):

  train       forward_backward + optim_step tokens/s through HTTP ÷ a plain PyTorch + peft LoRA loop
              (peft model → logits → log_softmax → weighted NLL → backward → AdamW).
  sample      one request of --num-samples samples: engine tokens/s ÷ transformers `generate` on the
              same LoRA model.
  concurrent  RL traffic: N concurrent single-sample requests (--concurrent, a list), base model:
              the engine's fast sampler ÷ its reference sampler (one request at a time, and on CPU
              also --continuous-batching; --skip-reference leaves the reference sampler out) and,
              on CUDA, ÷ transformers' own continuous batching (`generate_batch` machinery: paged KV
              cache, CUDA graphs). Each level's numbers and ratios are written as it is measured.
  overlap     sampler beside trainer: training steps and a sampling load, each alone and then at
              the same time; (alone + alone) ÷ together is how much the two overlap (1.0 = none).
              The fast sampler, and on CPU also the reference sampler (unless --skip-reference).

On CUDA it also prints the share of the card's measured copy bandwidth (decode) and bf16 matmul
rate (training) reached. Ratios are printed last; --json-out writes every number.
Usage: python bench_engine.py [--device cuda --model DIR] [--sections ...] [--threads N]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import torch

ENGINE_DIR = Path(__file__).resolve().parents[2] / "engine"
sys.path.insert(0, str(ENGINE_DIR))

from tinker_engine.base_models import BaseModelCache, ModelRegistry, instance_sharing_weights  # noqa: E402
from tinker_engine.lora import LoraSpec, attach_lora  # noqa: E402

HEADERS = {"Content-Type": "application/json", "X-API-Key": "tml-bench"}


# ------------------------------------------------------------------------------ engines


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Engine:
    """An engine subprocess on a free loopback port, in this process's group: whoever stops the
    benchmark's group (the GPU check, at a stage's slice) stops its engines with it, and a SIGTERM
    to this process alone stops them too (main's handler ends the run through their stop())."""

    def __init__(self, args, name: str, *extra: str):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = tempfile.mkdtemp(prefix=f"engine-bench-{name}-")
        cmd = [sys.executable, "-m", "tinker_engine", "--port", str(self.port), "--data-dir", self.data,
               "--threads", str(args.threads), "--device", args.device, "--dtype", args.dtype,
               "--log-level", "warning", *extra]
        if os.path.isdir(args.model):
            cmd += ["--model", f"bench={args.model}"]
        self.proc = subprocess.Popen(cmd, cwd=ENGINE_DIR)
        try:
            self._wait_healthy(name)
        except BaseException:  # also an interrupt: an engine nobody holds would outlive the run
            self.stop()
            raise

    def _wait_healthy(self, name):
        deadline = time.time() + 600
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"engine {name} exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/api/v1/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"engine {name} did not become healthy")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)


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

    def session(self):
        return self.post("create_session", {"tags": [], "user_metadata": {}, "sdk_version": "bench"})["session_id"]


def write_json_atomic(path: str, data: dict) -> None:
    """Replaces `path` whole: a reader (the GPU check merging as it goes) never sees half a file."""
    tmp = Path(path + ".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def release(device):
    import gc

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------- train


def sequences(n, length, vocab_offset=1000):
    return [[vocab_offset + (i * 31 + j * 7) % 4000 for j in range(length + 1)] for i in range(n)]


class EngineTrainer:
    def __init__(self, http, args, seqs):
        self.http = http
        created = http.post("create_model", {"session_id": http.session(), "model_seq_id": 0,
                                             "base_model": args.model_name, "lora_config": {"rank": args.rank, "seed": 0}})
        http.result(created["request_id"])
        self.model = created["model_id"]
        self.seq = 1
        self.data = [{"model_input": {"chunks": [{"tokens": s[:-1]}]},
                      "loss_fn_inputs": {"target_tokens": {"data": s[1:], "dtype": "int64"},
                                         "weights": {"data": [1.0] * (len(s) - 1), "dtype": "float32"}}} for s in seqs]

    def step(self):
        fb = self.http.post("forward_backward", {"model_id": self.model, "seq_id": self.seq, "forward_backward_input": {
            "data": self.data, "loss_fn": "cross_entropy"}})
        opt = self.http.post("optim_step", {"model_id": self.model, "seq_id": self.seq + 1,
                                            "adam_params": {"learning_rate": 1e-4}})
        self.seq += 2
        self.http.result(fb["request_id"])
        self.http.result(opt["request_id"])

    def sampler(self):
        saved = self.http.post("save_weights_for_sampler", {"model_id": self.model, "seq_id": self.seq,
                                                            "sampling_session_seq_id": 0})
        self.seq += 1
        return self.http.result(saved["request_id"])["sampling_session_id"]


def timed(fn, warmup, repeats):
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def peft_model(args, device, dtype):
    spec = model_spec(args)
    base = BaseModelCache(device, dtype).model(spec)
    model = attach_lora(instance_sharing_weights(base), LoraSpec(rank=args.rank, seed=0))
    for p in model.parameters():
        if p.requires_grad:
            p.data = p.data.float()  # adapters in float32, as the engine trains them
    return model


def plain_train_step(model, seqs, device):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), eps=1e-12, weight_decay=0.0)
    ids = torch.tensor([s[:-1] for s in seqs], device=device)
    targets = torch.tensor([s[1:] for s in seqs], device=device)
    weights = torch.ones(targets.shape, device=device)

    def step():
        logits = model(input_ids=ids).logits.float()
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]
        loss = -(weights * logprobs).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(device)

    return step


# ------------------------------------------------------------------------------ sample


def engine_sample(http, sampler, args, prompt):
    produced, elapsed = 0, 0.0
    for i in range(args.warmup + args.rounds):
        start = time.perf_counter()
        sub = http.post("asample", {"sampling_session_id": sampler, "seq_id": 10_000 + i, "num_samples": args.num_samples,
                                    "prompt": {"chunks": [{"tokens": prompt}]},
                                    "sampling_params": {"max_tokens": args.max_tokens, "seed": i}})
        out = http.result(sub["request_id"])
        if i >= args.warmup:
            elapsed += time.perf_counter() - start
            produced += sum(len(s["tokens"]) for s in out["sequences"])
    return produced / elapsed


def generate_baseline(model, args, prompt, device):
    ids = torch.tensor([prompt], device=device)
    produced, elapsed = 0, 0.0
    for i in range(args.warmup + args.rounds):
        torch.manual_seed(i)
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0, top_k=0,
                top_p=1.0, max_new_tokens=args.max_tokens, min_new_tokens=args.max_tokens,
                num_return_sequences=args.num_samples, use_cache=True, pad_token_id=0,
            )
        sync(device)
        if i >= args.warmup:
            elapsed += time.perf_counter() - start
            produced += (out.shape[1] - ids.shape[1]) * out.shape[0]
    return produced / elapsed


def rl_prompts(n, args):
    lo, hi = args.prompt_tokens
    return [[1000 + (i * 131 + j * 17) % 30000 for j in range(lo + i % (hi - lo + 1))] for i in range(n)]


def concurrent_load(http, sampler, prompts, max_tokens, seq_base):
    """All prompts submitted at once as single-sample requests, all retrieved: (tokens, seconds)."""
    start = time.perf_counter()
    ids = [http.post("asample", {"sampling_session_id": sampler, "seq_id": seq_base + i, "num_samples": 1,
                                 "prompt": {"chunks": [{"tokens": p}]},
                                 "sampling_params": {"max_tokens": max_tokens, "seed": seq_base + i}})["request_id"]
           for i, p in enumerate(prompts)]
    produced = sum(len(s["tokens"]) for i in ids for s in http.result(i)["sequences"])
    return produced, time.perf_counter() - start


def base_sampler(http, args):
    return http.post("create_sampling_session", {"session_id": http.session(), "sampling_session_seq_id": 0,
                                                 "base_model": args.model_name})["sampling_session_id"]


def engine_concurrent(http, args, n, rounds=None):
    sampler = base_sampler(http, args)
    prompts = rl_prompts(n, args)
    rates = []
    for r in range(args.warmup + (rounds or args.rounds)):
        produced, seconds = concurrent_load(http, sampler, prompts, args.rl_tokens, r * n)
        if r >= args.warmup:
            rates.append(produced / seconds)
    return statistics.median(rates)


def generate_batch_baseline(args, n, device, dtype):
    """transformers' continuous batching (paged KV cache, CUDA graphs) on the base model."""
    from transformers import AutoModelForCausalLM, ContinuousBatchingConfig, GenerationConfig

    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, attn_implementation="sdpa").to(device)
    model.eval()
    gen = GenerationConfig(max_new_tokens=args.rl_tokens, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                           eos_token_id=model.generation_config.eos_token_id, pad_token_id=0)
    cb = ContinuousBatchingConfig(use_cuda_graph=True)
    prompts = rl_prompts(n, args)
    rates = []
    with model.continuous_batching_context_manager(generation_config=gen, continuous_batching_config=cb) as manager:
        for r in range(args.warmup + args.rounds):
            start = time.perf_counter()
            ids = manager.add_requests(inputs=prompts, max_new_tokens=args.rl_tokens)
            done, produced = 0, 0
            deadline = start + args.baseline_timeout
            while done < len(ids):
                # The manager's own thread may die (e.g. out of memory): never wait on it forever.
                running = getattr(manager, "is_running", lambda: True)()
                if not running or time.perf_counter() > deadline:
                    raise RuntimeError(f"generate_batch finished {done} of {len(ids)} requests "
                                       f"({'manager stopped' if not running else 'timed out'})")
                result = manager.get_result(timeout=5)
                if result is not None and result.is_finished():
                    done += 1
                    produced += len(result.generated_tokens)
            if r >= args.warmup:
                rates.append(produced / (time.perf_counter() - start))
    del model
    release(device)
    return statistics.median(rates)


# ----------------------------------------------------------------------------- overlap


def overlap(http, args, seqs):
    """Seconds for: training steps alone, a sampling load alone, both at once."""
    trainer = EngineTrainer(http, args, seqs)
    trainer.step()
    sampler = trainer.sampler()
    prompts = rl_prompts(args.overlap_requests, args)
    seq = [1_000_000]

    def train():
        for _ in range(args.overlap_steps):
            trainer.step()

    def sample():
        seq[0] += len(prompts)
        concurrent_load(http, sampler, prompts, args.rl_tokens, seq[0])

    sample()  # warm-up: graphs, caches
    t_train = timed(train, 0, 1)
    t_sample = timed(sample, 0, 1)
    start = time.perf_counter()
    worker = threading.Thread(target=train)
    worker.start()
    sample()
    worker.join()
    t_both = time.perf_counter() - start
    return t_train, t_sample, t_both


# ------------------------------------------------------------------------------ device


def card_peaks(device):
    """Measured device-to-device copy bandwidth (bytes/s, read + write) and bf16 matmul FLOP/s."""
    x = torch.empty(1 << 30, dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=device)
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device=device)

    def median_seconds(fn):
        for _ in range(3):
            fn()
        times = []
        for _ in range(10):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1000)
        return statistics.median(times)

    bandwidth = 2 * x.numel() / median_seconds(lambda: y.copy_(x))
    flops = 2 * 8192**3 / median_seconds(lambda: a @ b)
    del x, y, a, b
    torch.cuda.empty_cache()
    return bandwidth, flops


def model_sizes(args, device, dtype):
    """(matmul parameters per token incl. the head, bytes of weights a decode step reads, KV bytes per token)."""
    spec = model_spec(args)
    c = spec.config.get_text_config() if hasattr(spec.config, "get_text_config") else spec.config
    layers, hidden, inter = c.num_hidden_layers, c.hidden_size, c.intermediate_size
    head_dim = getattr(c, "head_dim", None) or hidden // c.num_attention_heads
    attn = hidden * head_dim * (2 * c.num_attention_heads + 2 * c.num_key_value_heads)
    matmul = layers * (attn + 3 * hidden * inter) + hidden * c.vocab_size
    width = torch.finfo(dtype).bits // 8
    kv_per_token = 2 * layers * c.num_key_value_heads * head_dim * width
    return matmul, matmul * width, kv_per_token


# -------------------------------------------------------------------------------- main


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The model options every engine benchmark and profile takes."""
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="auto", help="auto: bfloat16 on CUDA, float32 on CPU")
    p.add_argument("--model", default="tiny-qwen3", help="built-in name or a local HF checkpoint directory")
    p.add_argument("--rank", type=int, default=32, help="LoRA rank")


def model_spec(args):
    return ModelRegistry({"bench": args.model} if os.path.isdir(args.model) else None).resolve(args.model_name)


def resolve_model_arguments(args) -> tuple:
    """(device, dtype) of parsed model options; sets args.model_name (a checkpoint directory is 'bench')."""
    device = torch.device(args.device)
    if args.dtype == "auto":
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    else:
        dtype = getattr(torch, args.dtype)
    args.model_name = "bench" if os.path.isdir(args.model) else args.model
    return device, dtype


def main():
    p = argparse.ArgumentParser()
    add_model_arguments(p)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--sections", default="train,sample,concurrent,overlap")
    p.add_argument("--datums", type=int, default=None, help="default 8 on CUDA, 4 on CPU")
    p.add_argument("--length", type=int, default=None, help="default 512 on CUDA, 128 on CPU")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--num-samples", type=int, default=None, help="default 8 on CUDA, 4 on CPU")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--concurrent", default=None, help="comma list; default 64,512 on CUDA, 32 on CPU")
    p.add_argument("--rl-tokens", type=int, default=None, help="tokens per RL request; default 128 on CUDA, 64 on CPU")
    p.add_argument("--prompt-tokens", default=None, help="lo,hi prompt lengths; default 32,63 on CUDA, 8,15 on CPU")
    p.add_argument("--overlap-steps", type=int, default=None)
    p.add_argument("--overlap-requests", type=int, default=None)
    p.add_argument("--json-out", default=None)
    p.add_argument("--baseline-timeout", type=float, default=300.0,
                   help="seconds one round of a transformers baseline may take before it counts as failed")
    p.add_argument("--skip-reference", action="store_true",
                   help="concurrent and overlap: leave out the reference sampler (on CUDA most of the "
                        "concurrent section's time; overlap measures it on CPU only)")
    args = p.parse_args()
    device, dtype = resolve_model_arguments(args)
    cuda = device.type == "cuda"
    args.dtype = str(dtype).removeprefix("torch.")
    args.datums = args.datums or (8 if cuda else 4)
    args.length = args.length or (512 if cuda else 128)
    args.num_samples = args.num_samples or (8 if cuda else 4)
    args.concurrent = [int(x) for x in (args.concurrent or ("64,512" if cuda else "32")).split(",")]
    args.rl_tokens = args.rl_tokens or (128 if cuda else 64)
    args.prompt_tokens = [int(x) for x in (args.prompt_tokens or ("32,63" if cuda else "8,15")).split(",")]
    args.overlap_steps = args.overlap_steps or (10 if cuda else 3)
    args.overlap_requests = args.overlap_requests or (256 if cuda else 16)
    sections = set(args.sections.split(","))
    torch.set_num_threads(args.threads)
    # A SIGTERM ends the run through the finally below, which stops the engines.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ratios: dict = {}
    results = {"device": str(device), "dtype": args.dtype, "model": args.model, "ratios": ratios}
    if cuda:
        results["gpu"] = torch.cuda.get_device_name(device)

    def write_json():
        if args.json_out:  # after every number, so a run cut short still leaves what it measured
            write_json_atomic(args.json_out, results)

    def report(line, **numbers):
        print(line, flush=True)
        results.update(numbers)
        write_json()

    def ratio(label, value):  # printed together at the end
        ratios[label] = value
        write_json()

    def guarded(label, fn):
        """Runs one measurement; a failure is reported and the others still run."""
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - a benchmark reports and goes on
            report(f"{label}: FAILED: {type(e).__name__}: {e}", **{f"{label}_error": f"{type(e).__name__}: {e}"})
            return None

    seqs = sequences(args.datums, args.length)
    tokens = args.datums * args.length
    matmul, weight_bytes, kv_per_token = model_sizes(args, device, dtype)

    # Phase 1: the in-process baselines, with the device to themselves (no engine holds memory yet).
    base = {}
    if cuda:
        base["peaks"] = guarded("card_peaks", lambda: card_peaks(device))
    if "train" in sections:
        def plain():
            model = peft_model(args, device, dtype)
            seconds = timed(plain_train_step(model, seqs, device), args.warmup, args.steps)
            del model
            release(device)
            report(f"baseline: plain PyTorch + peft training {tokens / seconds:,.0f} tok/s",
                   train_plain_tok_s=tokens / seconds)
            return tokens / seconds
        base["train"] = guarded("train_plain", plain)
    if "sample" in sections:
        def generate():
            model = peft_model(args, device, dtype)
            rate = generate_baseline(model, args, seqs[0][:16], device)
            del model
            release(device)
            report(f"baseline: transformers generate {rate:,.0f} tok/s", sample_generate_tok_s=rate)
            return rate
        base["sample"] = guarded("sample_generate", generate)
    release(device)

    def generate_batch(n):
        # Measured level by level, just before the engine at that level (the engine, started by the
        # first level, idles meanwhile): a stage stopped at its slice keeps whole pairs.
        rate = generate_batch_baseline(args, n, device, dtype)
        report(f"baseline: transformers generate_batch, {n} requests x {args.rl_tokens} tokens: {rate:,.0f} tok/s",
               **{f"rl{n}_generate_batch_tok_s": rate})
        return rate

    # Phase 2: the engines, each started when a section first needs it and measured against the
    # baselines above (the concurrent section's: generate_batch, just before each level).
    engines: dict = {}

    def engine(name):
        if name not in engines:
            extra = {"fast": ["--sampler", "fast"],
                     # On CUDA the reference sampler is measured as it was best before the fast path: batching.
                     "reference": ["--sampler", "reference", *(["--continuous-batching"] if cuda else [])],
                     "batching": ["--sampler", "reference", "--continuous-batching"]}[name]
            engines[name] = Engine(args, name, *extra)
        return engines[name]

    try:
        if "train" in sections:
            def train():
                trainer = EngineTrainer(Http(engine("fast").url), args, seqs)
                e = tokens / timed(trainer.step, args.warmup, args.steps)
                b = base.get("train")
                report(f"train: engine {e:,.0f} tok/s, plain PyTorch + peft {b or 0:,.0f} tok/s "
                       f"({args.datums}x{args.length} tokens, rank {args.rank}, {args.dtype})",
                       train_engine_tok_s=e, train_plain_tok_s=b, train_shape=f"{args.datums}x{args.length}")
                if b:
                    ratio("training (engine / plain PyTorch + peft, goal >= 0.9)", e / b)
                peaks = base.get("peaks")
                if peaks:
                    # LoRA training: forward (2 FLOPs per matmul weight per token) + input gradients (2 more).
                    share = 4 * matmul * e / peaks[1]
                    report(f"training reaches {share:.1%} of the card's measured bf16 matmul rate "
                           f"({peaks[1] / 1e12:,.0f} TFLOP/s; copy {peaks[0] / 1e12:.2f} TB/s)",
                           train_flops_share=share, peak_bf16_flops=peaks[1], peak_copy_bytes_s=peaks[0])
            guarded("train", train)

        if "sample" in sections:
            def sample():
                fast = Http(engine("fast").url)
                trainer = EngineTrainer(fast, args, seqs)
                e = engine_sample(fast, trainer.sampler(), args, seqs[0][:16])
                b = base.get("sample")
                report(f"sampling, one request of {args.num_samples} x {args.max_tokens} tokens: engine {e:,.0f} tok/s, "
                       f"transformers generate {b or 0:,.0f} tok/s", sample_engine_tok_s=e, sample_generate_tok_s=b)
                if b:
                    ratio("one request (engine / transformers generate)", e / b)
            guarded("sample", sample)

        if "concurrent" in sections:
            reference_rates: dict = {}

            def concurrent(n):
                if cuda:
                    base[f"rl{n}"] = guarded(f"rl{n}_generate_batch", lambda: generate_batch(n))
                f = engine_concurrent(Http(engine("fast").url), args, n)
                line = f"{n} concurrent single-sample requests x {args.rl_tokens} tokens: fast sampler {f:,.0f} tok/s"
                numbers = {f"rl{n}_fast_tok_s": f}
                if not args.skip_reference:
                    # The reference sampler is far slower on CUDA: measured once, at no more than 64 requests.
                    m = min(n, 64) if cuda else n
                    if m not in reference_rates:
                        reference_rates[m] = engine_concurrent(Http(engine("reference").url), args, m,
                                                               rounds=1 if cuda else None)
                    r = reference_rates[m]
                    label = "reference with --continuous-batching" if cuda else "reference"
                    line += f", {label} {r:,.0f} tok/s" + (f" (at {m} requests)" if m != n else "")
                    numbers[f"rl{n}_reference_tok_s"] = r
                    ratio(f"{n} concurrent (fast / {label})", f / r)
                if not cuda:
                    c = engine_concurrent(Http(engine("batching").url), args, n)
                    line += f", reference with --continuous-batching {c:,.0f} tok/s"
                    numbers[f"rl{n}_batching_tok_s"] = c
                    ratio(f"{n} concurrent (fast / continuous batching)", f / c)
                else:
                    g = base.get(f"rl{n}")
                    if g:
                        line += f", transformers generate_batch {g:,.0f} tok/s"
                        numbers[f"rl{n}_generate_batch_tok_s"] = g
                        ratio(f"{n} concurrent (fast / transformers generate_batch, goal >= 0.8)", f / g)
                    peaks = base.get("peaks")
                    if peaks:
                        # A decode step of n rows reads the weights once and each row's cache
                        # (~prompt + half the answer).
                        mean_context = sum(args.prompt_tokens) / 2 + args.rl_tokens / 2
                        moved = f / n * (weight_bytes + n * mean_context * kv_per_token)
                        line += f"; decode reaches {moved / peaks[0]:.1%} of the card's copy bandwidth"
                        numbers[f"rl{n}_bandwidth_share"] = moved / peaks[0]
                report(line, **numbers)  # this level's numbers and ratios, before the next level starts

            for n in args.concurrent:
                guarded(f"rl{n}", lambda n=n: concurrent(n))

        if "overlap" in sections:
            # On CUDA only the fast engine: the reference sampler would take minutes for the same load.
            for name in ("fast",) + (("reference",) if not cuda and not args.skip_reference else ()):
                def measure(name=name):
                    t_train, t_sample, t_both = overlap(Http(engine(name).url), args, seqs)
                    report(f"overlap, {name} sampler: train {t_train:.2f} s, sample {t_sample:.2f} s alone; "
                           f"both at once {t_both:.2f} s",
                           **{f"overlap_{name}": [t_train, t_sample, t_both]})
                    ratio(f"sampler beside trainer, {name} ((train + sample) / together)",
                          (t_train + t_sample) / t_both)
                guarded(f"overlap_{name}", measure)
    finally:
        for e in engines.values():
            e.stop()
    for label, value in ratios.items():
        print(f"ratio {label}: {value:.2f}")
    write_json()


if __name__ == "__main__":
    main()
