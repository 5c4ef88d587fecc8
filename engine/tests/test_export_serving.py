"""`python -m tinker_engine.export` on Hugging Face base folders: the serving adapter and the merged folder
(with its model card), bad input refused as one stderr line with exit status 2 and nothing left behind,
and `--publish` up to the Hub call (HfApi replaced by a recorder at that boundary only)."""

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import weights_tiny as wt
from tinker_engine.export import main
from tinker_engine.weights.model_card import CardInfo, model_card_text
from tinker_engine.weights.publish import PublishError, plan_upload, upload

RUN_CARD = {"datasets": ["HuggingFaceH4/no_robots"], "tags": ["sft"], "cookbook_version": "0.1.0",
            "run": {"id": "sl-demo", "kind": "sl", "log_path": "/runs/demo", "checkpoint": "tinker://r/sampler_weights/final",
                    "recipe": {"learning_rate": 0.0005, "lora_rank": 4}, "data": ["HuggingFaceH4/no_robots (train)"],
                    "metrics": {"train_mean_nll": 1.25, "test/nll": 1.5}, "step": 20}}


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    root = tmp_path_factory.mktemp("export-serving")
    base = wt.build_base("qwen3", root / "base", max_shard_size="40KB")
    (base / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 128}))
    return base, wt.build_adapter("qwen3", base, root / "adapter")


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, work: Path, pattern: str, *args) -> str:
    capsys.readouterr()  # what building the fixtures printed
    before = sorted(p.name for p in work.iterdir())
    code, out, err = run(capsys, *args)
    assert code == 2, (out, err)
    assert out == "" and err.count("\n") == 1 and err.startswith("error: "), err
    assert re.search(pattern, err), err
    assert sorted(p.name for p in work.iterdir()) == before  # no output folder, no temporary left
    return err


def test_serving_adapter_of_a_base_folder_loads_in_peft_and_changes_the_logits(qwen, tmp_path, capsys):
    from peft import PeftModel

    base, adapter = qwen
    out = tmp_path / "peft"
    code, stdout, _ = run(capsys, "--adapter-dir", adapter, "--base-dir", base, "--format", "peft", "--out", out)
    assert code == 0
    assert json.loads(stdout)["files"] == ["adapter_config.json", "adapter_model.safetensors"]
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(base.resolve()) and config["target_modules"][0] == "down_proj"
    model = PeftModel.from_pretrained(wt.load("qwen3", base), str(out)).eval()
    expected = wt.expected_model("qwen3", base, adapter)
    assert torch.allclose(wt.logits(model, [3, 17, 42, 99]), wt.logits(expected, [3, 17, 42, 99]), atol=1e-4)


def test_merged_folder_is_complete_with_its_model_card(qwen, tmp_path, capsys):
    from transformers import AutoModelForCausalLM, GenerationConfig

    base, adapter = qwen
    card = tmp_path / "card.json"
    card.write_text(json.dumps(RUN_CARD))
    out = tmp_path / "merged"
    code, stdout, _ = run(capsys, "--adapter-dir", adapter, "--base-dir", base, "--format", "merged", "--out", out,
                          "--strategy", "shard", "--card", card, "--base-model-id", "Qwen/Qwen3-8B")
    assert code == 0
    files = json.loads(stdout)["files"]
    assert {"README.md", "config.json", "generation_config.json", "tokenizer_config.json",
            "model.safetensors.index.json"} <= set(files)
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).eval()
    assert torch.allclose(wt.logits(model, [3, 17, 42]), wt.logits(wt.expected_model("qwen3", base, adapter), [3, 17, 42]), atol=1e-4)
    assert GenerationConfig.from_pretrained(str(out)).eos_token_id == 1
    readme = (out / "README.md").read_text()
    for line in ("base_model: Qwen/Qwen3-8B", "library_name: transformers", "- HuggingFaceH4/no_robots", "- sft",
                 "# Qwen/Qwen3-8B", "- **Format:** Merged model", "- **Recipe:** sl (durable-cookbook run `sl-demo`)",
                 "- **Data:** HuggingFaceH4/no_robots (train)", "- `learning_rate`: 0.0005", "Metrics at step 20:",
                 "| train_mean_nll | 1.25 |", "- durable-cookbook: 0.1.0"):
        assert line in readme, line


