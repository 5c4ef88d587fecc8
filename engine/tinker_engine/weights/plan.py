"""From adapter tensors to merge operations on named checkpoint tensors, and the arithmetic that applies them.

Numbers follow the reference (tinker_cookbook.weights._merge*): B is cast to float32 and scaled by
lora_alpha / r before the product; a 2-D delta is B @ A; a fused 3-D expert delta is
bmm(Aᵀ, Bᵀ) of shape (experts, in, out), transposed where the checkpoint keeps (experts, out, in); the sum
is taken in float32 and cast back once per tensor.

One deliberate difference: a head LoRA on a model whose head is tied to its input embedding (no head
tensor in the checkpoint) gets its own head tensor, embedding + delta, and config.json's
tie_word_embeddings becomes false, so the embedding stays what the model was trained with. The reference
adds that delta to the shared embedding instead, which changes the input side too.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .errors import MergeError
from .profiles import Profile

LORA_A, LORA_B = ".lora_A.weight", ".lora_B.weight"
ADAPTER_PREFIX = "base_model.model."


@dataclass
class Op:
    """scale·B·A added to one tensor (or to rows / one half of it)."""
    target: str
    lora_a: torch.Tensor  # (r, in), or (experts, r, in) for a fused expert tensor
    lora_b: torch.Tensor  # (out, r), or (experts, out, r); already float32 and scaled
    adapter_name: str
    row_start: int | None = None  # a row block of a fused projection (in_proj_qkv, in_proj)
    expert_3d: bool = False
    fused_half: int | None = None  # 0 gate, 1 up of a fused gate_up_proj
    interleaved: bool = False  # GPT-OSS: gate/up alternate along the last axis
    square_axis: int = 1  # the [gate | up] axis when the target's shape fits both (Profile.gate_up_axis)
    copy_from: str | None = None  # untie: the new tensor starts as a copy of this one

    def delta(self) -> torch.Tensor:
        if self.expert_3d:
            return torch.bmm(self.lora_a.transpose(-1, -2), self.lora_b.transpose(-1, -2))
        return self.lora_b @ self.lora_a


def scaling(config: dict, where: str) -> float:
    for key in ("lora_alpha", "r"):
        if not isinstance(config.get(key), (int, float)) or isinstance(config.get(key), bool):
            raise MergeError(f"{where}: {key!r} missing or not a number")
    if config["r"] <= 0:
        raise MergeError(f"{where}: r must be positive, got {config['r']}")
    return config["lora_alpha"] / config["r"]


def adapter_pairs(state: dict[str, torch.Tensor], where: str) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(module name, A, B) for every LoRA pair of the adapter, in name order."""
    pairs = []
    for key in sorted(state):
        if key.endswith(LORA_A):
            module = key[: -len(LORA_A)]
            if module + LORA_B not in state:
                raise MergeError(f"{where}: {key} has no matching {module + LORA_B}")
            pairs.append((module, state[key], state[module + LORA_B]))
        elif not key.endswith(LORA_B):
            raise MergeError(f"{where}: unexpected tensor {key!r} (a LoRA adapter holds only …lora_A/lora_B.weight)")
        elif key[: -len(LORA_B)] + LORA_A not in state:
            raise MergeError(f"{where}: {key} has no matching lora_A")
    if not pairs:
        raise MergeError(f"{where}: no LoRA tensors")
    return pairs


def _remap(name: str, profile: Profile) -> str:
    for old, new in profile.prefix_remaps:
        name = name.replace(old, new)
    return name


