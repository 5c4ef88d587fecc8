"""Parity of the per-family merge (tinker_engine.weights.merge_adapter) with the reference's build_hf_model.

    python weights_merge_cases.py build DIR      (engine venv) tiny seeded bases + Tinker-layout adapters
    python weights_merge_cases.py reference DIR  (reference venv) tinker_cookbook.weights.build_hf_model, shard strategy
    python weights_merge_cases.py ours DIR       (engine venv) merge_adapter, then compares; prints JSON

The bases and adapters are engine/tests/weights_tiny.py's (every family the merge supports, bfloat16 weights so
that the cast back after the float32 sum is compared too). Each family gets DIR/<family>/{base,adapter} and
the outputs DIR/<family>/{reference,ours} (or reference_error.txt / ours_error.txt).

Compared: every tensor of the two outputs, by name, bit for bit (and, where not equal, the largest distance in
units in the last place of the tensor's dtype). One documented difference: a head LoRA on a tied head
(qwen3_tied, qwen3_5) — the reference adds it to the shared embedding, the merge here writes an untied head
(weights/plan.py); there the check is that our head equals the reference's embedding and our embedding the base's.
"""

import json
import sys
import traceback
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
FAMILIES = ("qwen3", "qwen3_tied", "qwen3_moe", "qwen3_moe_fused", "qwen3_5", "qwen3_5_moe", "qwen3_5_moe_fused",
            "gpt_oss", "deepseek_v3", "kimi_k25", "nemotron_h")
TIED_HEADS = {"qwen3_tied": ("model.embed_tokens.weight", "lm_head.weight"),
              "qwen3_5": ("model.language_model.embed_tokens.weight", "lm_head.weight")}


def build(root: Path) -> None:
    import torch

    sys.path[:0] = [str(ENGINE / "tests"), str(ENGINE)]
    import weights_tiny as wt

    for family in FAMILIES:
        base = wt.build_base(family, root / family / "base", dtype=torch.bfloat16)
        wt.build_adapter(family, base, root / family / "adapter")


def run_reference(root: Path) -> None:
    import logging

    from tinker_cookbook.weights import build_hf_model

    logging.disable(logging.WARNING)  # its note that the tiny bases have no tokenizer files
    for family in FAMILIES:
        folder = root / family
        try:
            build_hf_model(base_model=str(folder / "base"), adapter_path=str(folder / "adapter"),
                           output_path=str(folder / "reference"), merge_strategy="shard")
        except Exception as e:  # noqa: BLE001 — the refusal is the result
            (folder / "reference_error.txt").write_text(f"{type(e).__name__}: {e}\n{traceback.format_exc()}")


def tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    out = {}
    for shard in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(shard)))
    return out


def ulps(a, b) -> int:
    import torch

    if a.dtype != b.dtype or a.shape != b.shape:
        return -1
    if not a.is_floating_point():
        return int((a.long() - b.long()).abs().max()) if a.numel() else 0
    as_int = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}[a.dtype]
    x, y = a.contiguous().view(as_int).long(), b.contiguous().view(as_int).long()
    # Sign-magnitude to a monotone integer line, so that the distance across zero counts too.
    x = torch.where(x < 0, -(x & ~(-1 << (8 * a.element_size() - 1))), x)
    y = torch.where(y < 0, -(y & ~(-1 << (8 * b.element_size() - 1))), y)
    return int((x - y).abs().max()) if x.numel() else 0


def compare(family: str, root: Path) -> dict:
    import torch

    folder = root / family
    result = {"reference_error": None, "ours_error": None}
    if (folder / "reference_error.txt").is_file():
        result["reference_error"] = (folder / "reference_error.txt").read_text().splitlines()[0]
    try:
        from tinker_engine.weights import merge_adapter

        result["summary"] = merge_adapter(folder / "adapter", folder / "base", folder / "ours", strategy="shard")
    except Exception as e:  # noqa: BLE001
        result["ours_error"] = f"{type(e).__name__}: {e}"
    if result["reference_error"] or result["ours_error"]:
        return result
    ref, ours, base = tensors(folder / "reference"), tensors(folder / "ours"), tensors(folder / "base")
    if family in TIED_HEADS:
        embed, head = TIED_HEADS[family]
        result["tied_head"] = {"reference_has_head": head in ref, "ours_head_is_reference_embedding": torch.equal(ours[head], ref[embed]),
                               "ours_embedding_is_base": torch.equal(ours[embed], base[embed])}
        ref = {**ref, embed: base[embed]}
        ours = {k: v for k, v in ours.items() if k != head}
    result["same_keys"] = set(ref) == set(ours)
    result["only_reference"] = sorted(set(ref) - set(ours))[:5]
    result["only_ours"] = sorted(set(ours) - set(ref))[:5]
    result["tensors"] = len(ours)
    result["changed_by_merge"] = sum(1 for k in ours if k in base and not torch.equal(ours[k], base[k]))
    unequal = {k: ulps(ref[k], ours[k]) for k in sorted(set(ref) & set(ours)) if not torch.equal(ref[k], ours[k])}
    result["unequal_tensors"] = sorted(unequal)
    result["max_ulps"] = max(unequal.values(), default=0)
    return result


def run_ours_and_compare(root: Path) -> dict:
    sys.path.insert(0, str(ENGINE))
    return {family: compare(family, root) for family in FAMILIES}


if __name__ == "__main__":
    mode, root = sys.argv[1], Path(sys.argv[2])
    if mode == "build":
        build(root)
    elif mode == "reference":
        run_reference(root)
    elif mode == "ours":
        print(json.dumps(run_ours_and_compare(root)))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
