"""Exports a LoRA checkpoint as a serving adapter (PEFT folder) or as a merged Hugging Face checkpoint.

    python -m tinker_engine.export (--archive FILE.tar | --adapter-dir DIR) --format peft|merged
        --out DIR [--base-model NAME] [--base-dir HF_DIR] [--base-model-id NAME] [--dtype auto|float32|bfloat16|float16]
        [--strategy auto|shard|full] [--dequantize] [--quantize experts-fp8 --serving-format vllm] [--card FILE.json]
        [--publish REPO [--public] [--commit-message M] [--dry-run]]

The source is a checkpoint archive (the tar of the protocol's archive download) or a folder holding
`adapter_config.json` and `adapter_model.safetensors` (the layout of every engine and hosted Tinker
checkpoint). The base model is a Hugging Face checkpoint folder (`--base-dir`, or the adapter's base named
by its folder) or one of the engine's built-in tiny models (generated from its fixed seed, exactly as the
engine builds it).

peft:   the adapter folder vLLM and SGLang serve (weights/serving_adapter.py, the reference's
        build_lora_adapter): adapter_model.safetensors under the base family's module names and
        adapter_config.json; checked against the base's tensors, and loaded with peft where peft can.
merged: onto a base folder, the per-family merge (weights/merge.py: strategies, dtype, quantized formats);
        onto a built-in model, peft's merge (base + scale·B·A in each adapted Linear; a LoRA on a tied
        unembedding unties it). Either way config.json, generation_config.json, the tokenizer files and a
        README.md model card (weights/model_card.py; `--card` supplies the run's facts).
--publish uploads the finished folder to the Hugging Face Hub with HF_TOKEN (weights/publish.py); with
--dry-run it lists the repo, commit message and every file with its size instead, offline.

The output is written under a temporary name next to --out and renamed into place at the end:
a failed export leaves nothing behind. Errors are one line on stderr, exit status 2.
"""

import argparse
import json
import os
import shutil
import sys
import tarfile
import uuid
import warnings
from pathlib import Path

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
FORMATS = ("peft", "merged")
DTYPES = ("auto", "float32", "bfloat16", "float16")
STRATEGIES = ("auto", "shard", "full")
# Tokenizer (and chat template) files copied from a local base checkpoint into a merged export.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja", "chat_template.json")


class ExportError(Exception):
    """Bad input or an export that cannot be made: the message names the file, path or option."""


