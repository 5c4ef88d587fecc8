"""The Python reference's own training loops (tinker-cookbook 0.6.1 with the official SDK tinker
0.38.0, both unmodified) against a local engine: supervised (`sl`), DPO (`dpo`), RL on the
math_rl arithmetic environment (`rl`) and on-policy distillation (`distill`).

Runs in the reference venv (scripts/lib/reference-env.mjs). Self-contained: it imports nothing
from bench/reference/reference_sl.py (whose `make-checkpoint` and SL `train` it generalizes).

Modes

  reference_loops.py make-checkpoint --out DIR [--perturb-seed S [--perturb-std R]]
      Writes the engine's built-in tiny-qwen3 (same config, same fixed-seed random init) as a
      Hugging Face checkpoint directory with the shipped Qwen3 tokenizer files, so that one path is
      both a base model the engine serves and a name `AutoTokenizer.from_pretrained` can load.
      --perturb-seed S adds deterministic noise to every weight (torch.Generator seeded with S,
      N(0, (R * rms(tensor))^2) per tensor, R = 0.02 by default, tensors in `named_parameters`
      order): the same architecture and tokenizer, predicting differently (a distillation teacher).

  reference_loops.py convert-preferences --in SRC --out DST
      Rewrites a comparisons JSONL into the only row form the reference's
      ComparisonBuilderFromJsonl reads, {"comparison": {prompt_conversation, completion_A,
      completion_B}, "label": "A"|"B"|"Tie"}. Rows {prompt_conversation, chosen, rejected} become
      completion_A = chosen, completion_B = rejected, label "A"; rows already in that form are
      copied. (data/example_preferences.jsonl mixes both forms; read unconverted, the reference
      keeps only the first row's columns and skips every row.)

  reference_loops.py <sl|dpo|rl|distill> --base-url URL --config CONFIG.json --log-path DIR --out OUT.json
      Builds the loop's chz Config the way its recipe does and runs the loop's `main` unchanged
      in this process. CONFIG.json is a flat object (keys in LOOP_KEYS below). --log-path must
      not hold an earlier run (the loops resume from a checkpoints.jsonl they find there).

  reference_loops.py all --base-url URL --config-dir DIR --out-dir DIR
      Runs every <loop>.json found in --config-dir (in the order sl, dpo, rl, distill) one after
      another in this one process (the imports are paid once), with log path <out-dir>/<loop>/,
      writing <out-dir>/<loop>.json. A failing loop is reported and the rest still run; the
      exit status is 1 if any failed.

CONFIG.json (flat; unknown keys are refused; floats/ints coerced as chz would parse a CLI value)
  all:     model (checkpoint dir: base model and tokenizer), renderer_name, learning_rate,
           lora_rank, steps (max_steps); seed is accepted and unused (none of these loops has one)
  sl:      data (conversations JSONL), batch_size, max_length, [cache_renderer=false]
           FromConversationFileBuilder(test_size=0, shuffle_seed=0), lr_schedule linear, 1 epoch
  dpo:     data (comparisons JSONL, {comparison, label} rows only), batch_size, max_length,
           dpo_beta; DPODatasetBuilderFromComparisons(ComparisonBuilderFromJsonl(data)), linear
  rl:      batch_size (groups per batch), group_size, max_tokens, loss_fn, [temperature=1.0],
           [sampling_seed]; math_rl arithmetic env as recipes/math_rl/train.py builds it
           (n_batches=100, few-shot prefix; problems seeded by batch index), sync, kl_penalty 0
  distill: data (prompts JSONL, {"messages": [...]}), teacher_model (checkpoint dir), batch_size
           (groups per batch), group_size, max_tokens, [kl_penalty_coef=1.0], [temperature=1.0],
           [loss_fn=importance_sampling], [sampling_seed]; as recipes/distillation/
           on_policy_distillation.py builds it
  off_policy, off_policy_multi: datasets ([{data (conversations JSONL), teacher_model (checkpoint
           dir), weight, batch_size, max_length}], one per domain), batch_size, n_teacher_targets,
           [teacher_concurrency=64]; distillation/train_off_policy.py with FromConversationFileBuilder
           (test_size=0, shuffle_seed=0) per domain and its renderer cached as with sl
  sdft:    data (SciKnowEval rows JSONL), domain, batch_size (groups per batch), group_size,
           max_tokens, topk, [temperature=1.0], [reverse=false], [max_context_length=32768]; as
           recipes/sdft/train.py builds it (dataset=sciknoweval); see setup_sdft
  decisions: data (decisions JSONL), batch_size, epochs, eval_every, loss_fn ("cross_entropy" |
           "brier"), [validation (held-out decisions JSONL)], [max_train_questions],
           [max_validation_questions], seed (the LoRA seed); see setup_decisions
  Every loop: no evaluators, eval_every = save_every = 0 (and infrequent_eval_every = 0 for sl,
  dpo), no W&B; each still saves its final state + sampler weights (checkpoints.jsonl).

OUT.json
  {"ready": t, "done": [{"step": k, "t": t}, ...], "end": t,
   "metrics": [rows of <log-path>/metrics.jsonl], "checkpoints": [rows of checkpoints.jsonl],
   "files": [every file under <log-path>, relative, sorted],
   "extra_logs": [{"step": k, "t": t}, ...], "started": t, "imported": t}
  Times are time.time(). The loops are only observed; wrappers record —
    ready:   the loop is set up (training client created, tokenizer loaded, dataset built) and is
             about to run step 0. sl: the loop's first `get_tokenizer` call, right after its dataset
             was built (as reference_sl.py). dpo: the first `do_update` call. rl, distill: entry to
             `do_sync_training` (it first saves the initial sampler weights, then step 0 samples), or
             of `do_async_training` with "async_max_steps_off_policy" (rl).
    done[k]: each step's `ml_logger.log_metrics` call (one per step, right after its optim_step
             and, for rl/distill, the next sampler's weights).
    extra_logs: `log_metrics` calls after the training loop returned: rl's final cost-totals row
             (logged with step = number of steps); these rows are also in "metrics".
    end:     the loop's `main` returned (after its final save_state + save_weights_for_sampler).
    started / imported: this process started / finished importing torch and tinker_cookbook.
  Non-finite floats in metrics are written as the strings "NaN", "Infinity", "-Infinity" so OUT is
  strict JSON (the metrics.jsonl file itself is left as the loop wrote it).

Departures from a hosted run (no change to what a loop computes or sends, except sampling_seed):
  - The pricing lookup (`fetch_model_pricing`, an HTTP fetch before the sl and rl loops) returns
    "no pricing", so nothing waits on the network; it only feeds cost metrics.
  - distill: the recipe's PromptOnlyDatasetBuilder(dataset_name="tulu3") is used as is, but its
    `load_dataset("allenai/tulu-3-sft-mixture")` is served from the config's `data` JSONL (rows
    {"messages": [...]}, the Tulu 3 row shape; the recipe keeps each row's first user message).
  - sl with "cache_renderer": true: the dataset builder's renderer is built once rather than once
    per row (the qwen3 renderer deep-copies the tokenizer, about 0.3 s per row on CPU).
  - rl, distill with "sampling_seed": rollout sample requests carry SamplingParams.seed, which the
    cookbook leaves None (the SDK field exists; no cookbook config sets it). The n-th `sample` call
    of the run (in issue order, which asyncio makes deterministic here) gets
    seed = sha256("<sampling_seed>:<n>") mod 2^31. Without it the engine draws fresh random seeds.
"""

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