def test_an_adapter_for_another_base_is_refused_in_both_formats(qwen, tmp_path, capsys):
    base, _ = qwen
    moe_base = wt.build_base("qwen3_moe", tmp_path / "moe-base")
    moe_adapter = wt.build_adapter("qwen3_moe", moe_base, tmp_path / "moe-adapter")
    work = tmp_path / "work"
    work.mkdir()
    for fmt in ("peft", "merged"):
        refused(capsys, work, r"adapter_model\.safetensors|another base", "--adapter-dir", moe_adapter, "--base-dir", base,
                "--format", fmt, "--out", work / "out")
    wider = tmp_path / "wider"
    shutil.copytree(wt.build_adapter("qwen3", base, tmp_path / "adapter2"), wider)
    state = load_file(str(wider / "adapter_model.safetensors"))
    state["base_model.model.model.layers.1.mlp.up_proj.lora_B.weight"] = torch.zeros(96, wt.RANK)
    save_file(state, str(wider / "adapter_model.safetensors"))
    err = refused(capsys, work, r"makes a \(96, 32\) update for 'model.layers.1.mlp.up_proj', where base model .* holds \(64, 32\)",
                  "--adapter-dir", wider, "--base-dir", base, "--format", "peft", "--out", work / "out")
    assert str(wider / "adapter_model.safetensors") in err
    refused(capsys, work, r"up_proj.*\(96, 32\)", "--adapter-dir", wider, "--base-dir", base, "--format", "merged",
            "--out", work / "out")


def test_a_missing_shard_or_a_truncated_file_is_named(qwen, tmp_path, capsys):
    base, adapter = qwen
    work = tmp_path / "work"
    work.mkdir()
    broken = tmp_path / "broken"
    shutil.copytree(base, broken)
    shard = sorted(broken.glob("model-*.safetensors"))[1]
    shard.unlink()
    for fmt in ("peft", "merged"):
        refused(capsys, work, f"shard {shard.name} listed in model.safetensors.index.json is missing", "--adapter-dir",
                adapter, "--base-dir", broken, "--format", fmt, "--out", work / "out")
    shard.write_bytes((base / shard.name).read_bytes()[:-100])
    for fmt in ("peft", "merged"):
        refused(capsys, work, f"{shard}: not readable safetensors", "--adapter-dir", adapter, "--base-dir", broken,
                "--format", fmt, "--out", work / "out")
    cut = tmp_path / "cut-adapter"
    shutil.copytree(adapter, cut)
    (cut / "adapter_model.safetensors").write_bytes((adapter / "adapter_model.safetensors").read_bytes()[:-64])
    refused(capsys, work, f"{cut / 'adapter_model.safetensors'}: not readable safetensors", "--adapter-dir", cut,
            "--base-dir", base, "--format", "peft", "--out", work / "out")


class RecordingHub:
    """Stands in for huggingface_hub.HfApi at the upload boundary: records the calls and what the folder
    holds when upload_folder is called."""
    calls: list = []

    def __init__(self, token=None):
        RecordingHub.calls.append(("init", {"token": token}))

    def create_repo(self, **kwargs):
        RecordingHub.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs):
        folder = Path(kwargs["folder_path"])
        RecordingHub.calls.append(("upload_folder", kwargs, sorted(p.name for p in folder.iterdir())))


