"""Exports a LoRA checkpoint as a PEFT adapter folder or as a merged Hugging Face checkpoint.

    python -m tinker_engine.export (--archive FILE.tar | --adapter-dir DIR) --format peft|merged
        --out DIR [--base-model NAME] [--base-dir HF_DIR] [--base-model-id NAME] [--dtype auto|float32|bfloat16|float16]

The source is a checkpoint archive (the tar of the protocol's archive download) or a folder holding
`adapter_config.json` and `adapter_model.safetensors` (the layout of every engine and hosted Tinker
checkpoint). The base model is the engine's: a built-in tiny model (generated from its fixed seed,
exactly as the engine builds it) or a local Hugging Face checkpoint folder; `--base-dir` names the
folder of any other base (e.g. a download of the hosted service's base model).

peft:   adapter_model.safetensors (peft's key names) and adapter_config.json with
        base_model_name_or_path, r, lora_alpha and target_modules (short module names where they
        select exactly the trained layers).
merged: model.safetensors (base + scale·B·A folded into each adapted Linear; a LoRA on a tied
        unembedding unties it), config.json, generation_config.json and the tokenizer files.

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
    for key in ("r", "lora_alpha", "target_modules"):
        if key not in config:
            raise ExportError(f"{config_file}: no {key!r} (not a LoRA adapter config)")
    try:
        state = load_file(str(weights_file))
    except Exception as e:  # noqa: BLE001 — safetensors raises its own error types
        raise ExportError(f"{weights_file}: not readable safetensors: {e}") from None
    if not state or not all(".lora_A." in k or ".lora_B." in k for k in state):
        raise ExportError(f"{weights_file}: expected LoRA tensors (…lora_A.weight / …lora_B.weight)")
    return config, state


def resolve_base(name: str | None, base_dir: str | None):
    """The engine's BaseModelSpec of the base model, or None when it is not available here."""
    from .base_models import BUILTIN_MODELS, _checkpoint_spec
    from .errors import EngineError

    try:
        if base_dir:
            directory = Path(base_dir)
            if not directory.is_dir():
                raise ExportError(f"--base-dir {base_dir}: no such directory")
            return _checkpoint_spec(name or str(directory), directory.resolve())
        if not name:
            return None
        key = name.split(":peft:")[0]
        if key in BUILTIN_MODELS:
            spec = BUILTIN_MODELS[key]()
            spec.name = key
            return spec
        if os.path.isdir(key):
            return _checkpoint_spec(key, Path(key).resolve())
        return None
    except EngineError as e:
        raise ExportError(e.detail) from None


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
    targets = config["target_modules"]
    targets = [targets] if isinstance(targets, str) else list(targets)
    out["target_modules"] = short_targets(skeleton, targets) if skeleton is not None else sorted(set(targets))
    save_file({k: v.contiguous() for k, v in state.items()}, str(folder / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    (folder / ADAPTER_CONFIG).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")


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
    # Generation settings: the base checkpoint's own, else the engine's stop tokens of the model.
    if spec.checkpoint_dir and (Path(spec.checkpoint_dir) / "generation_config.json").is_file():
        shutil.copyfile(Path(spec.checkpoint_dir) / "generation_config.json", folder / "generation_config.json")
    else:
        gen = {"eos_token_id": spec.eos_token_ids}
        for key in ("bos_token_id", "pad_token_id"):
            value = getattr(spec.config, key, None)
            if value is not None:
                gen[key] = value
        (folder / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
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


def export(source: Path, *, from_archive: bool, fmt: str, out: Path, base_model: str | None = None,
           base_dir: str | None = None, base_model_id: str | None = None, dtype: str = "auto") -> list:
    """Writes the export into `out` (atomically); returns the names of the files written."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not supported; use one of: {', '.join(FORMATS)}")
    if dtype not in DTYPES:
        raise ExportError(f"--dtype {dtype!r} is not supported; use one of: {', '.join(DTYPES)}")
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
        spec = resolve_base(name, base_dir)
        if fmt == "merged" and spec is None:
            raise ExportError(f"base model {name!r} is neither a built-in model nor a local Hugging Face folder; "
                              "a merged export needs its weights: pass --base-dir <folder of the base checkpoint>")
        base_id = base_model_id or (spec.checkpoint_dir if spec is not None and spec.checkpoint_dir else None) or name or "unknown"
        skeleton = load_base(spec, meta=True) if spec is not None else None
        peft_dir = (work / "result") if fmt == "peft" else (work / "peft")
        peft_dir.mkdir()
        write_peft(peft_dir, config, state, base_id, skeleton)
        if skeleton is not None:
            check_adapter_matches(skeleton, peft_dir, state)
        if fmt == "merged":
            result = work / "result"
            result.mkdir()
            write_merged(result, peft_dir, spec, pick_dtype(dtype, spec))
        else:
            result = peft_dir
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
    args = p.parse_args(argv)
    try:
        files = export(Path(args.archive or args.adapter_dir), from_archive=args.archive is not None, fmt=args.format,
                       out=Path(args.out), base_model=args.base_model, base_dir=args.base_dir,
                       base_model_id=args.base_model_id, dtype=args.dtype)
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({"out": str(Path(args.out).absolute()), "files": files}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