STARTED = time.time()
REPO_ROOT = Path(__file__).resolve().parents[3]
LOOPS = ("sl", "dpo", "rl", "rl_async", "rl_async_stream", "distill", "off_policy", "off_policy_multi", "decisions", "sdft")

COMMON_KEYS = ("model", "renderer_name", "learning_rate", "lora_rank", "steps")
LOOP_KEYS = {
    # required keys, optional keys (with defaults)
    "sl": (("data", "batch_size", "max_length"), {"cache_renderer": False}),
    "dpo": (("data", "batch_size", "max_length", "dpo_beta"), {}),
    "rl": (
        ("batch_size", "group_size", "max_tokens", "loss_fn"),
        {"temperature": 1.0, "sampling_seed": None, "async_max_steps_off_policy": None, "stream_num_minibatches": None},
    ),
    "distill": (
        ("data", "teacher_model", "batch_size", "group_size", "max_tokens"),
        {"kl_penalty_coef": 1.0, "temperature": 1.0, "loss_fn": "importance_sampling", "sampling_seed": None},
    ),
}

LOOP_KEYS["rl_async"] = LOOP_KEYS["rl"]  # rl with async_max_steps_off_policy set
LOOP_KEYS["rl_async_stream"] = LOOP_KEYS["rl"]  # and stream_num_minibatches (stream groups_per_batch = batch_size)
OFF_POLICY_KEYS = (("datasets", "batch_size", "n_teacher_targets"), {"teacher_concurrency": 64})
LOOP_KEYS["off_policy"] = LOOP_KEYS["off_policy_multi"] = OFF_POLICY_KEYS
LOOP_KEYS["decisions"] = (
    ("data", "batch_size", "epochs", "eval_every", "loss_fn"),
    {"validation": None, "max_train_questions": None, "max_validation_questions": None},
)
LOOP_KEYS["sdft"] = (
    ("data", "domain", "batch_size", "group_size", "max_tokens", "topk"),
    {"temperature": 1.0, "reverse": False, "max_context_length": 32768},
)
FLOAT_KEYS = {"learning_rate", "dpo_beta", "temperature", "kl_penalty_coef"}
INT_KEYS = {"topk", "max_context_length", "n_teacher_targets", "teacher_concurrency", "lora_rank", "steps", "batch_size", "max_length", "group_size", "max_tokens", "sampling_seed", "seed", "epochs", "eval_every", "max_train_questions", "max_validation_questions"}