def test_publish_creates_the_repo_and_uploads_the_folder_with_its_card(qwen, tmp_path, capsys, monkeypatch):
    import huggingface_hub

    base, adapter = qwen
    RecordingHub.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", RecordingHub)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    out = tmp_path / "adapter-out"
    code, stdout, _ = run(capsys, "--adapter-dir", adapter, "--base-dir", base, "--format", "peft", "--out", out,
                          "--publish", "me/tiny-adapter", "--commit-message", "first upload")
    assert code == 0
    result = json.loads(stdout)
    assert result["files"] == ["README.md", "adapter_config.json", "adapter_model.safetensors"]
    assert RecordingHub.calls == [
        ("init", {"token": "hf_test_token"}),
        ("create_repo", {"repo_id": "me/tiny-adapter", "repo_type": "model", "private": True, "exist_ok": True}),
        ("upload_folder", {"folder_path": str(out.absolute()), "repo_id": "me/tiny-adapter", "repo_type": "model",
                           "commit_message": "first upload"}, result["files"]),
    ]
    assert result["publish"]["url"] == "https://huggingface.co/me/tiny-adapter" and result["publish"]["dry_run"] is False
    readme = (out / "README.md").read_text()
    assert "library_name: peft" in readme and "- lora" in readme and 'PeftModel.from_pretrained(base, "me/tiny-adapter")' in readme


def test_dry_run_lists_every_file_and_size_and_sends_nothing(qwen, tmp_path, capsys, monkeypatch):
    import huggingface_hub

    class NoHub:
        def __init__(self, *a, **k):
            raise AssertionError("a dry run must not reach the Hub")

    base, adapter = qwen
    monkeypatch.setattr(huggingface_hub, "HfApi", NoHub)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    out = tmp_path / "merged"
    code, stdout, _ = run(capsys, "--adapter-dir", adapter, "--base-dir", base, "--format", "merged", "--out", out,
                          "--publish", "me/tiny", "--public", "--dry-run")
    assert code == 0
    plan = json.loads(stdout)["publish"]
    on_disk = sorted((p.name, p.stat().st_size) for p in out.iterdir())
    assert [(f["path"], f["bytes"]) for f in plan["files"]] == on_disk
    assert plan["total_bytes"] == sum(s for _, s in on_disk)
    assert plan["repo_id"] == "me/tiny" and plan["private"] is False and plan["dry_run"] is True
    assert plan["commit_message"] == "Upload merged (exported by durable-cookbook)"


