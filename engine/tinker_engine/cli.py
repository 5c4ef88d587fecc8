"""Command line: `python -m tinker_engine --port 8765 [--data-dir DIR] ...`."""

import argparse
import ipaddress
import logging
import os
import sys
from pathlib import Path

DEFAULT_DATA_DIR = Path.home() / ".cache" / "durable-cookbook" / "engine-data"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="tinker-engine", description="Local Tinker-compatible training engine")
    p.add_argument("--port", type=int, default=int(os.environ.get("TINKER_ENGINE_PORT", "8765")))
    p.add_argument("--host", default=os.environ.get("TINKER_ENGINE_HOST", "127.0.0.1"),
                   help="address to bind (default loopback only)")
    p.add_argument("--data-dir", default=os.environ.get("TINKER_ENGINE_DATA_DIR", str(DEFAULT_DATA_DIR)),
                   help="where checkpoints and training-run records are kept")
    p.add_argument("--api-key", default=os.environ.get("TINKER_ENGINE_API_KEY"),
                   help="require exactly this X-API-Key (otherwise any 'tml-' key is accepted, which only a "
                        "loopback --host allows)")
    p.add_argument("--tls-certfile", default=os.environ.get("TINKER_ENGINE_TLS_CERTFILE"),
                   help="serve HTTPS with this certificate (PEM; with --tls-keyfile)")
    p.add_argument("--tls-keyfile", default=os.environ.get("TINKER_ENGINE_TLS_KEYFILE"),
                   help="the certificate's private key (PEM)")
    p.add_argument("--tls-client-ca", default=os.environ.get("TINKER_ENGINE_TLS_CLIENT_CA"),
                   help="mutual TLS: accept only clients with a certificate signed by this CA (PEM)")
    p.add_argument("--threads", type=int, default=int(os.environ.get("TINKER_ENGINE_THREADS", "0")) or os.cpu_count(),
                   help="torch intra-op threads (default: number of cores)")
    p.add_argument("--device", default=os.environ.get("TINKER_ENGINE_DEVICE", "auto"),
                   help="auto (CUDA when present, else CPU), cpu, cuda, cuda:N")
    p.add_argument("--dtype", default=os.environ.get("TINKER_ENGINE_DTYPE", "auto"),
                   choices=["auto", "float32", "bfloat16", "float16"],
                   help="dtype of base model weights: auto = bfloat16 on CUDA, float32 on CPU (adapters and "
                        "optimizer state are always float32)")
    p.add_argument("--model", action="append", default=[], metavar="NAME=DIR",
                   help="register a local Hugging Face checkpoint directory under a model name (repeatable)")
    p.add_argument("--max-body-mb", type=float, default=64.0, help="largest accepted request body")
    p.add_argument("--max-import-mb", type=float,
                   default=os.environ.get("TINKER_ENGINE_MAX_IMPORT_MB") or "4096",  # argparse applies type
                   help="largest checkpoint archive POST /api/v1/import_checkpoint accepts (streamed to disk; "
                        "default 4096)")
    p.add_argument("--max-batch-tokens", type=int, default=8192,
                   help="padded tokens per forward/backward micro-batch")
    p.add_argument("--long-poll-seconds", type=float, default=20.0,
                   help="how long retrieve_future waits for a result before answering 408 try_again")
    p.add_argument("--continuous-batching", action="store_true",
                   default=os.environ.get("TINKER_ENGINE_CONTINUOUS_BATCHING", "") not in ("", "0"),
                   help="decode concurrent sample requests in one batch (higher throughput, but sampling is "
                        "then not bitwise reproducible, which the crash-equality guarantee relies on)")
    p.add_argument("--sampler", default=os.environ.get("TINKER_ENGINE_SAMPLER", "auto"),
                   choices=["auto", "reference", "fast"],
                   help="fast = batched decoding with a slot KV cache (CUDA graphs on CUDA) on a sampling thread "
                        "beside training, not bitwise reproducible under varying load; reference = one request "
                        "at a time on the training thread, bitwise reproducible; auto = fast on CUDA, reference "
                        "on CPU")
    p.add_argument("--kv-cache-gb", type=float, default=float(os.environ.get("TINKER_ENGINE_KV_CACHE_GB", "0")),
                   help="memory for the fast sampler's KV caches (default: 30%% of the GPU's memory; 2 GB on CPU)")
    p.add_argument("--attention-backward", default=os.environ.get("TINKER_ENGINE_ATTENTION_BACKWARD", "exact"),
                   choices=["exact", "fused"],
                   help="training on a GPU: exact = attention's backward computed by the engine in a fixed order, "
                        "so a step (retried or replayed) gives bitwise the same weights; fused = PyTorch's "
                        "flash/memory-efficient kernels, not bitwise reproducible. The CPU's attention backward is "
                        "deterministic either way")
    p.add_argument("--max-decode-rows", type=int, default=int(os.environ.get("TINKER_ENGINE_MAX_DECODE_ROWS", "512")),
                   help="most samples one fast-sampler batch decodes at once")
    p.add_argument("--clock-cycle-ms", type=float,
                   default=os.environ.get("TINKER_ENGINE_CLOCK_CYCLE_MS") or "0",  # argparse applies type
                   help="emulate the hosted service's clock cycles: training work (the seq-id ordered model "
                        "operations) runs only at boundaries every N ms; sampling stays continuous (default 0 = off)")
    p.add_argument("--sample-ms-per-token", type=float,
                   default=os.environ.get("TINKER_ENGINE_SAMPLE_MS_PER_TOKEN") or "0",  # argparse applies type
                   help="emulate sampling service time for benchmarks: each sample request, after its real "
                        "compute, holds one of --sample-slots slots for this many ms per token it generated "
                        "(an idle wait, no CPU; results unchanged; default 0 = off)")
    p.add_argument("--sample-slots", type=int,
                   default=os.environ.get("TINKER_ENGINE_SAMPLE_SLOTS") or "1",  # argparse applies type
                   help="with --sample-ms-per-token: how many requests' emulated time the engine serves at once "
                        "(default 1)")
    p.add_argument("--custom-loss-server-side", action="store_true",
                   default=os.environ.get("TINKER_ENGINE_CUSTOM_LOSS_SERVER_SIDE", "") == "1",
                   help="serve SDK 0.38's create_custom_loss: losses uploaded as torch.fx graphs, rebuilt from "
                        "an allow-list of torch operations (off: SDK clients run custom losses client-side)")
    p.add_argument("--ignore-seq-id", action="store_true",
                   default=os.environ.get("TINKER_ENGINE_IGNORE_SEQ_ID", "") == "1",
                   help="test/operator switch: behave as servers that ignore seq_id (SkyRL-tx 0.3): a model's "
                        "requests run in arrival order, a resent request runs again, and capabilities say nothing "
                        "about seq_id (clients then probe); off by default")
    p.add_argument("--checkpoint-sweep-seconds", type=float,
                   default=float(os.environ.get("TINKER_ENGINE_CHECKPOINT_SWEEP_SECONDS", "60")),
                   help="how often checkpoints whose ttl_seconds ran out are deleted (also at startup and when "
                        "one is accessed); 0: only then")
    p.add_argument("--refuse-protobuf", action="store_true",
                   default=os.environ.get("TINKER_ENGINE_REFUSE_PROTOBUF", "") == "1",
                   help="test switch: answer every protobuf request body with a plain 500, as servers that read "
                        "JSON only do (hatchery-core 0.3), while client/config still offers protobuf; clients "
                        "must fall back to JSON. Off by default")
    p.add_argument("--log-level", default=os.environ.get("TINKER_ENGINE_LOG_LEVEL", "info"))
    args = p.parse_args(argv)
    if not 0 <= args.checkpoint_sweep_seconds < float("inf"):
        p.error("--checkpoint-sweep-seconds must be a finite number >= 0")
    if not 0 <= args.clock_cycle_ms < float("inf"):
        p.error("--clock-cycle-ms must be a finite number >= 0")
    if not 0 <= args.sample_ms_per_token < float("inf"):
        p.error("--sample-ms-per-token must be a finite number >= 0")
    if args.sample_slots < 1:
        p.error("--sample-slots must be an integer >= 1")
    if not 0 < args.max_import_mb < float("inf"):
        p.error("--max-import-mb must be a finite number > 0")
    if args.api_key is not None and not args.api_key.startswith("tml-"):
        p.error("--api-key must start with 'tml-' (the Tinker SDK refuses other keys)")
    for flag in ("tls_certfile", "tls_keyfile", "tls_client_ca"):
        path = getattr(args, flag)
        if path is not None and not Path(path).is_file():
            p.error(f"--{flag.replace('_', '-')} {path}: no such file")
    if (args.tls_certfile is None) != (args.tls_keyfile is None):
        p.error("--tls-certfile and --tls-keyfile go together")
    if args.tls_client_ca is not None and args.tls_certfile is None:
        p.error("--tls-client-ca (mutual TLS) needs --tls-certfile and --tls-keyfile")
    if not is_loopback(args.host) and args.api_key is None and args.tls_client_ca is None:
        p.error(f"--host {args.host} makes the engine reachable from other machines, and without a key it "
                "accepts any 'tml-' key: start it with --api-key tml-<secret> (TINKER_ENGINE_API_KEY) or "
                "with mutual TLS (--tls-certfile, --tls-keyfile, --tls-client-ca)")
    aliases = {}
    for item in args.model:
        name, sep, directory = item.partition("=")
        if not sep or not name or not directory:
            p.error(f"--model expects NAME=DIR, got {item!r}")
        aliases[name] = directory
    args.aliases = aliases
    return args


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the engine on this machine (a hostname counts as reachable)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tls_options(args) -> dict:
    """uvicorn's TLS settings from the flags: none, HTTPS, or HTTPS that requires client certificates."""
    if args.tls_certfile is None:
        return {}
    import ssl

    options = {"ssl_certfile": args.tls_certfile, "ssl_keyfile": args.tls_keyfile}
    if args.tls_client_ca is not None:
        options.update(ssl_ca_certs=args.tls_client_ca, ssl_cert_reqs=ssl.CERT_REQUIRED)
    return options


