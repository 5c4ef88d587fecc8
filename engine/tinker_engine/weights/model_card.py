"""The README.md model card of an exported folder, as the reference's `generate_model_card` writes it
(YAML front matter from huggingface_hub's ModelCardData, then title, description, model details, usage and
framework versions), plus, when the checkpoint comes from a run of this project, a "Training" section with
what the run store says: the recipe (run kind and its main settings), the data, the checkpoint and the
run's last metrics.

Card input (a JSON object, written by `cookbook export` from the run's store):
    {"base_model": str, "datasets": [str], "tags": [str], "license": str|null, "language": [str],
     "repo_id": str|null, "cookbook_version": str,
     "run": {"id", "kind", "log_path", "checkpoint", "recipe": {k: v}, "data": [str], "metrics": {k: v},
             "step": int|null} | null}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class CardInfo:
    base_model: str
    datasets: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    license: str | None = None
    language: list[str] = field(default_factory=list)
    repo_id: str | None = None
    cookbook_version: str = "unknown"
    run: dict | None = None

    @staticmethod
    def from_json(data: dict, base_model: str) -> "CardInfo":
        known = {k: data[k] for k in ("datasets", "tags", "license", "language", "repo_id", "cookbook_version", "run")
                 if data.get(k) is not None}
        return CardInfo(base_model=data.get("base_model") or base_model, **known)


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def _usage(base_model: str, repo_id: str, is_adapter: bool) -> str:
    if is_adapter:
        return ("from peft import PeftModel\nfrom transformers import AutoModelForCausalLM\n\n"
                f'base = AutoModelForCausalLM.from_pretrained("{base_model}")\n'
                f'model = PeftModel.from_pretrained(base, "{repo_id}")')
    return f'from transformers import AutoModelForCausalLM\n\nmodel = AutoModelForCausalLM.from_pretrained("{repo_id}")'


def _value(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def _training_section(run: dict) -> str:
    lines = ["## Training", ""]
    if run.get("kind"):
        lines.append(f"- **Recipe:** {run['kind']} (durable-cookbook run `{run.get('id', '?')}`)")
    for name in run.get("data") or []:
        lines.append(f"- **Data:** {name}")
    if run.get("checkpoint"):
        lines.append(f"- **Checkpoint:** `{run['checkpoint']}`")
    recipe = run.get("recipe") or {}
    if recipe:
        lines += ["", "Settings:", ""] + [f"- `{k}`: {_value(v)}" for k, v in recipe.items()]
    metrics = run.get("metrics") or {}
    if metrics:
        step = run.get("step")
        lines += ["", f"Metrics{f' at step {step}' if step is not None else ''}:", "", "| metric | value |", "|---|---|"]
        lines += [f"| {k} | {_value(v)} |" for k, v in metrics.items()]
    return "\n".join(lines) + "\n\n"


def model_card_text(info: CardInfo, model_path: Path | None) -> str:
    from huggingface_hub import ModelCard, ModelCardData

    is_adapter = model_path is not None and (model_path / "adapter_config.json").exists()
    tags = ["tinker", "tinker-cookbook"] + (["peft", "lora"] if is_adapter else []) + list(info.tags)
    data = ModelCardData(base_model=info.base_model, library_name="peft" if is_adapter else "transformers",
                         pipeline_tag="text-generation", tags=tags)
    if info.datasets:
        data.datasets = info.datasets
    if info.license:
        data.license = info.license
    if info.language:
        data.language = info.language
    card = ModelCard.from_template(
        data,
        template_str=_TEMPLATE,
        title=info.repo_id or info.base_model,
        description=(f"This model was fine-tuned from [{info.base_model}](https://huggingface.co/{info.base_model}) "
                     "using [Tinker](https://thinkingmachines.ai/tinker) and "
                     "[tinker-cookbook](https://github.com/thinking-machines-lab/tinker-cookbook)."),
        base_model=info.base_model,
        format_label="LoRA adapter (PEFT)" if is_adapter else "Merged model",
        usage_snippet=_usage(info.base_model, info.repo_id or "your-repo-id", is_adapter),
        training=_training_section(info.run) if info.run else "",
        cookbook_version=info.cookbook_version,
        transformers_version=_version("transformers"),
        torch_version=_version("torch"),
    )
    return str(card)


def write_model_card(folder: Path, info: CardInfo) -> None:
    (folder / "README.md").write_text(model_card_text(info, folder))


# The reference's template, with the Training section between usage and versions, and this project's
# version in place of tinker-cookbook's.
_TEMPLATE = """\
---
{{ card_data }}
---

# {{ title }}

{{ description }}

## Model details

- **Base model:** [{{ base_model }}](https://huggingface.co/{{ base_model }})
- **Format:** {{ format_label }}

## Usage

```python
{{ usage_snippet }}
```

{{ training }}## Framework versions

- durable-cookbook: {{ cookbook_version }}
- transformers: {{ transformers_version }}
- torch: {{ torch_version }}
"""