def test_publish_without_a_token_or_with_a_bad_repo_is_refused_before_anything_is_written(qwen, tmp_path, capsys, monkeypatch):
    base, adapter = qwen
    monkeypatch.delenv("HF_TOKEN", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    refused(capsys, work, "--publish needs HF_TOKEN", "--adapter-dir", adapter, "--base-dir", base, "--format", "peft",
            "--out", work / "out", "--publish", "me/x")
    refused(capsys, work, "'me/x/y' is not a Hugging Face repo id", "--adapter-dir", adapter, "--base-dir", base,
            "--format", "peft", "--out", work / "out", "--publish", "me/x/y", "--dry-run")
    refused(capsys, work, "--dry-run goes with --publish", "--adapter-dir", adapter, "--base-dir", base, "--format",
            "peft", "--out", work / "out", "--dry-run")
    refused(capsys, work, "--dequantize, --quantize and --serving-format apply to merged exports", "--adapter-dir",
            adapter, "--base-dir", base, "--format", "peft", "--out", work / "out", "--dequantize")
    with pytest.raises(PublishError, match="HF_TOKEN"):
        from tinker_engine.weights.publish import hub_token

        hub_token({})


def test_upload_passes_the_plan_to_the_hub(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.bin").write_bytes(b"x" * 10)
    (tmp_path / "README.md").write_text("hi")
    plan = plan_upload(tmp_path, "org/name", private=False)
    assert plan.files == [{"path": "README.md", "bytes": 2}, {"path": "sub/a.bin", "bytes": 10}]
    RecordingHub.calls = []
    assert upload(plan, "tok", api_class=RecordingHub) == "https://huggingface.co/org/name"
    assert RecordingHub.calls[1] == ("create_repo", {"repo_id": "org/name", "repo_type": "model", "private": False,
                                                      "exist_ok": True})


def test_model_card_without_a_run_is_the_reference_layout(tmp_path):
    text = model_card_text(CardInfo(base_model="Qwen/Qwen3-8B", license="apache-2.0", language=["en"]), tmp_path)
    assert text.startswith("---\nbase_model: Qwen/Qwen3-8B\nlanguage:\n- en\nlibrary_name: transformers\nlicense: apache-2.0\n")
    assert "## Training" not in text and "# Qwen/Qwen3-8B\n" in text


def test_an_engine_checkpoint_on_a_vl_base_folder_exports_in_both_formats(tmp_path, capsys):
    """The engine's own adapters carry transformers' in-memory names (a VL model's model.language_model.*,
    a LoRA on a tied head as lm_head); both exports give what peft computes with the adapter on the base."""
    family = "qwen3_5"
    from peft import PeftModel

    from tinker_engine.lora import LORA_ALPHA, LoraSpec, adapter_state, attach_lora, target_modules

    base = wt.build_base(family, tmp_path / "base")
    model = wt.load(family, base)
    spec = LoraSpec(rank=2, seed=3)
    targets = target_modules(model, spec)
    trained = attach_lora(model, spec)
    with torch.no_grad():
        for name, p in trained.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.05)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    save_file(adapter_state(trained), str(adapter / "adapter_model.safetensors"))
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": LORA_ALPHA, "target_modules": targets}))
    tokens = [3, 17, 42, 99, 5]
    expected = wt.logits(trained.eval(), tokens)
    for fmt in ("peft", "merged"):
        code, _, err = run(capsys, "--adapter-dir", adapter, "--base-dir", base, "--format", fmt, "--out", tmp_path / fmt)
        assert code == 0, err
    served = PeftModel.from_pretrained(wt.load(family, base), str(tmp_path / "peft")).eval()
    assert torch.allclose(wt.logits(served, tokens), expected, atol=1e-4)
    merged = wt.load(family, tmp_path / "merged")
    assert torch.allclose(wt.logits(merged, tokens), expected, atol=1e-4)


def _tensor_names(folder: Path) -> list:
    from safetensors import safe_open

    names = []
    for shard in folder.glob("*.safetensors"):
        with safe_open(str(shard), framework="pt") as f:
            names += list(f.keys())  # noqa: SIM118
    return names


def test_the_quantized_format_options_reach_the_merge(tmp_path, capsys):
    import quantized_bases as qb

    qb.gpt_oss_mxfp4(tmp_path / "gpt-oss", tmp_path / "scratch")
    qb.gpt_oss_adapter(tmp_path / "gpt-oss-adapter")
    for flags, blocks in (([], True), (["--dequantize"], False)):
        out = tmp_path / f"mxfp4{flags}"
        code, _, err = run(capsys, "--adapter-dir", tmp_path / "gpt-oss-adapter", "--base-dir", tmp_path / "gpt-oss",
                           "--format", "merged", "--out", out, *flags)
        assert code == 0, err
        assert any(n.endswith("_blocks") for n in _tensor_names(out)) is blocks
        assert ("quantization_config" in json.loads((out / "config.json").read_text())) is blocks
    base = wt.build_base("deepseek_v3", tmp_path / "deepseek", dtype=torch.bfloat16)
    adapter = wt.build_adapter("deepseek_v3", base, tmp_path / "deepseek-adapter")
    out = tmp_path / "experts-fp8"
    code, _, err = run(capsys, "--adapter-dir", adapter, "--base-dir", base, "--format", "merged", "--out", out,
                       "--quantize", "experts-fp8", "--serving-format", "vllm")
    assert code == 0, err
    assert any(n.endswith(".experts.0.gate_proj.weight_scale") for n in _tensor_names(out))
    assert "compression_config" in json.loads((out / "config.json").read_text())
    work = tmp_path / "work"
    work.mkdir()
    refused(capsys, work, "serving_format 'sglang' is not supported", "--adapter-dir", adapter, "--base-dir", base,
            "--format", "merged", "--out", work / "out", "--quantize", "experts-fp8", "--serving-format", "sglang")