def configure_determinism():
    # Must be set before CUDA initialises for deterministic cuBLAS.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    # OpenMP's wait policy is left to the user (engine/README.md): passive waits win where the
    # engine's cores are shared with busy processes (an RL step beside one busy process pinned to
    # one of two cores: 22 s spinning, 3.7 s passive), and lose on a quiet one (the reference's own
    # distillation loop of bench/reference on this engine: 11.1-11.3 s passive, 9.7 s by default).
    import torch

    torch.use_deterministic_algorithms(True, warn_only=True)
    # Deterministic mode also NaN-fills every new tensor before its op writes it: one more kernel
    # and memory pass for each dtype cast and many outputs (a third of the operators a LoRA training
    # step of tiny-qwen3 dispatches in bfloat16). The fill changes only programs that read memory
    # they never wrote; the engine reads none (tests/test_uninitialized_memory.py), so without it
    # results stay bitwise the same.
    torch.utils.deterministic.fill_uninitialized_memory = False
    if torch.backends.cudnn.is_available():
        torch.backends.cudnn.benchmark = False
    return torch


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    torch = configure_determinism()
    torch.set_num_threads(max(1, args.threads))
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    if args.dtype == "auto":
        dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    else:
        dtype = getattr(torch, args.dtype)
    sampler = args.sampler if args.sampler != "auto" else ("fast" if device.type == "cuda" else "reference")
    if args.kv_cache_gb > 0:
        kv_cache_bytes = int(args.kv_cache_gb * (1 << 30))
    elif device.type == "cuda":
        kv_cache_bytes = int(0.3 * torch.cuda.get_device_properties(device).total_memory)
    else:
        kv_cache_bytes = 2 << 30

    import uvicorn

    from .engine import Engine
    from .server import create_app

    engine = Engine(
        Path(args.data_dir),
        device,
        dtype,
        aliases=args.aliases,
        max_batch_tokens=args.max_batch_tokens,
        long_poll_seconds=args.long_poll_seconds,
        continuous_batching=args.continuous_batching,
        sampler=sampler,
        kv_cache_bytes=kv_cache_bytes,
        max_decode_rows=args.max_decode_rows,
        exact_attention_backward=args.attention_backward == "exact",
        clock_cycle_ms=args.clock_cycle_ms,
        custom_loss_server_side=args.custom_loss_server_side,
        sample_ms_per_token=args.sample_ms_per_token,
        sample_slots=args.sample_slots,
        ignore_seq_id=args.ignore_seq_id,
    )
    engine.store.sweep_seconds = args.checkpoint_sweep_seconds
    app = create_app(engine, api_key=args.api_key, max_body_bytes=int(args.max_body_mb * (1 << 20)),
                     max_import_bytes=int(args.max_import_mb * (1 << 20)), refuse_protobuf=args.refuse_protobuf)
    if sampler == "fast":
        sampling = f"fast sampler beside training, {kv_cache_bytes / (1 << 30):.1f} GB KV cache"
    else:
        sampling = "continuous batching" if args.continuous_batching else "one request at a time"
    if args.clock_cycle_ms > 0:
        sampling += f", training in clock cycles of {args.clock_cycle_ms:g} ms"
    if args.sample_ms_per_token > 0:
        sampling += (f", sampling service time emulated at {args.sample_ms_per_token:g} ms per token on "
                     f"{args.sample_slots} slot{'s' if args.sample_slots != 1 else ''}")
    logging.getLogger("tinker_engine").info(
        "engine on %s://%s:%d (device %s, %s, %d threads, %s, data %s)", "https" if args.tls_certfile else "http",
        args.host, args.port, device,
        str(dtype).removeprefix("torch."), torch.get_num_threads(), sampling, args.data_dir,
    )
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level.lower(), access_log=False,
                timeout_keep_alive=75, **tls_options(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