def _is_head(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in ("unembed_tokens", "lm_head")


class Planner:
    def __init__(self, profile: Profile, shapes: dict[str, tuple[int, ...]], base: str):
        self.profile, self.shapes, self.base = profile, shapes, base
        self.ops: dict[str, list[Op]] = {}

    def missing(self, adapter_name: str, key: str) -> MergeError:
        return MergeError(f"adapter tensor {adapter_name} maps to {key!r}, which base {self.base} does not hold "
                          f"(family {self.profile.family}): the adapter was trained on another base model")

    def add(self, op: Op) -> None:
        self.ops.setdefault(op.target, []).append(op)

    def plan(self, pairs, scale: float) -> dict[str, list[Op]]:
        self.rows = {module: b.shape[0] for module, _, b in pairs}  # out rows of each adapted module
        for module, a, b in pairs:
            name = module.removeprefix(ADAPTER_PREFIX)
            a, b = a.float(), b.float() * scale
            if _is_head(name):
                self.head(module, a, b)
            elif ".experts." in name:
                self.experts(module, _remap(name, self.profile), a, b)
            elif not self.fused_projection(module, _remap(name, self.profile), a, b):
                key = _remap(name, self.profile) + ".weight"
                if key not in self.shapes:
                    raise self.missing(module, key)
                self.add(Op(key, a, b, module))
        self.check_shapes()
        return self.ops

    def head(self, module: str, a, b) -> None:
        head, embed = self.profile.head_key, self.profile.embed_key
        if head in self.shapes:
            self.add(Op(head, a, b, module))
        elif embed in self.shapes:
            self.shapes[head] = self.shapes[embed]
            self.add(Op(head, a, b, module, copy_from=embed))
        else:
            raise self.missing(module, head)

    def fused_projection(self, module: str, name: str, a, b) -> bool:
        """A part of a projection the checkpoint stores fused: its rows start after the parts before it."""
        prefix, _, leaf = name.rpartition(".")
        for fused, parts in self.profile.fused_projections:
            if leaf not in parts or f"{prefix}.{fused}.weight" not in self.shapes:
                continue
            siblings = [f"{module.rpartition('.')[0]}.{p}" for p in parts[: parts.index(leaf)]]
            if any(s not in self.rows for s in siblings):
                raise MergeError(f"adapter tensor {module}: the fused {fused} needs LoRA pairs for all of "
                                 f"{', '.join(parts)} in the same layer to place its rows")
            self.add(Op(f"{prefix}.{fused}.weight", a, b, module, row_start=sum(self.rows[s] for s in siblings)))
            return True
        return False

    def experts(self, module: str, name: str, a, b) -> None:
        if a.numel() == 0 and b.numel() == 0:
            return  # a placeholder for a projection the family has not (Nemotron's w3)
        if a.ndim != 3 or b.ndim != 3:
            raise MergeError(f"adapter tensor {module}: expert LoRA must be 3-D (experts, r, in) / (experts, out, r), "
                             f"got {tuple(a.shape)} / {tuple(b.shape)}")
        a, b = broadcast_experts(a, b, module)
        prefix, _, proj = name.rpartition(".")  # …mlp.experts, w1
        hf = dict(self.profile.expert_names).get(proj)
        if hf is None:
            raise MergeError(f"adapter tensor {module}: unknown expert projection {proj!r} for family "
                             f"{self.profile.family} (expected {', '.join(p for p, _ in self.profile.expert_names)})")
        if self.profile.expert_layout == "separate":
            for e in range(a.shape[0]):
                key = f"{prefix}.{e}.{hf}.weight"
                if key not in self.shapes:
                    raise self.missing(module, key)
                self.add(Op(key, a[e], b[e], module))
            return
        half = {"gate_proj": 0, "up_proj": 1}.get(hf)
        key = f"{prefix}.gate_up_proj" if half is not None else f"{prefix}.{hf}"
        if key not in self.shapes:
            raise self.missing(module, key)
        self.add(Op(key, a, b, module, expert_3d=True, fused_half=half,
                    interleaved=self.profile.expert_layout == "fused_interleaved", square_axis=self.profile.gate_up_axis))

    def check_shapes(self) -> None:
        for key, ops in self.ops.items():
            for op in ops:
                check_op_shape(op, self.shapes[key])


def broadcast_experts(a: torch.Tensor, b: torch.Tensor, module: str):
    """A LoRA factor shared by all experts is stored once (leading dim 1): repeat it for each expert."""
    if a.shape[0] == b.shape[0]:
        if a.shape[0] == 1:
            raise MergeError(f"adapter tensor {module}: both expert factors have one expert; cannot tell the count")
        return a, b
    if a.shape[0] == 1:
        return a.expand(b.shape[0], -1, -1), b
    if b.shape[0] == 1:
        return a, b.expand(a.shape[0], -1, -1)
    raise MergeError(f"adapter tensor {module}: lora_A has {a.shape[0]} experts, lora_B {b.shape[0]}")


def _fused_axis(target: tuple, n: int, d_in: int, d_out: int, key: str, square_axis: int = 1) -> int:
    last = target[1] == d_in and target[2] == 2 * d_out  # (experts, in, [gate | up])
    middle = target[2] == d_in and target[1] == 2 * d_out  # (experts, [gate | up], in)
    if last and middle:
        return square_axis
    if last or middle:
        return 2 if last else 1
    raise MergeError(f"{key}: shape {target} is not a gate/up pair for a delta of (experts={n}, in={d_in}, out={d_out})")


def check_op_shape(op: Op, target: tuple[int, ...]) -> None:
    if op.expert_3d:
        n, _, d_in = op.lora_a.shape
        d_out = op.lora_b.shape[1]
        ok = len(target) == 3 and target[0] == n
        if ok and op.fused_half is not None:
            if op.interleaved:
                ok = target[1] == d_in and target[2] == 2 * d_out
            else:
                _fused_axis(target, n, d_in, d_out, op.target, op.square_axis)
        elif ok:
            ok = tuple(target[1:]) in ((d_in, d_out), (d_out, d_in))
        if not ok:
            raise MergeError(f"adapter tensor {op.adapter_name}: delta (experts={n}, in={d_in}, out={d_out}) does not "
                             f"fit {op.target} of shape {target}")
        return
    shape = (op.lora_b.shape[0], op.lora_a.shape[1])
    if op.row_start is not None:
        fits = len(target) == 2 and shape[1] == target[1] and op.row_start + shape[0] <= target[0]
    else:
        fits = tuple(target) == shape
    if not fits:
        where = f" rows {op.row_start}:{op.row_start + shape[0]}" if op.row_start is not None else ""
        raise MergeError(f"adapter tensor {op.adapter_name}: delta of shape {shape} does not fit {op.target}{where} "
                         f"of shape {tuple(target)}: the adapter was trained on another base model")


def apply_ops(value: torch.Tensor, ops: list[Op]) -> torch.Tensor:
    """Adds every op's delta to `value` (float32, modified in place) and returns it."""
    for op in ops:
        delta = op.delta()
        if op.expert_3d and op.fused_half is not None:
            if op.interleaved:
                view = value[:, :, op.fused_half::2]
            elif _fused_axis(tuple(value.shape), *delta.shape, op.target, op.square_axis) == 2:
                width = value.shape[2] // 2
                view = value[:, :, op.fused_half * width:(op.fused_half + 1) * width]
            else:
                delta = delta.transpose(-1, -2)
                width = value.shape[1] // 2
                view = value[:, op.fused_half * width:(op.fused_half + 1) * width, :]
        elif op.expert_3d:
            view = value
            if tuple(delta.shape) != tuple(value.shape):
                delta = delta.transpose(-1, -2)
        elif op.row_start is not None:
            view = value[op.row_start:op.row_start + delta.shape[0]]
        else:
            view = value
        view += delta
    return value
