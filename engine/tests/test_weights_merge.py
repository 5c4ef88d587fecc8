"""Per-family merges (tinker_engine.weights): on tiny seeded checkpoints of every family, the merged folder's
logits equal the base-plus-adapter logits computed independently (weights_tiny.expected_model), the folder
reloads with from_pretrained with no missing or unexpected tensor, the shard and full strategies write the
same tensors, and bad input is one clear error with nothing left behind."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import weights_tiny as wt
from tinker_engine.weights import MergeError, merge, merge_adapter

TOKENS = [3, 17, 42, 99, 5, 77, 12, 64, 1, 120]


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """family -> (base folder, adapter folder), built once per session on first use."""
    root = tmp_path_factory.mktemp("weights-merge")
    built = {}

    def get(family: str, **base_options):
        key = (family, tuple(sorted(base_options.items())))
        if key not in built:
            name = family + "".join(f"-{k}={v}" for k, v in sorted(base_options.items()))
            base = wt.build_base(family, root / name / "base", **base_options)
            built[key] = (base, wt.build_adapter(family, base, root / name / "adapter"))
        return built[key]

    return get


def tensors(folder: Path) -> dict:
    out = {}
    for shard in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(shard)))
    return out


def loads_cleanly(family: str, folder: Path):
    model, info = wt.model_class(family).from_pretrained(str(folder), dtype=torch.float32, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    return model.eval()


@pytest.mark.parametrize("family", wt.FAMILIES)
def test_merged_logits_equal_base_plus_adapter(family, tiny, tmp_path):
    base, adapter = tiny(family)
    summary = merge_adapter(adapter, base, tmp_path / "merged", strategy="shard")
    expected = wt.logits(wt.expected_model(family, base, adapter), TOKENS)
    got = wt.logits(loads_cleanly(family, tmp_path / "merged"), TOKENS)
    before = wt.logits(wt.load(family, base), TOKENS)
    assert (expected - before).abs().max() > 1.0  # the adapter moves the logits: the check below has teeth
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-4)
    assert summary["family"] == {"qwen3_5": "qwen3_5", "gpt_oss": "gpt_oss", "deepseek_v3": "deepseek_v3",
                                 "kimi_k25": "kimi_k25", "nemotron_h": "nemotron_h"}.get(family.replace("_moe_fused", "").replace("_moe", ""), "default")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["merged"]  # no temporary folder left


def test_qwen3_dense_merge_changes_only_the_adapted_tensors(tiny, tmp_path):
    base, adapter = tiny("qwen3")
    merge_adapter(adapter, base, tmp_path / "out")
    before, after = tensors(base), tensors(tmp_path / "out")
    assert set(before) == set(after)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed == {k for k in before if k.endswith(("_proj.weight",)) or k == "lm_head.weight"}
    assert all(after[k].dtype == before[k].dtype for k in before)
    for name in ("config.json", "generation_config.json"):
        assert (tmp_path / "out" / name).is_file()


@pytest.mark.parametrize("family", ["qwen3", "qwen3_moe", "gpt_oss"])
def test_shard_and_full_strategies_write_the_same_sharded_folder(family, tiny, tmp_path):
    base, adapter = tiny(family, max_shard_size="40KB")
    shards = sorted(p.name for p in base.glob("*.safetensors"))
    assert len(shards) > 2
    a = merge_adapter(adapter, base, tmp_path / "shard", strategy="shard")
    b = merge_adapter(adapter, base, tmp_path / "full", strategy="full")
    assert (a["strategy"], b["strategy"]) == ("shard", "full")
    for out in ("shard", "full"):
        assert sorted(p.name for p in (tmp_path / out).glob("*.safetensors")) == shards
        index = json.loads((tmp_path / out / "model.safetensors.index.json").read_text())
        assert set(index["weight_map"].values()) == set(shards)
    x, y = tensors(tmp_path / "shard"), tensors(tmp_path / "full")
    assert set(x) == set(y) and all(torch.equal(x[k], y[k]) for k in x)
    got = wt.logits(loads_cleanly(family, tmp_path / "shard"), TOKENS)
    torch.testing.assert_close(got, wt.logits(wt.expected_model(family, base, adapter), TOKENS), rtol=1e-5, atol=1e-4)


def test_auto_picks_shard_when_the_base_exceeds_its_share_of_memory(tiny, tmp_path, monkeypatch):
    base, adapter = tiny("qwen3")
    size = sum(p.stat().st_size for p in base.glob("*.safetensors"))
    monkeypatch.setattr(merge, "available_memory", lambda: int(size / merge.AUTO_SHARD_SHARE) - 1)
    assert merge_adapter(adapter, base, tmp_path / "a", strategy="auto")["strategy"] == "shard"
    monkeypatch.setattr(merge, "available_memory", lambda: int(size / merge.AUTO_SHARD_SHARE) + 1)
    assert merge_adapter(adapter, base, tmp_path / "b", strategy="auto")["strategy"] == "full"


def test_output_dtype_casts_every_floating_tensor_and_says_so(tiny, tmp_path):
    base, adapter = tiny("qwen3_moe")
    merge_adapter(adapter, base, tmp_path / "f32", strategy="shard")
    merge_adapter(adapter, base, tmp_path / "bf16", strategy="shard", dtype="bfloat16")
    x, y = tensors(tmp_path / "f32"), tensors(tmp_path / "bf16")
    assert all(v.dtype == torch.bfloat16 for v in y.values())
    assert all(torch.equal(x[k].to(torch.bfloat16), y[k]) for k in x)  # one rounding, after the float32 sum
    assert json.loads((tmp_path / "bf16" / "config.json").read_text())["dtype"] == "bfloat16"


def test_a_head_lora_on_a_tied_head_unties_it(tiny, tmp_path):
    base, adapter = tiny("qwen3_tied")
    assert "lm_head.weight" not in tensors(base)
    merge_adapter(adapter, base, tmp_path / "out")
    before, after = tensors(base), tensors(tmp_path / "out")
    assert torch.equal(after["model.embed_tokens.weight"], before["model.embed_tokens.weight"])
    assert not torch.equal(after["lm_head.weight"], before["model.embed_tokens.weight"])
    assert json.loads((tmp_path / "out" / "config.json").read_text())["tie_word_embeddings"] is False


def test_square_fused_experts_take_the_transformers_axis(tmp_path, monkeypatch):
    # hidden 32 = 2 x inter 16: (experts, 32, 32) fits gate|up on either axis; Qwen3 MoE keeps it on axis 1.
    monkeypatch.setattr(wt, "config_for", lambda f, orig=wt.config_for: _with_inter(orig(f), 16))
    base = wt.build_base("qwen3_moe_fused", tmp_path / "base")
    adapter = wt.build_adapter("qwen3_moe_fused", base, tmp_path / "adapter")
    assert tensors(base)["model.layers.0.mlp.experts.gate_up_proj"].shape == (4, 32, 32)
    merge_adapter(adapter, base, tmp_path / "out")
    got = wt.logits(loads_cleanly("qwen3_moe_fused", tmp_path / "out"), TOKENS)
    torch.testing.assert_close(got, wt.logits(wt.expected_model("qwen3_moe_fused", base, adapter), TOKENS),
                               rtol=1e-5, atol=1e-4)


def _with_inter(config, inter):
    config.moe_intermediate_size = inter
    return config


# --- bad input: one clear error, nothing left behind --------------------------------------------------------

def _fails(tmp_path: Path, match: str, *args, **kwargs):
    with pytest.raises(MergeError, match=match) as e:
        merge_adapter(*args, **kwargs)
    assert "\n" not in str(e.value)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".tmp-merge", "out"))]


def test_an_adapter_for_another_base_is_refused(tiny, tmp_path):
    qwen_base, qwen_adapter = tiny("qwen3")
    deepseek_base, _ = tiny("deepseek_v3")
    _fails(tmp_path, "k_proj maps to .* which base .* does not hold .* another base model", qwen_adapter,
           deepseek_base, tmp_path / "out")
    # Same names, other sizes (a wider model of the family).
    from safetensors.torch import save_file

    wider = tmp_path / "wider"
    shutil.copytree(qwen_adapter, wider)
    state = load_file(str(wider / "adapter_model.safetensors"))
    key = "base_model.model.model.layers.1.mlp.up_proj.lora_B.weight"
    state[key] = torch.zeros(96, wt.RANK)
    save_file(state, str(wider / "adapter_model.safetensors"))
    _fails(tmp_path, r"up_proj: delta of shape \(96, 32\) does not fit .* \(64, 32\)", wider, qwen_base,
           tmp_path / "out")


def test_a_missing_or_truncated_shard_is_named(tiny, tmp_path):
    base, adapter = tiny("qwen3", max_shard_size="40KB")
    broken = tmp_path / "broken"
    shutil.copytree(base, broken)
    shard = sorted(broken.glob("*.safetensors"))[1]
    shard.unlink()
    _fails(tmp_path, f"shard {shard.name} listed in model.safetensors.index.json is missing", adapter, broken,
           tmp_path / "out")
    shutil.copyfile(base / shard.name, shard)
    shard.write_bytes(shard.read_bytes()[:-100])
    _fails(tmp_path, f"{shard.name}: not readable safetensors", adapter, broken, tmp_path / "out")


def test_bad_options_and_a_busy_output_are_refused(tiny, tmp_path):
    base, adapter = tiny("qwen3")
    _fails(tmp_path, "strategy 'fast'", adapter, base, tmp_path / "out", strategy="fast")
    _fails(tmp_path, "dtype 'int8'", adapter, base, tmp_path / "out", dtype="int8")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    with pytest.raises(MergeError, match="exists and is not an empty directory"):
        merge_adapter(adapter, base, busy)
    _fails(tmp_path, "adapter config .* not found", tmp_path / "nowhere", base, tmp_path / "out")


def test_a_failure_while_writing_shards_leaves_nothing(tiny, tmp_path, monkeypatch):
    base, adapter = tiny("qwen3", max_shard_size="40KB")
    loads = []
    real = merge.BaseCheckpoint.load_shard

    def failing_third(self, shard):
        loads.append(shard)
        if len(loads) == 3:
            raise MergeError(f"{shard}: disk gone")
        return real(self, shard)

    monkeypatch.setattr(merge.BaseCheckpoint, "load_shard", failing_third)
    _fails(tmp_path, "disk gone", adapter, base, tmp_path / "out", strategy="shard")
    assert len(loads) == 3  # two shards were written before it failed


class HalfCodec:
    """A made-up stored format for the codec hook: `X.weight` kept as `X.weight_half` (float16 of weight / s)
    and `X.weight_s` (the float32 scalar s), the two written to different shards."""

    rewrite_all = False

    def logical_shapes(self, stored):
        return {k[: -len("_half")]: shape for k, shape in stored.items() if k.endswith(".weight_half")}

    def parts(self, logical):
        return [logical + "_half", logical + "_s"]

    def decode(self, logical, parts):
        return parts[logical + "_half"].float() * parts[logical + "_s"]

    def encode(self, logical, value, parts):
        return {logical + "_half": (value / parts[logical + "_s"]).half(), logical + "_s": parts[logical + "_s"]}

    def finish_config(self, config):
        return {**config, "quantization_config": {"quant_method": "half", "merged": True}}


def test_a_codec_merges_a_stored_format_whose_parts_lie_in_two_shards(tiny, tmp_path, monkeypatch):
    from safetensors.torch import save_file

    from tinker_engine.weights import codecs

    base, adapter = tiny("qwen3")
    state = tensors(base)
    coded = ["model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.down_proj.weight"]
    first, second = {}, {}
    for key, value in state.items():
        (first if "layers.0" in key else second)[key] = value
    for key in coded:
        (first if "layers.0" in key else second).pop(key)
        first[key + "_s"] = torch.tensor(0.5)
        second[key + "_half"] = (state[key] / 0.5).half()
    folder = tmp_path / "coded"
    folder.mkdir()
    save_file(first, str(folder / "model-00001-of-00002.safetensors"))
    save_file(second, str(folder / "model-00002-of-00002.safetensors"))
    config = json.loads((base / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "quantization_config": {"quant_method": "half"}}))
    monkeypatch.setattr(codecs, "FACTORIES", [lambda cfg, options: HalfCodec()
                                               if cfg.get("quantization_config", {}).get("quant_method") == "half" else None])
    merge_adapter(adapter, folder, tmp_path / "out", strategy="shard")
    plain = tmp_path / "plain"
    merge_adapter(adapter, base, plain)
    out, expected = tensors(tmp_path / "out"), tensors(plain)
    for key in coded:
        assert out[key + "_half"].dtype == torch.float16 and key not in out
        decoded = second[key + "_half"].float() * 0.5
        want = ((decoded + (expected[key] - state[key])) / 0.5).half()  # the plain merge's delta, re-encoded
        torch.testing.assert_close(out[key + "_half"], want, rtol=1e-3, atol=1e-3)
        assert torch.equal(out[key + "_s"], torch.tensor(0.5))
    index = json.loads((tmp_path / "out" / "model.safetensors.index.json").read_text())["weight_map"]
    assert len(index) == len(out)  # every tensor written once
    assert all(torch.equal(out[k], expected[k]) for k in expected if k not in coded)
    assert json.loads((tmp_path / "out" / "config.json").read_text())["quantization_config"]["merged"] is True