for _name, _value in (
    ("TINKER_TELEMETRY", "0"),
    ("HF_HUB_OFFLINE", "1"),
    ("HF_DATASETS_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
):
    os.environ.setdefault(_name, _value)


# ---------------------------------------------------------------------------------------------
# make-checkpoint, convert-preferences
# ---------------------------------------------------------------------------------------------


def make_checkpoint(out: Path, perturb_seed: int | None, perturb_std: float) -> None:
    import torch

    sys.path.insert(0, str(REPO_ROOT / "engine"))
    from tinker_engine.base_models import BaseModelCache, _tiny_qwen3

    spec = _tiny_qwen3()
    model = BaseModelCache(torch.device("cpu"), torch.float32)._load(spec)
    if perturb_seed is not None:
        perturb(model, perturb_seed, perturb_std)
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
    note = f" perturbed with seed {perturb_seed}" if perturb_seed is not None else ""
    print(f"wrote tiny-qwen3 checkpoint{note} to {out}")


def perturb(model, seed: int, relative_std: float = 0.02) -> None:
    """Adds N(0, (relative_std * rms(p))^2) noise to every parameter p, from one seeded generator."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():  # tied embeddings appear once
            rms = p.float().pow(2).mean().sqrt()
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            p.add_((noise * relative_std * rms).to(p.dtype))


def convert_preferences(src: Path, dst: Path) -> None:
    out_lines = []
    for n, line in enumerate(src.read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if "comparison" in row and "label" in row:
            out_lines.append(json.dumps({"comparison": row["comparison"], "label": row["label"]}))
        elif {"prompt_conversation", "chosen", "rejected"} <= row.keys():
            comparison = {
                "prompt_conversation": row["prompt_conversation"],
                "completion_A": row["chosen"],
                "completion_B": row["rejected"],
            }
            out_lines.append(json.dumps({"comparison": comparison, "label": "A"}))
        else:
            raise SystemExit(f"{src}:{n}: neither a comparison/label row nor a chosen/rejected row")
    dst.write_text("".join(line + "\n" for line in out_lines))
    print(f"wrote {len(out_lines)} comparisons to {dst}")


# ---------------------------------------------------------------------------------------------
# Observation: timing wrappers installed for one run and removed after it
# ---------------------------------------------------------------------------------------------


class Observer:
    def __init__(self) -> None:
        self.ready: float | None = None
        self.done: list[dict] = []
        self.extra_logs: list[dict] = []
        self.end: float | None = None
        self.loop_returned = False

    def mark_ready(self) -> None:
        if self.ready is None:
            self.ready = time.time()

    def logged(self, step) -> None:
        entry = {"step": step, "t": time.time()}
        (self.extra_logs if self.loop_returned else self.done).append(entry)


@contextlib.contextmanager
def patched(obj, name: str, value):
    original = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield original
    finally:
        setattr(obj, name, original)


def observe_log_metrics(stack: contextlib.ExitStack, obs: Observer) -> None:
    """Every loop logs through `ml_log.setup_logging(...).log_metrics`; record each call's time."""
    from tinker_cookbook.utils import ml_log

    original = ml_log.setup_logging

    def setup_logging(*a, **k):
        logger = original(*a, **k)
        inner = logger.log_metrics

        def log_metrics(metrics, step=None):
            obs.logged(step)
            return inner(metrics, step=step)

        logger.log_metrics = log_metrics
        return logger

    stack.enter_context(patched(ml_log, "setup_logging", setup_logging))


def ready_on_first_call(stack: contextlib.ExitStack, obs: Observer, module, name: str) -> None:
    """`module.name` (a sync function) marks ready when first called."""
    original = getattr(module, name)

    def wrapper(*a, **k):
        obs.mark_ready()
        return original(*a, **k)

    stack.enter_context(patched(module, name, wrapper))


def ready_on_training_loop(stack: contextlib.ExitStack, obs: Observer, module, name: str = "do_sync_training") -> None:
    """`module.<name>` (async: do_sync_training, do_async_training) marks ready on entry and
    `loop_returned` on return."""
    original = getattr(module, name)

    async def training_loop(*a, **k):
        obs.mark_ready()
        try:
            return await original(*a, **k)
        finally:
            obs.loop_returned = True

    stack.enter_context(patched(module, name, training_loop))


def no_pricing(stack: contextlib.ExitStack, module) -> None:
    stack.enter_context(patched(module, "fetch_model_pricing", lambda *a, **k: None))


def seed_rollout_sampling(stack: contextlib.ExitStack, sampling_seed: int | None) -> None:
    """Fills SamplingParams.seed of each `SamplingClient.sample` call from (sampling_seed, call index)."""
    if sampling_seed is None:
        return
    import tinker

    original = tinker.SamplingClient.sample
    counter = {"n": 0}

    def sample(self, prompt, num_samples, sampling_params, *a, **k):
        if sampling_params.seed is None:
            digest = hashlib.sha256(f"{sampling_seed}:{counter['n']}".encode()).digest()
            seed = int.from_bytes(digest[:8], "little") & 0x7FFFFFFF
            sampling_params = sampling_params.model_copy(update={"seed": seed})
        counter["n"] += 1
        return original(self, prompt, num_samples, sampling_params, *a, **k)

    stack.enter_context(patched(tinker.SamplingClient, "sample", sample))


# ---------------------------------------------------------------------------------------------
# Per-loop configs (as the recipes build them) and hooks
# ---------------------------------------------------------------------------------------------


def chat_common_config(cfg: dict):
    from tinker_cookbook.supervised.types import ChatDatasetBuilderCommonConfig

    return ChatDatasetBuilderCommonConfig(
        model_name_for_tokenizer=cfg["model"],
        renderer_name=cfg["renderer_name"],
        max_length=cfg["max_length"],
        batch_size=cfg["batch_size"],
    )


def setup_sl(cfg: dict, base_url: str, log_path: str, stack, obs):
    from tinker_cookbook.supervised import train as sl_train
    from tinker_cookbook.supervised.data import FromConversationFileBuilder

    ready_on_first_call(stack, obs, sl_train, "get_tokenizer")
    no_pricing(stack, sl_train)
    if cfg["cache_renderer"]:
        cache_chat_renderer(stack)
    config = sl_train.Config(
        log_path=log_path,
        model_name=cfg["model"],
        recipe_name="parity_reference_sl",
        renderer_name=cfg["renderer_name"],
        dataset_builder=FromConversationFileBuilder(
            common_config=chat_common_config(cfg), file_path=cfg["data"], test_size=0, shuffle_seed=0
        ),
        learning_rate=cfg["learning_rate"],
        lr_schedule="linear",
        num_epochs=1,
        lora_rank=cfg["lora_rank"],
        base_url=base_url,
        save_every=0,
        eval_every=0,
        infrequent_eval_every=0,
        max_steps=cfg["steps"],
    )
    return lambda: asyncio.run(sl_train.main(config))


def cache_chat_renderer(stack: contextlib.ExitStack) -> None:
    """The builder's `renderer` property builds one renderer per builder instead of one per row."""
    from tinker_cookbook.supervised import types as sl_types

    built: dict = {}
    original = sl_types.ChatDatasetBuilder.renderer.fget

    def renderer(self):
        if id(self) not in built:
            built[id(self)] = original(self)
        return built[id(self)]

    stack.enter_context(patched(sl_types.ChatDatasetBuilder, "renderer", property(renderer)))


def check_comparisons_file(path: str) -> None:
    """ComparisonBuilderFromJsonl reads only {"comparison", "label"} rows, and its HF Dataset keeps
    only the first row's columns: a file with other rows would silently train on nothing."""
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip() and not {"comparison", "label"} <= json.loads(line).keys():
            raise SystemExit(
                f"{path}:{n}: not a {{comparison, label}} row, which is all ComparisonBuilderFromJsonl reads; "
                "rewrite the file with `reference_loops.py convert-preferences`"
            )


def setup_dpo(cfg: dict, base_url: str, log_path: str, stack, obs):
    from tinker_cookbook.preference import train_dpo
    from tinker_cookbook.preference.dpo_datasets import DPODatasetBuilderFromComparisons
    from tinker_cookbook.preference.preference_datasets import ComparisonBuilderFromJsonl

    check_comparisons_file(cfg["data"])
    ready_on_first_call(stack, obs, train_dpo, "do_update")
    config = train_dpo.Config(
        log_path=log_path,
        model_name=cfg["model"],
        recipe_name="parity_reference_dpo",
        renderer_name=cfg["renderer_name"],
        dataset_builder=DPODatasetBuilderFromComparisons(
            common_config=chat_common_config(cfg),
            comparison_builder=ComparisonBuilderFromJsonl(train_path=cfg["data"]),
        ),
        learning_rate=cfg["learning_rate"],
        lr_schedule="linear",
        num_epochs=1,
        dpo_beta=cfg["dpo_beta"],
        lora_rank=cfg["lora_rank"],
        base_url=base_url,
        save_every=0,
        eval_every=0,
        infrequent_eval_every=0,
        max_steps=cfg["steps"],
    )
    return lambda: train_dpo.main(config)


def setup_rl(cfg: dict, base_url: str, log_path: str, stack, obs):
    from tinker_cookbook.recipes.math_rl import arithmetic_env
    from tinker_cookbook.rl import train as rl_train

    off_policy = cfg["async_max_steps_off_policy"]
    ready_on_training_loop(stack, obs, rl_train, "do_sync_training" if off_policy is None else "do_async_training")
    no_pricing(stack, rl_train)
    seed_rollout_sampling(stack, cfg["sampling_seed"])
    # As recipes/math_rl/train.py get_dataset_builder("arithmetic", ...) and cli_main build it.
    config = rl_train.Config(
        learning_rate=cfg["learning_rate"],
        dataset_builder=arithmetic_env.ArithmeticDatasetBuilder(
            batch_size=cfg["batch_size"],
            model_name_for_tokenizer=cfg["model"],
            renderer_name=cfg["renderer_name"],
            n_batches=100,
            include_fewshot=True,
            group_size=cfg["group_size"],
        ),
        model_name=cfg["model"],
        recipe_name="recipe_math_rl",
        renderer_name=cfg["renderer_name"],
        lora_rank=cfg["lora_rank"],
        max_tokens=cfg["max_tokens"],
        temperature=cfg["temperature"],
        log_path=log_path,
        base_url=base_url,
        compute_post_kl=False,
        kl_penalty_coef=0.0,
        num_substeps=1,
        eval_every=0,
        save_every=0,
        # Async: as the recipe's --async flags build it; its loss is the async config's own.
        async_config=None
        if off_policy is None
        else rl_train.AsyncConfig(max_steps_off_policy=off_policy, groups_per_batch=cfg["batch_size"], loss_fn=cfg["loss_fn"]),
        stream_minibatch_config=None
        if cfg["stream_num_minibatches"] is None
        else rl_train.StreamMinibatchConfig(groups_per_batch=cfg["batch_size"], num_minibatches=cfg["stream_num_minibatches"]),
        loss_fn=cfg["loss_fn"],
        loss_fn_config=None,
        max_steps=cfg["steps"],
    )
    return lambda: asyncio.run(rl_train.main(config))


def serve_tulu3_from(stack: contextlib.ExitStack, prompts_path: str) -> None:
    """The recipe's tulu3 loader reads `load_dataset("allenai/tulu-3-sft-mixture", split="train")`
    and keeps each row's first user message; hand it the rows of a local JSONL instead."""
    from tinker_cookbook.distillation import datasets as distill_datasets

    rows = [json.loads(line) for line in Path(prompts_path).read_text().splitlines() if line.strip()]

    def load_dataset(name, *a, split=None, **k):
        if name != "allenai/tulu-3-sft-mixture":
            raise RuntimeError(f"reference_loops.py serves only the tulu3 prompts offline, not {name!r}")
        return rows

    stack.enter_context(patched(distill_datasets, "load_dataset", load_dataset))


def setup_distill(cfg: dict, base_url: str, log_path: str, stack, obs):
    from tinker_cookbook.distillation import train_on_policy
    from tinker_cookbook.distillation.datasets import (
        DistillationDatasetConfig,
        PromptOnlyDatasetBuilder,
        TeacherConfig,
    )

    ready_on_training_loop(stack, obs, train_on_policy)
    serve_tulu3_from(stack, cfg["data"])
    seed_rollout_sampling(stack, cfg["sampling_seed"])
    # As recipes/distillation/on_policy_distillation.py cli_main builds it (dataset "tulu3").
    dataset_builder = PromptOnlyDatasetBuilder(
        dataset_name="tulu3",
        groups_per_batch=cfg["batch_size"],
        group_size=cfg["group_size"],
        model_name_for_tokenizer=cfg["model"],
        renderer_name=cfg["renderer_name"],
    )
    dataset_config = DistillationDatasetConfig(
        dataset_builder=dataset_builder,
        teacher_config=TeacherConfig(base_model=cfg["teacher_model"], load_checkpoint_path=None),
        groups_per_batch=cfg["batch_size"],
    )
    config = train_on_policy.Config(
        recipe_name="recipe_distillation_on_policy",
        learning_rate=cfg["learning_rate"],
        dataset_configs=[dataset_config],
        model_name=cfg["model"],
        renderer_name=cfg["renderer_name"],
        lora_rank=cfg["lora_rank"],
        max_tokens=cfg["max_tokens"],
        temperature=cfg["temperature"],
        kl_penalty_coef=cfg["kl_penalty_coef"],
        kl_discount_factor=0.0,
        num_substeps=1,
        loss_fn=cfg["loss_fn"],
        loss_fn_config=None,
        log_path=log_path,
        base_url=base_url,
        compute_post_kl=False,
        eval_every=0,
        save_every=0,
        max_steps=cfg["steps"],
    )
    return lambda: asyncio.run(train_on_policy.main(config))


def setup_off_policy(cfg: dict, base_url: str, log_path: str, stack, obs):
    """Off-policy distillation (distillation/train_off_policy.py) on conversation files: one
    DatasetWithTeacher per entry of cfg["datasets"] ({data, teacher_model, weight, batch_size,
    max_length}), each a FromConversationFileBuilder(test_size=0, shuffle_seed=0)."""
    from tinker_cookbook.distillation import train_off_policy
    from tinker_cookbook.distillation.datasets import TeacherConfig
    from tinker_cookbook.supervised.data import FromConversationFileBuilder

    ready_on_first_call(stack, obs, train_off_policy._CompositeSupervisedDataset, "get_batch")
    cache_chat_renderer(stack)
    dataset_configs = [
        train_off_policy.DatasetWithTeacher(
            dataset_builder=FromConversationFileBuilder(
                common_config=chat_common_config({**cfg, "batch_size": int(d["batch_size"]), "max_length": int(d["max_length"])}),
                file_path=d["data"],
                test_size=0,
                shuffle_seed=0,
            ),
            teacher_config=TeacherConfig(base_model=d["teacher_model"], load_checkpoint_path=None),
            weight=float(d["weight"]),
        )
        for d in cfg["datasets"]
    ]
    config = train_off_policy.Config(
        learning_rate=cfg["learning_rate"],
        dataset_configs=dataset_configs,
        model_name=cfg["model"],
        recipe_name="parity_reference_off_policy",
        renderer_name=cfg["renderer_name"],
        lora_rank=cfg["lora_rank"],
        n_teacher_targets=cfg["n_teacher_targets"],
        teacher_concurrency=cfg["teacher_concurrency"],
        batch_size=cfg["batch_size"],
        save_every=0,
        eval_every=0,
        max_steps=cfg["steps"],
        log_path=log_path,
        base_url=base_url,
    )
    return lambda: asyncio.run(train_off_policy.main(config))


def setup_sdft(cfg: dict, base_url: str, log_path: str, stack, obs):
    """SDFT (distillation/sdft.py main) as recipes/sdft/train.py cli_main builds it for
    dataset=sciknoweval, its `load_dataset("hicai-zju/SciKnowEval")` served from a local JSONL of
    the dataset's rows. The teacher is the student's base model, as the loop creates it."""
    from tinker_cookbook.distillation import sdft
    from tinker_cookbook.recipes.sdft import datasets as sdft_datasets

    rows = [json.loads(line) for line in Path(cfg["data"]).read_text().splitlines() if line.strip()]

    def load_dataset(name, *a, split=None, **k):
        if name != "hicai-zju/SciKnowEval":
            raise RuntimeError(f"reference_loops.py serves only SciKnowEval offline, not {name!r}")
        return rows

    stack.enter_context(patched(sdft_datasets, "load_dataset", load_dataset))
    ready_on_first_call(stack, obs, sdft_datasets.SDFTDataset, "get_batch")
    builder = sdft_datasets.SciKnowEvalSDFTBuilder(
        groups_per_batch=cfg["batch_size"],
        group_size=cfg["group_size"],
        model_name_for_tokenizer=cfg["model"],
        renderer_name=cfg["renderer_name"],
        domain=cfg["domain"],
    )
    config = sdft.Config(
        model_name=cfg["model"],
        recipe_name="recipe_sdft",
        renderer_name=cfg["renderer_name"],
        lora_rank=cfg["lora_rank"],
        base_url=base_url,
        learning_rate=cfg["learning_rate"],
        max_tokens=cfg["max_tokens"],
        temperature=cfg["temperature"],
        topk=cfg["topk"],
        reverse=cfg["reverse"],
        teacher_sync_every=None,
        max_context_length=cfg["max_context_length"],
        num_substeps=1,
        eval_every=0,
        save_every=0,
        log_path=log_path,
        max_steps=cfg["steps"],
    )

    async def run():
        train_dataset, test_dataset = await builder()
        await sdft.main(config, train_dataset, test_dataset)

    return lambda: asyncio.run(run())


def read_decisions(path: str, limit: int | None):
    """A decisions JSONL's rows as the reference's Decision with the row's label / target_probs."""
    from tinker_cookbook.recipes.decisions import Decision

    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    rows = rows if limit is None else rows[:limit]
    return [
        (Decision(r["question"], [(c["label"], c.get("description", "")) for c in r["choices"]]), r.get("label"), r.get("target_probs"))
        for r in rows
    ]


def setup_decisions(cfg: dict, base_url: str, log_path: str, stack, obs):
    """The reference has no loop that trains decisions from a file: recipes/decisions/train.py
    documents the step (decision_choice_datums + forward_backward(cross_entropy), or
    decision_dist_datums + forward_backward_custom(probability_loss(...)), then
    optim_step(AdamParams(learning_rate)), both submitted before either is awaited), and
    forecasting.py's `train` is the loop around it (batches in order, constant learning rate, the
    model scored from save_weights_and_get_sampling_client at the start, every eval_every steps
    and at the end, a final "both" checkpoint with {"step": total, "final": true}). This is that
    loop, minimal, on the reference's own DecisionRenderer, datum builders, probability_loss and
    sample_decision. Unlike forecasting.py, which logs a step's training row at step + 1 and its
    evals in rows of their own, it logs one row per step with the evals on the pre-step weights
    merged in (the layout of the reference's supervised loop), and the end's scores at step =
    total; the values are the same. Timings: trace_iteration per row, spans "run_evals" and "step".
    Held-out scores (ours, the reference has none for generic decisions): accuracy (first argmax
    of the probabilities is the targets'), target_prob:mean (Σ p·t) and brier (Σ (p − t)²)."""
    import tinker

    from tinker_cookbook import checkpoint_utils, renderers
    from tinker_cookbook.recipes.decisions import (
        DecisionRenderer,
        decision_choice_datums,
        decision_dist_datums,
        probability_loss,
        sample_decision,
    )
    from tinker_cookbook.tokenizer_utils import get_tokenizer
    from tinker_cookbook.utils import ml_log, trace

    def brier(choice_probs, target_probs):
        return ((choice_probs - target_probs) ** 2).sum()

    def scores(examples, probabilities) -> dict:
        correct = target_prob = brier_sum = 0.0
        for (decision, label, target_probs), probs in zip(examples, probabilities, strict=True):
            targets = target_probs if target_probs is not None else {label: 1.0}
            p = [probs[lb] for lb in decision.labels]
            t = [targets.get(lb, 0.0) for lb in decision.labels]
            argmax = lambda xs: max(range(len(xs)), key=xs.__getitem__)
            correct += int(argmax(p) == argmax(t))
            target_prob += sum(x * y for x, y in zip(p, t))
            brier_sum += sum((x - y) ** 2 for x, y in zip(p, t))
        n = len(examples)
        return {"test/accuracy": correct / n, "test/target_prob:mean": target_prob / n, "test/brier": brier_sum / n}

    async def main() -> None:
        train = read_decisions(cfg["data"], cfg["max_train_questions"])
        validation = read_decisions(cfg["validation"], cfg["max_validation_questions"]) if cfg["validation"] else []
        ml_logger = ml_log.setup_logging(log_dir=log_path, config=cfg)
        decision_renderer = DecisionRenderer(renderers.get_renderer(cfg["renderer_name"], get_tokenizer(cfg["model"])))
        service_client = tinker.ServiceClient(base_url=base_url)
        training_client = await service_client.create_lora_training_client_async(
            base_model=cfg["model"], rank=cfg["lora_rank"], seed=cfg["seed"]
        )
        steps_per_epoch = math.ceil(len(train) / cfg["batch_size"])
        total_steps = min(steps_per_epoch * cfg["epochs"], cfg["steps"] or math.inf)
        custom_loss = probability_loss(brier)

        async def evaluate() -> dict:
            sampling_client = await training_client.save_weights_and_get_sampling_client()
            probabilities = await asyncio.gather(
                *(sample_decision(sampling_client, decision_renderer.render(d)) for d, _, _ in validation)
            )
            return scores(validation, probabilities)

        obs.mark_ready()
        for step in range(total_steps):
            metrics: dict = {}
            with trace.trace_iteration(step) as window:
                if validation and (step == 0 or (cfg["eval_every"] > 0 and step % cfg["eval_every"] == 0)):
                    async with trace.scope_span("run_evals"):
                        metrics.update(await evaluate())
                start_time = time.time()
                offset = (step % steps_per_epoch) * cfg["batch_size"]
                batch = train[offset : offset + cfg["batch_size"]]
                async with trace.scope_span("step"):
                    if cfg["loss_fn"] == "brier":
                        datums = decision_dist_datums(
                            decision_renderer, [(d, t if t is not None else {label: 1.0}) for d, label, t in batch]
                        )
                        fwd_bwd_future = training_client.forward_backward_custom(datums, custom_loss)
                    else:
                        datums = decision_choice_datums(decision_renderer, [(d, label) for d, label, _ in batch])
                        fwd_bwd_future = training_client.forward_backward(datums, loss_fn="cross_entropy")
                    optim_future = training_client.optim_step(tinker.AdamParams(learning_rate=cfg["learning_rate"]))
                    fwd_bwd_result = await fwd_bwd_future
                    await optim_future
            if cfg["loss_fn"] == "brier":
                metrics.update(
                    {f"train/{k}": v for k, v in fwd_bwd_result.metrics.items() if k in ("loss", "target_prob:mean", "accuracy")}
                )
            else:
                import torch

                nll = [
                    -(out["logprobs"].to_torch() * d.loss_fn_inputs["weights"].to_torch()).sum()
                    for out, d in zip(fwd_bwd_result.loss_fn_outputs, datums, strict=True)
                ]
                metrics["train/loss"] = float(torch.stack(nll).mean().item())
            metrics.update(
                learning_rate=cfg["learning_rate"],
                num_examples=len(batch),
                progress=(step + 1) / total_steps,
                time_total=time.time() - start_time,
            )
            metrics.update(window.get_timing_metrics())
            ml_logger.log_metrics(metrics, step=step)
        obs.loop_returned = True
        if validation:
            with trace.trace_iteration(total_steps) as window:
                async with trace.scope_span("run_evals"):
                    final = await evaluate()
            final.update(window.get_timing_metrics())
            ml_logger.log_metrics(final, step=total_steps)
        await checkpoint_utils.save_checkpoint_async(
            training_client,
            name="final",
            log_path=log_path,
            loop_state={"step": total_steps, "final": True},
            kind="both",
        )
        ml_logger.close()

    return lambda: asyncio.run(main())


SETUP = {
    "sl": setup_sl,
    "dpo": setup_dpo,
    "rl": setup_rl,
    "rl_async": setup_rl,
    "rl_async_stream": setup_rl,
    "distill": setup_distill,
    "off_policy": setup_off_policy,
    "off_policy_multi": setup_off_policy,
    "decisions": setup_decisions,
    "sdft": setup_sdft,
}


# ---------------------------------------------------------------------------------------------
# Running a loop and collecting its outputs
# ---------------------------------------------------------------------------------------------


def load_config(loop: str, path: Path) -> dict:
    raw = json.loads(path.read_text())
    required, optional = LOOP_KEYS[loop]
    missing = [k for k in (*COMMON_KEYS, *required) if k not in raw]
    if missing:
        raise SystemExit(f"{path}: missing {', '.join(missing)} for loop {loop}")
    known = {*COMMON_KEYS, *required, *optional, "seed"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SystemExit(f"{path}: unknown keys {', '.join(unknown)} for loop {loop}")
    cfg = {**optional, **raw}
    # As chz would parse them from a command line: a JSON `1` for a float field is 1.0, so that
    # metrics echoing the config (rl's optim/lr) keep the float type of a CLI run.
    for key in FLOAT_KEYS & cfg.keys():
        cfg[key] = float(cfg[key])
    for key in INT_KEYS & cfg.keys():
        if cfg[key] is not None:
            cfg[key] = int(cfg[key])
    return cfg


def check_fresh_log_path(log_path: Path) -> None:
    if log_path.exists() and any(log_path.iterdir()):
        raise SystemExit(f"{log_path} is not empty: the loops resume from what they find there")


def read_jsonl(path: Path) -> list:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def finite_json(value):
    """NaN and infinities as strings, so that the result is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite_json(v) for v in value]
    return value


def run_loop(loop: str, cfg: dict, base_url: str, log_path: Path, out: Path, imported: float) -> None:
    check_fresh_log_path(log_path)
    obs = Observer()
    with contextlib.ExitStack() as stack:
        observe_log_metrics(stack, obs)
        run = SETUP[loop](cfg, base_url, str(log_path), stack, obs)
        run()
        obs.end = time.time()
    files = sorted(str(p.relative_to(log_path)) for p in log_path.rglob("*") if p.is_file())
    result = {
        "ready": obs.ready,
        "done": obs.done,
        "end": obs.end,
        "metrics": read_jsonl(log_path / "metrics.jsonl"),
        "checkpoints": read_jsonl(log_path / "checkpoints.jsonl"),
        "files": files,
        "extra_logs": obs.extra_logs,
        "started": STARTED,
        "imported": imported,
    }
    out.write_text(json.dumps(finite_json(result), allow_nan=False))


def import_reference() -> float:
    """Imports torch and every loop module up front, so the loops' own times exclude imports."""
    import torch  # noqa: F401
    import tinker_cookbook.distillation.sdft  # noqa: F401
    import tinker_cookbook.distillation.train_off_policy  # noqa: F401
    import tinker_cookbook.distillation.train_on_policy  # noqa: F401
    import tinker_cookbook.preference.train_dpo  # noqa: F401
    import tinker_cookbook.recipes.decisions  # noqa: F401
    import tinker_cookbook.recipes.math_rl.arithmetic_env  # noqa: F401
    import tinker_cookbook.rl.train  # noqa: F401
    import tinker_cookbook.supervised.train  # noqa: F401

    return time.time()


def run_all(base_url: str, config_dir: Path, out_dir: Path) -> int:
    imported = import_reference()
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = []
    for loop in LOOPS:
        config_path = config_dir / f"{loop}.json"
        if not config_path.exists():
            continue
        try:
            cfg = load_config(loop, config_path)
            run_loop(loop, cfg, base_url, out_dir / loop, out_dir / f"{loop}.json", imported)
            print(f"reference_loops: {loop} done", flush=True)
        except BaseException as e:  # noqa: BLE001 - SystemExit from checks included; keep going
            if isinstance(e, KeyboardInterrupt):
                raise
            traceback.print_exc()
            print(f"reference_loops: {loop} FAILED: {e}", file=sys.stderr, flush=True)
            failed.append(loop)
    return 1 if failed else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make-checkpoint")
    mk.add_argument("--out", required=True)
    mk.add_argument("--perturb-seed", type=int, default=None)
    mk.add_argument("--perturb-std", type=float, default=0.02, help="noise std relative to each tensor's rms")
    cv = sub.add_parser("convert-preferences")
    cv.add_argument("--in", dest="src", required=True)
    cv.add_argument("--out", required=True)
    for loop in LOOPS:
        lp = sub.add_parser(loop)
        lp.add_argument("--base-url", required=True)
        lp.add_argument("--config", required=True)
        lp.add_argument("--log-path", required=True)
        lp.add_argument("--out", required=True)
    al = sub.add_parser("all")
    al.add_argument("--base-url", required=True)
    al.add_argument("--config-dir", required=True)
    al.add_argument("--out-dir", required=True)
    args = p.parse_args()

    if args.cmd == "make-checkpoint":
        make_checkpoint(Path(args.out), args.perturb_seed, args.perturb_std)
    elif args.cmd == "convert-preferences":
        convert_preferences(Path(args.src), Path(args.out))
    elif args.cmd == "all":
        sys.exit(run_all(args.base_url, Path(args.config_dir), Path(args.out_dir)))
    else:
        cfg = load_config(args.cmd, Path(args.config))
        imported = import_reference()
        run_loop(args.cmd, cfg, args.base_url, Path(args.log_path), Path(args.out), imported)


if __name__ == "__main__":
    main()
