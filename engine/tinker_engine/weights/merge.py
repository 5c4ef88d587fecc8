"""merge_adapter: a Tinker LoRA adapter folded into a Hugging Face base checkpoint, written as a new folder.

Strategies:
  full   every shard of the base is loaded, all deltas added, every shard written.
  shard  one base shard at a time: load it, add the deltas whose tensors it holds, write it, drop it.
         Peak memory: about the largest shard + the adapter + a float32 copy of the tensor being merged
         (each input tensor is dropped once its output exists).
  auto   shard when the base's safetensors exceed AUTO_SHARD_SHARE of the memory available now, else full.
Both write the same tensors under the same shard names as the base (its index rewritten), so the output
loads wherever the base did. Each tensor keeps its on-disk dtype unless `dtype` names one for every
plain floating tensor (quantized tensors keep their format; see codecs.py).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import torch

from .checkpoint import INDEX, SIDE_FILES, BaseCheckpoint, read_json
from .codecs import Codec, MergeOptions, codecs_for
from .errors import MergeError
from .plan import Op, Planner, adapter_pairs, apply_ops, scaling
from .profiles import Profile, detect_profile

STRATEGIES = ("auto", "shard", "full")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# `auto` merges in memory only while the base takes at most this share of the memory available: the
# full strategy holds every tensor at once, plus float32 copies of the tensors being merged.
AUTO_SHARD_SHARE = 0.5
ADAPTER_CONFIG, ADAPTER_WEIGHTS = "adapter_config.json", "adapter_model.safetensors"


def available_memory() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def load_adapter(folder: Path) -> tuple[dict, dict]:
    from safetensors.torch import load_file

    config = read_json(folder / ADAPTER_CONFIG, "adapter config")
    weights = folder / ADAPTER_WEIGHTS
    if not weights.is_file():
        raise MergeError(f"adapter weights {weights} not found")
    try:
        return config, load_file(str(weights))
    except Exception as e:  # noqa: BLE001 — safetensors raises its own error types
        raise MergeError(f"{weights}: not readable safetensors ({e})") from None


class Merge:
    """One merge: the plan, then the tensors of each shard through their codecs."""

    def __init__(self, base: BaseCheckpoint, profile: Profile, ops: dict[str, list[Op]], codecs: list[Codec],
                 logical: dict[str, Codec], options: MergeOptions):
        self.base, self.profile, self.ops, self.codecs, self.options = base, profile, ops, codecs, options
        self.logical = logical  # logical weight -> its codec
        self.part_owner = {p: name for name, c in logical.items() for p in c.parts(name)}
        # Tensors derived from another (an untied head starts as a copy of the embedding), by source.
        self.derived: dict[str, list[str]] = {}
        for target, target_ops in ops.items():
            if target_ops[0].copy_from:
                self.derived.setdefault(target_ops[0].copy_from, []).append(target)
        self.done: set[str] = set()  # logical weights already written
        self.applied = 0
        # Logical weights already re-encoded: their parts in later shards were written with them.
        self.encoded: set[str] = set()

    def plain(self, key: str, tensor: torch.Tensor) -> torch.Tensor:
        ops = self.ops.pop(key, None)
        out_dtype = self.options.dtype if self.options.dtype is not None and tensor.is_floating_point() else tensor.dtype
        if not ops:
            return tensor.to(out_dtype)
        self.applied += len(ops)
        return apply_ops(tensor.float(), ops).to(out_dtype)

    def coded(self, logical: str, tensors: dict) -> dict:
        """The stored tensors of one logical weight, merged; its parts in other shards are read from there and
        written with this shard (`done` keeps them from being written twice)."""
        codec = self.logical[logical]
        names = codec.parts(logical)
        ops = self.ops.pop(logical, None)
        if not ops and not codec.rewrite_all:
            return {p: tensors.pop(p) for p in names if p in tensors}  # unchanged, each part in its own shard
        self.done.add(logical)
        parts = {p: tensors.pop(p) if p in tensors else self.base.load_tensor(p) for p in names}
        value = codec.decode(logical, parts)
        if ops:
            self.applied += len(ops)
            apply_ops(value, ops)
        return codec.encode(logical, value, parts)

    def process(self, tensors: dict) -> dict:
        """The output tensors for one shard's tensors. Each input tensor is dropped as soon as its output
        exists, so a shard's input and output are not both held whole."""
        out: dict[str, torch.Tensor] = {}
        for key in list(tensors):
            if key not in tensors:
                continue  # taken with its logical weight
            logical = self.part_owner.get(key)
            if logical is not None:
                if logical not in self.done:
                    out.update(self.coded(logical, tensors))
                else:
                    tensors.pop(key)
                continue
            value = tensors.pop(key)
            for target in self.derived.get(key, ()):  # an untied head starts as a copy of the embedding
                out[target] = self.plain(target, value.clone())
            out[key] = self.plain(key, value)
        return out


