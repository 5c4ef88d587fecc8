"""The Python reference's own supervised loop (tinker-cookbook 0.6.1 `supervised.train.main`,
official SDK tinker 0.38.0) against a local engine, for bench/reference/run.ts.

Runs in the reference venv (scripts/lib/reference-env.mjs). Two modes:

  reference_sl.py make-checkpoint --out DIR
      Writes the engine's built-in tiny-qwen3 (same config, same fixed-seed random init) as a
      Hugging Face checkpoint directory with the shipped Qwen3 tokenizer files, so that one path is
      both a base model the engine serves and a name `AutoTokenizer.from_pretrained` can load.

  reference_sl.py train --base-url URL --model DIR --data JSONL --batch-size B --max-length L
                        --learning-rate LR --lora-rank R --steps N --log-path DIR --out JSON
      Builds the reference's chz `train.Config` in Python and runs `train.main` unchanged. The
      loop is only observed, never altered: three wrappers record wall-clock times —
        ready:   the loop's `get_tokenizer` call, right after the dataset was built (model exists);
        done[k]: each step's `log_metrics`, right after its forward_backward/optim_step results;
        end:     `main` returned (after the final save_state + save_weights_for_sampler).
      The pricing lookup (an HTTP fetch of a price list, before the loop) is replaced by "no
      pricing" so the run never waits on the network; it only feeds cost metrics.
      Writes {ready, done: [{step, t}], end, metrics: [rows of metrics.jsonl]} to --out.
      --cache-renderer: the dataset builder's renderer is built once per run rather than once per
      row (the reference's `renderer` property builds a new one, and the qwen3 renderer deep-copies
      the tokenizer, about 0.3 s per row on CPU); the one departure from the shipped loop.
"""

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def make_checkpoint(out: Path) -> None:
    import torch

    sys.path.insert(0, str(REPO_ROOT / "engine"))
    from tinker_engine.base_models import BaseModelCache, _tiny_qwen3

    spec = _tiny_qwen3()
    model = BaseModelCache(torch.device("cpu"), torch.float32)._load(spec)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    (tmp / "generation_config.json").write_text(json.dumps({"eos_token_id": spec.eos_token_ids}))
    tok_dir = Path(spec.tokenizer_file).parent
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tok_dir / name, tmp / name)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"wrote tiny-qwen3 checkpoint to {out}")


def train(args) -> None:
    from tinker_cookbook.supervised import train as sl_train
    from tinker_cookbook.supervised.data import FromConversationFileBuilder
    from tinker_cookbook.supervised.types import ChatDatasetBuilderCommonConfig

    times: dict = {"ready": None, "done": [], "end": None}

    original_get_tokenizer = sl_train.get_tokenizer

    def get_tokenizer(name):
        if times["ready"] is None:
            times["ready"] = time.time()
        return original_get_tokenizer(name)

    sl_train.get_tokenizer = get_tokenizer
    sl_train.fetch_model_pricing = lambda *a, **k: None

    original_setup_logging = sl_train.ml_log.setup_logging

    def setup_logging(*a, **k):
        logger = original_setup_logging(*a, **k)
        original_log_metrics = logger.log_metrics

        def log_metrics(metrics, step=None):
            times["done"].append({"step": step, "t": time.time()})
            return original_log_metrics(metrics, step=step)

        logger.log_metrics = log_metrics
        return logger

    sl_train.ml_log.setup_logging = setup_logging

    if args.cache_renderer:
        # The ref-cached arm: the builder's `renderer` property builds one renderer (and one
        # deep copy of the tokenizer) for the run instead of one per row. Nothing else changes.
        from tinker_cookbook.supervised import types as sl_types

        built: dict = {}
        original_renderer = sl_types.ChatDatasetBuilder.renderer.fget

        def renderer(self):
            if id(self) not in built:
                built[id(self)] = original_renderer(self)
            return built[id(self)]

        sl_types.ChatDatasetBuilder.renderer = property(renderer)

    common = ChatDatasetBuilderCommonConfig(
        model_name_for_tokenizer=args.model,
        renderer_name="qwen3",
        max_length=args.max_length,
        batch_size=args.batch_size,
    )
    config = sl_train.Config(
        log_path=args.log_path,
        model_name=args.model,
        recipe_name="bench_reference",
        renderer_name="qwen3",
        dataset_builder=FromConversationFileBuilder(common_config=common, file_path=args.data, test_size=0, shuffle_seed=0),
        learning_rate=args.learning_rate,
        lr_schedule="linear",
        num_epochs=1,
        lora_rank=args.lora_rank,
        base_url=args.base_url,
        save_every=0,
        eval_every=0,
        infrequent_eval_every=0,
        max_steps=args.steps,
    )
    if os.environ.get("BENCH_REFERENCE_HTTP_LOG"):  # debugging aid: timestamped SDK requests on stderr
        import logging

        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        for name in ("httpx", "tinker"):
            logging.getLogger(name).addHandler(handler)
            logging.getLogger(name).setLevel(logging.DEBUG)
    asyncio.run(sl_train.main(config))
    times["end"] = time.time()

    metrics_file = Path(args.log_path) / "metrics.jsonl"
    rows = [json.loads(line) for line in metrics_file.read_text().splitlines() if line.strip()]
    Path(args.out).write_text(json.dumps({**times, "metrics": rows}))


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make-checkpoint")
    mk.add_argument("--out", required=True)
    tr = sub.add_parser("train")
    tr.add_argument("--base-url", required=True)
    tr.add_argument("--model", required=True)
    tr.add_argument("--data", required=True)
    tr.add_argument("--batch-size", type=int, required=True)
    tr.add_argument("--max-length", type=int, required=True)
    tr.add_argument("--learning-rate", type=float, required=True)
    tr.add_argument("--lora-rank", type=int, required=True)
    tr.add_argument("--steps", type=int, required=True)
    tr.add_argument("--log-path", required=True)
    tr.add_argument("--out", required=True)
    tr.add_argument("--cache-renderer", action="store_true", help="build the dataset's renderer once (ref-cached arm)")
    args = p.parse_args()
    if args.cmd == "make-checkpoint":
        make_checkpoint(Path(args.out))
    else:
        train(args)


if __name__ == "__main__":
    main()