def check_out_dir(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        what = "a file" if not out.is_dir() else "a non-empty directory"
        raise ExportError(f"--out {out} is {what}; give a new or empty directory")


def extract_archive(archive: Path, dest: Path) -> Path:
    """Extracts the plain files of a checkpoint tar (flat or in one top folder) into `dest`."""
    try:
        tar = tarfile.open(archive, "r:*")
    except (OSError, tarfile.TarError) as e:
        raise ExportError(f"{archive} is not a readable checkpoint archive (tar): {e}") from None
    with tar:
        for member in tar.getmembers():
            parts = [p for p in member.name.split("/") if p not in ("", ".")]
            if member.isdir():
                continue
            if not member.isfile() or not parts or ".." in parts or member.name.startswith("/"):
                raise ExportError(f"{archive}: unsafe entry {member.name!r} (links, devices and paths outside the archive are refused)")
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    return adapter_folder(dest, f"archive {archive}")


def adapter_folder(root: Path, what: str) -> Path:
    if (root / ADAPTER_CONFIG).is_file():
        return root
    found = sorted(p.parent for p in root.rglob(ADAPTER_CONFIG))
    if len(found) == 1:
        return found[0]
    raise ExportError(f"{what} holds no {ADAPTER_CONFIG} (not a LoRA checkpoint)")


def read_adapter(folder: Path, what: str) -> tuple:
    from safetensors.torch import load_file

    config_file, weights_file = folder / ADAPTER_CONFIG, folder / ADAPTER_WEIGHTS
    for f in (config_file, weights_file):
        if not f.is_file():
            raise ExportError(f"{what} has no {f.name} ({f})")
    try:
        config = json.loads(config_file.read_text())
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        raise ExportError(f"{config_file}: not a valid adapter config: {e}") from None
    for key in ("r", "lora_alpha"):
        if key not in config:
            raise ExportError(f"{config_file}: no {key!r} (not a LoRA adapter config)")
    try:
        state = load_file(str(weights_file))
    except Exception as e:  # noqa: BLE001 — safetensors raises its own error types
        raise ExportError(f"{weights_file}: not readable safetensors: {e}") from None
    if not state or not all(".lora_A." in k or ".lora_B." in k for k in state):
        raise ExportError(f"{weights_file}: expected LoRA tensors (…lora_A.weight / …lora_B.weight)")
    return config, state


def resolve_builtin(name: str | None):
    """The engine's BaseModelSpec of a built-in base model (generated from its seed), or None."""
    from .base_models import BUILTIN_MODELS

    key = (name or "").split(":peft:")[0]
    if key not in BUILTIN_MODELS:
        return None
    spec = BUILTIN_MODELS[key]()
    spec.name = key
    return spec


def pick_dtype(choice: str, spec):
    import torch

    if choice != "auto":
        return getattr(torch, choice)
    if spec.checkpoint_dir is None:
        return torch.float32  # built-in tiny models: the engine's own dtype on CPU
    native = getattr(spec.config, "dtype", None) or getattr(spec.config, "torch_dtype", None)
    if isinstance(native, str):
        native = getattr(torch, native, None)
    return native if isinstance(native, torch.dtype) else torch.float32


def load_base(spec, meta: bool = False):
    """The base model as the engine builds it (float32 on CPU), or its skeleton on the meta device."""
    import torch

    from .base_models import BaseModelCache

    if meta:
        from .base_models import model_class

        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model_class(spec.config).from_config(spec.config)
    return BaseModelCache(torch.device("cpu"), torch.float32)._load(spec)


def short_targets(model, targets: list) -> list:
    """peft matches a target by full name or by last name component: use the short names (q_proj, …,
    as vLLM and the Hub's adapters do) when they select exactly the same modules."""
    targets = sorted(set(targets))
    suffixes = sorted({t.rsplit(".", 1)[-1] for t in targets})
    names = [n for n, _ in model.named_modules() if n]
    selected = {n for n in names if n.rsplit(".", 1)[-1] in suffixes}
    return suffixes if selected == set(targets) else targets


def tied_head(model) -> bool:
    head, embed = model.get_output_embeddings(), model.get_input_embeddings()
    return head is not None and embed is not None and head.weight.data_ptr() == embed.weight.data_ptr()


def head_targeted(model, targets: list) -> bool:
    head = model.get_output_embeddings()
    if head is None:
        return False
    head_name = next(n for n, m in model.named_modules() if m is head)
    return any(t == head_name or head_name.endswith("." + t) for t in targets)


def write_peft(folder: Path, config: dict, state: dict, base_id: str, skeleton) -> None:
    from safetensors.torch import save_file

    out = {k: v for k, v in config.items() if v is not None or k in ("task_type",)}
    out["base_model_name_or_path"] = base_id
    out["peft_type"] = "LORA"
    out["task_type"] = "CAUSAL_LM"
    if "target_modules" not in config:
        raise ExportError(f"{ADAPTER_CONFIG}: no 'target_modules' (a merge onto a built-in model loads the adapter with peft)")
    targets = config["target_modules"]
    targets = [targets] if isinstance(targets, str) else list(targets)
    out["target_modules"] = short_targets(skeleton, targets) if skeleton is not None else sorted(set(targets))
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    (folder / ADAPTER_CONFIG).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


def peft_loads(folder: Path) -> bool:
    """Whether peft itself applies this adapter to the transformers model (the dense families: vLLM's
    per-expert and renamed keys are not transformers' module names)."""
    from safetensors import safe_open

    config = json.loads((folder / ADAPTER_CONFIG).read_text())
    with safe_open(str(folder / ADAPTER_WEIGHTS), framework="pt") as f:
        return not config["rank_pattern"] and not any(".experts." in k for k in f.keys())  # noqa: SIM118


def check_adapter_matches(skeleton, folder: Path, state: dict) -> None:
    """The adapter's tensors are exactly the ones peft creates for this config on this base."""
    from peft import LoraConfig, get_peft_model, get_peft_model_state_dict

    config = LoraConfig.from_pretrained(str(folder))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = get_peft_model(skeleton, config)
        reference = get_peft_model_state_dict(peft_model, save_embedding_layers=False)
    missing, extra = sorted(set(reference) - set(state)), sorted(set(state) - set(reference))
    if missing or extra:
        raise ExportError(f"the adapter does not fit base model {config.base_model_name_or_path!r}: "
                          f"missing {missing[:3]}, unexpected {extra[:3]}")
    for k, v in state.items():
        if tuple(v.shape) != tuple(reference[k].shape):
            raise ExportError(f"adapter tensor {k} has shape {tuple(v.shape)}; base model "
                              f"{config.base_model_name_or_path!r} needs {tuple(reference[k].shape)}")


def write_generation_config(folder: Path, spec) -> None:
    """Generation settings: the base checkpoint's own, else the engine's stop tokens of the model."""
    if spec.checkpoint_dir and (Path(spec.checkpoint_dir) / "generation_config.json").is_file():
        shutil.copyfile(Path(spec.checkpoint_dir) / "generation_config.json", folder / "generation_config.json")
        return
    gen = {"eos_token_id": spec.eos_token_ids}
    for key in ("bos_token_id", "pad_token_id"):
        value = getattr(spec.config, key, None)
        if value is not None:
            gen[key] = value
    (folder / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")


def write_folder_generation_config(folder: Path, base: Path) -> None:
    """A base without generation_config.json: its config's own token ids, as transformers derives them."""
    config = json.loads((base / "config.json").read_text())
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    gen = {k: text.get(k, config.get(k)) for k in ("bos_token_id", "eos_token_id", "pad_token_id")}
    (folder / "generation_config.json").write_text(json.dumps({k: v for k, v in gen.items() if v is not None}, indent=2) + "\n")


def write_merged(folder: Path, peft_folder: Path, spec, dtype) -> None:
    import torch
    from peft import PeftModel

    base = load_base(spec)
    config = json.loads((peft_folder / ADAPTER_CONFIG).read_text())
    if tied_head(base) and head_targeted(base, config["target_modules"]):
        # The LoRA changes the unembedding only: give the head its own copy of the tied matrix.
        base.lm_head.weight = torch.nn.Parameter(base.get_input_embeddings().weight.detach().clone(), requires_grad=False)
        base.config.tie_word_embeddings = False
        text_config = base.config.get_text_config() if hasattr(base.config, "get_text_config") else None
        if text_config is not None:
            text_config.tie_word_embeddings = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peft_model = PeftModel.from_pretrained(base, str(peft_folder), is_trainable=False)
        merged = peft_model.merge_and_unload(safe_merge=True)
    merged.to(dtype)
    merged.config.dtype = dtype
    merged.save_pretrained(str(folder), safe_serialization=True)
    write_generation_config(folder, spec)
    # A vision model's image processor (what its images are resized and counted with).
    if spec.vision is not None and spec.vision.processor is not None:
        (folder / "preprocessor_config.json").write_text(json.dumps(spec.vision.processor.config, indent=2) + "\n")
    # Tokenizer files: the base checkpoint's, or the built-in model's tokenizer.
    if spec.checkpoint_dir:
        for name in TOKENIZER_FILES:
            src = Path(spec.checkpoint_dir) / name
            if src.is_file():
                shutil.copyfile(src, folder / name)
    elif spec.tokenizer_file and Path(spec.tokenizer_file).is_file():
        src_dir = Path(spec.tokenizer_file).parent
        for name in TOKENIZER_FILES:
            if (src_dir / name).is_file():
                shutil.copyfile(src_dir / name, folder / name)


def base_checkpoint_folder(name: str | None, base_dir: str | None) -> Path | None:
    """The base's Hugging Face checkpoint folder: --base-dir, or a base named by its folder."""
    if base_dir:
        if not Path(base_dir).is_dir():
            raise ExportError(f"--base-dir {base_dir}: no such directory")
        return Path(base_dir).resolve()
    key = (name or "").split(":peft:")[0]
    return Path(key).resolve() if key and os.path.isdir(key) else None


def describe_folder(folder: Path) -> tuple[dict, dict, str]:
    """(config.json, tensor shapes, label) of a base folder, from its headers after checking it is whole
    (every indexed shard present, no shard cut short)."""
    from .weights.checkpoint import BaseCheckpoint
    from .weights.errors import MergeError

    try:
        base = BaseCheckpoint(folder)
    except MergeError as e:
        raise ExportError(str(e)) from None
    return base.config, base.shapes, str(base.folder)


def describe_builtin(spec, skeleton) -> tuple[dict, dict, str] | None:
    if spec is None:
        return None
    return spec.config.to_dict(), {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}, spec.name


def write_serving_peft(folder: Path, config: dict, state: dict, base, base_id: str, adapter_file: Path) -> None:
    """The serving adapter (weights/serving_adapter.py); without a base, the default family's names and
    an untied head are assumed and nothing is checked against the base."""
    from .weights.serving_adapter import AdapterConversionError, build_serving_adapter, write_serving_adapter

    base_config, shapes, label = base if base is not None else ({}, {"lm_head.weight": ()}, base_id)
    try:
        weights, peft_config = build_serving_adapter(state, config, base_config, shapes, base_model=base_id,
                                                     base_label=label, adapter_file=str(adapter_file),
                                                     check=base is not None)
    except AdapterConversionError as e:
        raise ExportError(str(e)) from None
    write_serving_adapter(folder, weights, peft_config)


def tinker_names(adapter: Path, work: Path) -> Path:
    """The adapter under Tinker's names, which the merge maps family by family: the engine's own adapters
    carry transformers' in-memory names, with a vision-language model's `model.language_model.` prefix
    that Tinker's names leave out (the merge would add it again). Other adapters are used as they are."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    with safe_open(str(adapter / ADAPTER_WEIGHTS), framework="pt") as f:
        if not any(".language_model." in k for k in f.keys()):  # noqa: SIM118
            return adapter
    renamed = work / "tinker-names"
    renamed.mkdir()
    state = load_file(str(adapter / ADAPTER_WEIGHTS))
    save_file({k.replace("model.language_model.", "model."): v for k, v in state.items()},
              str(renamed / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    shutil.copyfile(adapter / ADAPTER_CONFIG, renamed / ADAPTER_CONFIG)
    return renamed


def merge_folder(adapter: Path, base: Path, result: Path, *, strategy: str, dtype: str, **options) -> None:
    """A merge onto a base checkpoint folder, family by family (weights/merge.py)."""
    from .weights import MergeError, merge_adapter

    extra = {k: v for k, v in options.items() if k in ("quantize", "serving_format") and v is not None}
    try:
        merge_adapter(adapter, base, result, strategy=strategy, dtype=None if dtype == "auto" else dtype,
                      dequantize=bool(options.get("dequantize")), **extra)
    except MergeError as e:
        raise ExportError(str(e)) from None


def export(source: Path, *, from_archive: bool, fmt: str, out: Path, base_model: str | None = None,
           base_dir: str | None = None, base_model_id: str | None = None, dtype: str = "auto",
           strategy: str = "auto", dequantize: bool = False, quantize: str | None = None,
           serving_format: str | None = None, card: dict | None = None, with_card: bool | None = None) -> list:
    """Writes the export into `out` (atomically); returns the names of the files written. `card` fills
    the README.md model card (weights/model_card.py), written into merged exports, and into a PEFT
    adapter when `with_card` (a publish)."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not supported; use one of: {', '.join(FORMATS)}")
    if dtype not in DTYPES:
        raise ExportError(f"--dtype {dtype!r} is not supported; use one of: {', '.join(DTYPES)}")
    if strategy not in STRATEGIES:
        raise ExportError(f"--strategy {strategy!r} is not supported; use one of: {', '.join(STRATEGIES)}")
    if fmt == "peft" and (dequantize or quantize or serving_format):
        raise ExportError("--dequantize, --quantize and --serving-format apply to merged exports (--format merged)")
    out = out.absolute()
    check_out_dir(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".tmp-export-{out.name}-{uuid.uuid4().hex[:12]}"
    work.mkdir()
    try:
        if from_archive:
            if not source.is_file():
                raise ExportError(f"checkpoint archive {source} not found")
            folder = extract_archive(source, work / "source")
        else:
            if not source.is_dir():
                raise ExportError(f"checkpoint folder {source} not found")
            folder = adapter_folder(source, f"folder {source}")
        config, state = read_adapter(folder, f"checkpoint {source}")
        name = base_model or config.get("base_model_name_or_path")
        base_folder = base_checkpoint_folder(name, base_dir)
        spec = resolve_builtin(name) if base_folder is None else None
        if fmt == "merged" and spec is None and base_folder is None:
            raise ExportError(f"base model {name!r} is neither a built-in model nor a local Hugging Face folder; "
                              "a merged export needs its weights: pass --base-dir <folder of the base checkpoint>")
        base_id = base_model_id or (str(base_folder) if base_folder is not None else None) or name or "unknown"
        skeleton = load_base(spec, meta=True) if spec is not None else None
        result = work / "result"
        if fmt == "peft":
            result.mkdir()
            base = describe_folder(base_folder) if base_folder is not None else describe_builtin(spec, skeleton)
            write_serving_peft(result, config, state, base, base_id, folder / ADAPTER_WEIGHTS)
            if skeleton is not None and peft_loads(result):
                from safetensors.torch import load_file

                check_adapter_matches(skeleton, result, load_file(str(result / ADAPTER_WEIGHTS)))
        elif base_folder is not None:
            merge_folder(tinker_names(folder, work), base_folder, result, strategy=strategy, dtype=dtype,
                         dequantize=dequantize, quantize=quantize, serving_format=serving_format)
            if not (result / "generation_config.json").is_file():
                write_folder_generation_config(result, base_folder)
        else:
            if strategy == "shard" or dequantize or quantize or serving_format:
                raise ExportError(f"--strategy shard, --dequantize, --quantize and --serving-format apply to a base "
                                  f"checkpoint folder; built-in model {spec.name!r} is built in memory")
            peft_dir = work / "peft"
            peft_dir.mkdir()
            write_peft(peft_dir, config, state, base_id, skeleton)
            check_adapter_matches(skeleton, peft_dir, state)
            result.mkdir()
            write_merged(result, peft_dir, spec, pick_dtype(dtype, spec))
        if fmt == "merged" or with_card:
            from .weights.model_card import CardInfo, write_model_card

            write_model_card(result, CardInfo.from_json(card or {}, base_model_id or name or base_id))
        check_out_dir(out)  # again: something may have appeared meanwhile
        if out.is_dir():
            out.rmdir()
        os.rename(result, out)
        return sorted(p.name for p in out.iterdir())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tinker_engine.export", description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--archive", help="checkpoint archive (tar) from the archive download")
    src.add_argument("--adapter-dir", help="folder with adapter_config.json and adapter_model.safetensors")
    p.add_argument("--format", required=True, help="peft or merged")
    p.add_argument("--out", required=True, help="new or empty output directory")
    p.add_argument("--base-model", help="base model name (default: the adapter config's base_model_name_or_path)")
    p.add_argument("--base-dir", help="local Hugging Face folder of the base model (for bases the engine does not build)")
    p.add_argument("--base-model-id", help="base_model_name_or_path to write (default: the base model's name or folder)")
    p.add_argument("--dtype", default="auto", help="merged weights dtype: auto (the base's), float32, bfloat16, float16")
    p.add_argument("--strategy", default="auto", help="merge strategy for a base folder: auto, shard or full")
    p.add_argument("--dequantize", action="store_true", help="merged: write a quantized base's weights dequantized")
    p.add_argument("--quantize", help="merged: quantize the output's routed experts (experts-fp8; with --serving-format)")
    p.add_argument("--serving-format", help="merged: the serving stack whose quantization metadata to write (vllm)")
    p.add_argument("--card", help="JSON file of the model card's facts (weights/model_card.py)")
    p.add_argument("--publish", metavar="REPO", help="upload the export to this Hugging Face repo (HF_TOKEN)")
    p.add_argument("--public", action="store_true", help="with --publish: a public repo (default private)")
    p.add_argument("--commit-message", help="with --publish: the commit message")
    p.add_argument("--dry-run", action="store_true", help="with --publish: list what would be sent, send nothing")
    args = p.parse_args(argv)
    from .weights.publish import PublishError, check_repo_id, hub_token, plan_upload, upload

    try:
        card = None
        if args.card:
            try:
                card = json.loads(Path(args.card).read_text())
            except (OSError, ValueError) as e:
                raise ExportError(f"--card {args.card}: {e}") from None
        token = None
        if args.publish:
            check_repo_id(args.publish)
            card = {**(card or {}), "repo_id": args.publish}
            if not args.dry_run:
                token = hub_token()
        elif args.dry_run:
            raise ExportError("--dry-run goes with --publish REPO (it lists what the upload would send)")
        files = export(Path(args.archive or args.adapter_dir), from_archive=args.archive is not None, fmt=args.format,
                       out=Path(args.out), base_model=args.base_model, base_dir=args.base_dir,
                       base_model_id=args.base_model_id, dtype=args.dtype, strategy=args.strategy,
                       dequantize=args.dequantize, quantize=args.quantize, serving_format=args.serving_format, card=card,
                       with_card=bool(args.publish))
    except (ExportError, PublishError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out).absolute()
    result = {"out": str(out), "files": files}
    if args.publish:
        plan = plan_upload(out, args.publish, private=not args.public, commit_message=args.commit_message)
        result["publish"] = {**plan.to_json(), "dry_run": args.dry_run}
        if not args.dry_run:
            try:
                upload(plan, token)
            except Exception as e:  # noqa: BLE001 — the Hub's errors are many; the export itself is complete
                print(f"upload failed: the upload of {out} to {args.publish} failed: {e}; the export is complete "
                      "there, run the command again to retry", file=sys.stderr)
                return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