def merge_adapter(adapter_dir, base_dir, out_dir, *, strategy: str = "auto", dtype: str | None = None,
                  dequantize: bool = False, **codec_options) -> dict:
    """Merges the adapter in `adapter_dir` onto the base checkpoint folder `base_dir` into the new folder
    `out_dir` (written under a temporary name and renamed into place; a failure leaves nothing).
    Returns a summary: family, strategy, ops applied, files written."""
    if strategy not in STRATEGIES:
        raise MergeError(f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    if dtype not in (None, "auto", *DTYPES):
        raise MergeError(f"dtype {dtype!r} is not one of auto, {', '.join(DTYPES)}")
    out = Path(out_dir).absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MergeError(f"output {out} exists and is not an empty directory")
    adapter_config, adapter_state = load_adapter(Path(adapter_dir))
    base = BaseCheckpoint(Path(base_dir))
    options = MergeOptions(dtype=DTYPES.get(dtype or "auto"), dequantize=dequantize, **codec_options)
    codecs = codecs_for(base.config, options)
    shapes, logical = dict(base.shapes), {}
    for codec in codecs:
        for name, shape in codec.logical_shapes(base.shapes).items():
            for part in codec.parts(name):
                shapes.pop(part, None)
            shapes[name], logical[name] = shape, codec
    profile = detect_profile(base.config, set(shapes))
    planner = Planner(profile, shapes, str(base.folder))
    ops = planner.plan(adapter_pairs(adapter_state, str(Path(adapter_dir) / ADAPTER_WEIGHTS)),
                       scaling(adapter_config, str(Path(adapter_dir) / ADAPTER_CONFIG)))
    n_ops = sum(len(v) for v in ops.values())
    untied = any(o.copy_from for v in ops.values() for o in v)
    if strategy == "auto":
        strategy = "shard" if base.size > AUTO_SHARD_SHARE * available_memory() else "full"
    merge = Merge(base, profile, ops, codecs, logical, options)

    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".tmp-merge-{out.name}-{uuid.uuid4().hex[:12]}"
    work.mkdir()
    try:
        weight_map = write_shards(merge, base, work, strategy)
        if merge.ops:
            raise MergeError(f"base {base.folder}: no shard holds {sorted(merge.ops)[:3]}")
        write_side_files(base, work, codecs, untied, dtype)
        if len(base.shards) > 1 or (base.folder / INDEX).is_file():
            total = sum(_tensor_bytes(work, set(weight_map.values())))
            (work / INDEX).write_text(json.dumps({"metadata": {"total_size": total},
                                                   "weight_map": dict(sorted(weight_map.items()))}, indent=2) + "\n")
        if out.exists():
            out.rmdir()
        os.rename(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {"family": profile.family, "expert_layout": profile.expert_layout, "strategy": strategy,
            "ops": n_ops, "untied_head": untied, "files": sorted(p.name for p in out.iterdir())}


def write_shards(merge: Merge, base: BaseCheckpoint, work: Path, strategy: str) -> dict[str, str]:
    from safetensors.torch import save_file

    weight_map: dict[str, str] = {}
    if strategy == "full":
        loaded = {shard: base.load_shard(shard) for shard in base.shards}
        results = {shard: merge.process(tensors) for shard, tensors in loaded.items()}
    else:
        results = None
    for shard in base.shards:
        tensors = results.pop(shard) if results is not None else merge.process(base.load_shard(shard))
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(work / shard), metadata={"format": "pt"})
        weight_map.update({k: shard for k in tensors})
        del tensors
    return weight_map


def write_side_files(base: BaseCheckpoint, work: Path, codecs: list[Codec], untied: bool, dtype: str | None) -> None:
    config = json.loads(json.dumps(base.config))
    if untied:  # the head now has its own tensor
        for holder in (config, config.get("text_config")):
            if isinstance(holder, dict):
                holder["tie_word_embeddings"] = False
    if dtype not in (None, "auto"):
        for holder in (config, config.get("text_config")):
            if isinstance(holder, dict):
                for key in ("dtype", "torch_dtype"):
                    if key in holder or (key == "dtype" and holder is config):
                        holder[key] = dtype
    for codec in codecs:
        config = codec.finish_config(config)
    (work / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in SIDE_FILES:
        if (base.folder / name).is_file():
            shutil.copyfile(base.folder / name, work / name)
    for code in sorted(base.folder.glob("*.py")):  # a trust_remote_code model's own classes
        shutil.copyfile(code, work / code.name)


def _tensor_bytes(folder: Path, shards: set[str]):
    from safetensors import safe_open

    sizes = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
             "F8_E4M3": 1, "F8_E5M2": 1, "BOOL": 1}
    for shard in shards:
        with safe_open(str(folder / shard), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118
                piece = f.get_slice(key)
                n = 1
                for d in piece.get_shape():
                    n *= d
                yield n * sizes.get(piece.get_dtype(), 4)
