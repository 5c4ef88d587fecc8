"""Parity of the serving adapter (`cookbook export --format peft`) with the reference's build_lora_adapter.

    python weights_adapter_cases.py build DIR      (engine venv) tiny seeded bases + Tinker-layout adapters
    python weights_adapter_cases.py reference DIR  (reference venv) tinker_cookbook.weights.build_lora_adapter
    python weights_adapter_cases.py ours DIR       (engine venv) tinker_engine.export, then compares; prints JSON

Each family gets DIR/<family>/base and DIR/<family>/adapter from the merge tests' builder
(engine/tests/weights_tiny.py: a 2-3 layer seeded model saved as the family's checkpoints are laid out, and a
seeded adapter in Tinker's names: `model.unembed_tokens`, GPT-OSS `.attn`, experts as one 3-D w1/w2/w3 pair,
Qwen3.5's in_proj_q/k/v, Nemotron's Mamba gate_proj/x_proj), and the outputs DIR/<family>/reference and
DIR/<family>/ours (or a *_error.txt with the refusal).
"""

import json
import sys
from pathlib import Path

# Every family the merge's fixtures build (engine/tests/weights_tiny.py): Qwen3 dense (untied and tied
# head), Qwen3 MoE (per-expert and fused experts), Qwen3.5 dense and MoE, GPT-OSS, DeepSeek V3, Kimi K2.5
# (its `language_model.model.*` names) and Nemotron H.
# and quantized bases from the quantized-merge tests (engine/tests/quantized_bases.py): GPT-OSS with MXFP4
# experts, Kimi K2 and K2.5 with INT4 pack-quantized experts.
PLAIN = ("qwen3", "qwen3_tied", "qwen3_moe", "qwen3_moe_fused", "qwen3_5", "qwen3_5_moe", "qwen3_5_moe_fused",
         "gpt_oss", "deepseek_v3", "kimi_k25", "nemotron_h")
QUANTIZED = ("gpt_oss_mxfp4", "kimi_k2_int4", "kimi_k25_int4")
FAMILIES = PLAIN + QUANTIZED


def build(root: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "engine" / "tests"))
    import quantized_bases as qb
    import weights_tiny

    for family in PLAIN:
        base = weights_tiny.build_base(family, root / family / "base")
        weights_tiny.build_adapter(family, base, root / family / "adapter")
    for family, base, adapter in (("gpt_oss_mxfp4", qb.gpt_oss_mxfp4, qb.gpt_oss_adapter),
                                  ("kimi_k2_int4", qb.kimi_int4, qb.deepseek_adapter),
                                  ("kimi_k25_int4", qb.kimi_k25_int4, qb.deepseek_adapter)):
        base(root / family / "base", root / family / "scratch")
        adapter(root / family / "adapter")


CARD = dict(base_model="Qwen/Qwen3-8B", datasets=["HuggingFaceH4/no_robots"], tags=["sft"], license="apache-2.0",
            language=["en"])


def _card_texts(root: Path, make) -> None:
    """The model card of an adapter folder and of a merged one (a folder without adapter_config.json)."""
    (root / "cards").mkdir(exist_ok=True)
    (root / "cards" / "merged-folder").mkdir(exist_ok=True)
    for kind, folder in (("adapter", root / "qwen3" / "adapter"), ("merged", root / "cards" / "merged-folder")):
        (root / "cards" / f"{make.__name__}-{kind}.md").write_text(make(folder))


def run_reference(root: Path) -> None:
    from tinker_cookbook.weights import ModelCardConfig, build_lora_adapter, generate_model_card

    def reference(folder):
        return str(generate_model_card(config=ModelCardConfig(**CARD), repo_id="me/tiny", model_path=str(folder)))

    _card_texts(root, reference)

    for family in FAMILIES:
        d = root / family
        try:
            build_lora_adapter(base_model=str((d / "base").resolve()), adapter_path=str(d / "adapter"),
                               output_path=str(d / "reference"))
        except Exception as e:  # noqa: BLE001 — a refusal is a result to compare
            (d / "reference_error.txt").write_text(f"{type(e).__name__}: {e}")


def run_ours_and_compare(root: Path) -> dict:
    import torch
    from safetensors.torch import load_file
    from tinker_engine.export import ExportError, export

    from tinker_engine.weights.model_card import CardInfo, model_card_text

    def ours(folder):
        return model_card_text(CardInfo(**CARD, repo_id="me/tiny"), folder)

    _card_texts(root, ours)
    # Equal but for the one line naming this project's version where the reference names its own.
    version_line = lambda t: "\n".join(l for l in t.split("\n") if not l.startswith(("- tinker-cookbook: ", "- durable-cookbook: ")))
    results = {"cards": {kind: {"equal": version_line((root / "cards" / f"reference-{kind}.md").read_text())
                                == version_line((root / "cards" / f"ours-{kind}.md").read_text()),
                                "ours": (root / "cards" / f"ours-{kind}.md").read_text()}
                         for kind in ("adapter", "merged")}}
    for family in FAMILIES:
        d = root / family
        try:
            export(d / "adapter", from_archive=False, fmt="peft", out=d / "ours", base_dir=str((d / "base").resolve()))
        except ExportError as e:
            (d / "ours_error.txt").write_text(str(e))
        r = {"reference_error": None, "ours_error": None}
        for side in ("reference", "ours"):
            err = d / f"{side}_error.txt"
            if err.exists():
                r[f"{side}_error"] = err.read_text()
        if r["reference_error"] is None and r["ours_error"] is None:
            ref, ours = load_file(str(d / "reference" / "adapter_model.safetensors")), load_file(str(d / "ours" / "adapter_model.safetensors"))
            r["keys"] = sorted(ours)
            r["same_keys"] = sorted(ref) == sorted(ours)
            r["unequal_tensors"] = [k for k in ref if k in ours and not (ref[k].dtype == ours[k].dtype and torch.equal(ref[k], ours[k]))]
            r["reference_config"] = json.loads((d / "reference" / "adapter_config.json").read_text())
            r["ours_config"] = json.loads((d / "ours" / "adapter_config.json").read_text())
            r["config_text_equal"] = (d / "reference" / "adapter_config.json").read_text() == (d / "ours" / "adapter_config.json").read_text()
            r["files"] = sorted(p.name for p in (d / "ours").iterdir())
        results[family] = r
    return results


if __name__ == "__main__":
    mode, root = sys.argv[1], Path(sys.argv[2])
    if mode == "build":
        build(root)
    elif mode == "reference":
        run_reference(root)
    elif mode == "ours":
        print(json.dumps(run_ours_and_compare(root)))
    else:
        raise SystemExit(f"unknown mode {mode}")
