"""Merges onto quantized bases (GPT-OSS MXFP4, Kimi K2 INT4 pack-quantized, DeepSeek V3 native FP8): the
merged model computes what the base plus the adapter computes, to the precision of the format written.

"Base plus adapter" is computed here on its own: the base dequantized to float32 and loaded by
transformers, each LoRA's scale·B·A added to the loaded model's own parameters (transformers' in-memory
layout: fused, interleaved or concatenated expert tensors) by the small mapping in `add_lora`, not by the
merge's planner. GPT-OSS's MXFP4 output is also read by transformers' own MXFP4 loader. Bit-for-bit
agreement with the reference's merge is test/parity/weights-quant.parity.test.ts.
"""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import quantized_bases as qb
from tinker_engine.weights import fp8_block, mxfp4, packed_int4
from tinker_engine.weights.codecs import MergeOptions, codecs_for
from tinker_engine.weights.errors import MergeError
from tinker_engine.weights.merge import merge_adapter

FAMILIES = {  # family -> (base builder, adapter builder)
    "gpt_oss": (qb.gpt_oss_mxfp4, qb.gpt_oss_adapter),
    "kimi": (qb.kimi_int4, qb.deepseek_adapter),
    "deepseek": (qb.deepseek_fp8, qb.deepseek_adapter),
}
TOKENS = torch.randint(0, 160, (2, 12), generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("quantized-bases")
    for family, (base, adapter) in FAMILIES.items():
        base(root / family, root / f"{family}-save")
        adapter(root / f"adapter-{family}")
        zero_adapter(root / f"adapter-{family}", root / f"zero-{family}")
    return root


def zero_adapter(src: Path, dst: Path) -> None:
    """The same adapter with B = 0: merging it only decodes the base (dequantize=True writes it dense)."""
    state = load_file(str(src / "adapter_model.safetensors"))
    dst.mkdir()
    save_file({k: torch.zeros_like(v) if ".lora_B." in k else v for k, v in state.items()}, str(dst / "adapter_model.safetensors"))
    shutil.copyfile(src / "adapter_config.json", dst / "adapter_config.json")


def load_model(folder: Path):
    from transformers import AutoModelForCausalLM

    config = json.loads((folder / "config.json").read_text())
    if config.get("model_type") == "kimi_k2":  # Kimi K2 is DeepSeek V3's architecture under its own name
        config["model_type"] = "deepseek_v3"
        (folder / "config.json").write_text(json.dumps(config))
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def add_lora(model, adapter: Path, family: str) -> None:
    config = json.loads((adapter / "adapter_config.json").read_text())
    scale = config["lora_alpha"] / config["r"]
    state = load_file(str(adapter / "adapter_model.safetensors"))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for key in sorted(state):
            if not key.endswith(".lora_A.weight"):
                continue
            name = key.removesuffix(".lora_A.weight").removeprefix("base_model.model.")
            a, b = state[key].float(), state[key.replace(".lora_A.", ".lora_B.")].float() * scale
            if name == "model.unembed_tokens":
                params["lm_head.weight"] += b @ a
            elif ".experts." not in name:
                params[name.replace(".attn.", ".self_attn.") + ".weight"] += b @ a
            else:
                prefix, proj = name.rsplit(".", 1)
                n = max(a.shape[0], b.shape[0])
                delta = torch.bmm(b.expand(n, -1, -1), a.expand(n, -1, -1))  # (experts, out, in)
                if family == "gpt_oss":  # (experts, in, out); gate and up interleaved on the last axis
                    if proj == "w2":
                        params[prefix + ".down_proj"] += delta.transpose(1, 2)
                    else:
                        params[prefix + ".gate_up_proj"][..., (0 if proj == "w1" else 1)::2] += delta.transpose(1, 2)
                else:  # DeepSeek V3: gate_up_proj (experts, [gate | up], in), down_proj (experts, out, in)
                    fused = params[prefix + ".gate_up_proj"]
                    half = fused.shape[1] // 2
                    if proj == "w2":
                        params[prefix + ".down_proj"] += delta
                    else:
                        fused[:, :half] += delta if proj == "w1" else 0
                        fused[:, half:] += delta if proj == "w3" else 0


def logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model(TOKENS).logits


@pytest.fixture(scope="module")
def exact(root):
    """family -> (base logits, base + adapter logits, base + adapter parameters), all float32."""
    out = {}
    for family in FAMILIES:
        merge_adapter(root / f"zero-{family}", root / family, root / f"{family}-dense", dequantize=True, dtype="float32")
        model = load_model(root / f"{family}-dense")
        base_logits = logits(model)
        add_lora(model, root / f"adapter-{family}", family)
        out[family] = (base_logits, logits(model), {k: v.detach().clone() for k, v in model.state_dict().items()})
    return out


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_dequantized_output_is_base_plus_adapter_to_bfloat16(root, exact, family):
    merge_adapter(root / f"adapter-{family}", root / family, root / f"{family}-deq", dequantize=True)
    config = json.loads((root / f"{family}-deq" / "config.json").read_text())
    assert "quantization_config" not in config
    stored = {}
    for f in (root / f"{family}-deq").glob("*.safetensors"):
        stored.update(load_file(str(f)))
    assert not any(k.endswith(("_blocks", "_scales", "_packed", "_scale_inv", "_shape")) for k in stored)
    model = load_model(root / f"{family}-deq")
    _, want_logits, want = exact[family]
    for name, value in model.state_dict().items():
        # Written in bfloat16: each parameter is the exact sum rounded once.
        assert torch.allclose(value, want[name], rtol=2 ** -8, atol=1e-30), name
    adapter_effect = (want_logits - exact[family][0]).abs().max()
    assert (logits(model) - want_logits).abs().max() < 0.02 * adapter_effect


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_output_in_the_base_format_is_base_plus_adapter_to_its_precision(root, exact, family):
    merge_adapter(root / f"adapter-{family}", root / family, root / f"{family}-kept", strategy="shard")
    base_config = json.loads((root / family / "config.json").read_text())
    assert json.loads((root / f"{family}-kept" / "config.json").read_text()) == base_config
    merge_adapter(root / f"zero-{family}", root / f"{family}-kept", root / f"{family}-kept-dense", dequantize=True, dtype="float32")
    model = load_model(root / f"{family}-kept-dense")
    base_logits, want_logits, want = exact[family]
    base_params = load_model(root / f"{family}-dense").state_dict()
    # The format's precision, relative to the tensor's size: 4-bit codes of 32-value blocks, FP8's 3-bit mantissa.
    precision = {"gpt_oss": 0.2, "kimi": 0.15, "deepseek": 0.05}[family]
    quantized = 0
    for name, value in model.state_dict().items():
        error = (value - want[name]).norm()
        if torch.equal(base_params[name], want[name]):
            assert torch.equal(value, want[name]), f"{name}: not merged, yet changed"
            continue
        # A merged tensor: within the format's precision of base + adapter, and nearer to it than the base.
        assert error <= precision * want[name].norm(), name
        assert error < (base_params[name] - want[name]).norm(), name
        quantized += 1
    assert quantized > 5
    assert (logits(model) - want_logits).abs().max() < 0.5 * (want_logits - base_logits).abs().max()


def test_transformers_reads_the_merged_mxfp4_as_we_do(root):
    """transformers' own MXFP4 loader (dequantizing on a machine without MXFP4 kernels) sees the same experts."""
    merge_adapter(root / "adapter-gpt_oss", root / "gpt_oss", root / "gpt_oss-kept-hf", strategy="full")
    stored = {}
    for f in (root / "gpt_oss-kept-hf").glob("*.safetensors"):
        stored.update(load_file(str(f)))
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(root / "gpt_oss-kept-hf", dtype=torch.bfloat16).state_dict()
    for key in [k for k in stored if k.endswith(mxfp4.BLOCKS_SUFFIX)]:
        name = key.removesuffix(mxfp4.BLOCKS_SUFFIX)
        ours = mxfp4.dequantize(stored[key], stored[name + mxfp4.SCALES_SUFFIX]).transpose(-1, -2)
        assert torch.equal(loaded[name], ours), name


def test_native_fp8_keeps_its_scales_and_untouched_tensors(root):
    out = root / "deepseek-kept"
    if not out.exists():
        merge_adapter(root / "adapter-deepseek", root / "deepseek", out, strategy="shard")
    base, merged = {}, {}
    for f in (root / "deepseek").glob("*.safetensors"):
        base.update(load_file(str(f)))
    for f in out.glob("*.safetensors"):
        merged.update(load_file(str(f)))
    assert set(merged) == set(base)
    index = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
    assert set(index) == set(base)
    for key, value in base.items():
        assert merged[key].dtype == value.dtype, key
    # Router, norms, embeddings and the head's untouched neighbours are the base's bytes.
    for key in [k for k in base if "norm" in k or k.endswith(".mlp.gate.weight") or "embed" in k]:
        assert torch.equal(merged[key], base[key]), key
    # A weight whose scale sits in another shard was merged once, with its scale.
    moved = "model.layers.1.mlp.experts.3.up_proj"
    weight, scale_inv = merged[moved + ".weight"], merged[moved + ".weight_scale_inv"]
    assert not torch.equal(weight.view(torch.uint8), base[moved + ".weight"].view(torch.uint8))
    assert index[moved + ".weight"] == index[moved + ".weight_scale_inv"]
    block = tuple(qb.FP8_TEST_BLOCK)
    assert fp8_block.dequantize(weight, scale_inv, block).shape == weight.shape


def test_codec_round_trips():
    g = torch.Generator().manual_seed(3)
    # MXFP4: a dequantized weight requantizes to itself (the codes may change, the values do not).
    codes = torch.randint(0, 256, (2, 8, 4, 16), dtype=torch.uint8, generator=g)
    scales = torch.randint(110, 130, (2, 8, 4), dtype=torch.uint8, generator=g)
    dense = mxfp4.dequantize(codes, scales)
    assert torch.equal(mxfp4.dequantize(*mxfp4.quantize(dense)), dense)
    assert mxfp4.unpack(torch.tensor([[0x21]], dtype=torch.uint8)).tolist() == [[0.5, 1.0]]  # low nibble first
    # INT4: eight values per word, the first in the low bits; unpack inverts pack.
    values = torch.tensor([[1, -1, 2, -8, 7, 0, 3, -3]], dtype=torch.int8)
    packed = packed_int4.pack(values)
    assert packed.tolist() == [[int.from_bytes(bytes([0xF1, 0x82, 0x07, 0xD3]), "little", signed=True)]]
    assert torch.equal(packed_int4.unpack(packed), values)
    weight = torch.randn(16, 64, generator=g)
    packed, scale = packed_int4.quantize(weight)
    back = packed_int4.dequantize(packed, scale, (16, 64), dtype=torch.float32)
    assert ((back - weight).abs() <= 0.51 * scale.float().repeat_interleave(32, dim=1)).all()
    # FP8 blocks: 3 mantissa bits, edge blocks padded.
    weight = torch.randn(200, 130, generator=g)
    fp8, scale_inv = fp8_block.quantize(weight)
    assert scale_inv.shape == (2, 2) and fp8.dtype == torch.float8_e4m3fn
    back = fp8_block.dequantize(fp8, scale_inv, dtype=torch.float32)
    assert ((back - weight).abs() <= 2 ** -4 * weight.abs() + 2 ** -9 * scale_inv.max()).all()


def test_formats_are_detected_from_quantization_config():
    def kinds(config, **options):
        return [type(c).__name__ for c in codecs_for(config, MergeOptions(**options))]

    assert kinds({"model_type": "qwen3"}) == []
    assert kinds({"quantization_config": {"quant_method": "mxfp4"}}) == ["MxBlockCodec"]
    kimi = {"quant_method": "compressed-tensors", "format": "pack-quantized",
            "config_groups": {"group_0": {"weights": {"group_size": 64}}}}
    assert kinds({"quantization_config": kimi}) == ["PackedInt4Codec"]
    assert kinds({"text_config": {"quantization_config": kimi}}) == ["PackedInt4Codec"]  # Kimi K2.5's VL layout
    assert packed_int4.group_size({"quantization_config": kimi}) == 64
    assert packed_int4.group_size({"quantization_config": {"format": "pack-quantized"}}) == 32
    fp8 = {"quantization_config": {"quant_method": "fp8", "weight_block_size": [64, 32]}}
    assert fp8_block.native_block(fp8) == (64, 32)
    assert [c.mode for c in codecs_for(fp8, MergeOptions())] == ["native"]
    assert [c.mode for c in codecs_for(fp8, MergeOptions(dequantize=True))] == ["dequantize"]
    assert [c.mode for c in codecs_for({"model_type": "deepseek_v3"}, MergeOptions(quantize="experts-fp8", serving_format="vllm"))] == ["experts-fp8"]


@pytest.mark.parametrize("config,options,message", [
    ({"quantization_config": {"quant_method": "mxfp8"}}, {}, "mxfp8"),
    ({}, {"quantize": "int8"}, "quantize 'int8' is not supported"),
    ({}, {"serving_format": "sglang", "quantize": "experts-fp8"}, "serving_format 'sglang' is not supported"),
    ({}, {"quantize": "experts-fp8"}, "needs serving_format"),
    ({}, {"serving_format": "vllm"}, "needs quantize"),
    ({}, {"quantize": "experts-fp8", "serving_format": "vllm", "dtype": torch.float32}, "needs dtype bfloat16"),
    ({"quantization_config": {"quant_method": "mxfp4"}}, {"quantize": "experts-fp8", "serving_format": "vllm"}, "already a quantized format"),
])
def test_bad_quantization_options_are_refused(config, options, message):
    with pytest.raises(MergeError, match=message):
        codecs_for(config, MergeOptions(**options))


@pytest.mark.parametrize("family,dropped", [("gpt_oss", "model.layers.1.mlp.experts.down_proj_scales"),
                                            ("kimi", "model.layers.1.mlp.experts.2.gate_proj.weight_scale")])
def test_a_quantized_weight_without_its_scale_is_refused_before_writing(root, family, dropped):
    broken = root / f"{family}-no-scale"
    shutil.copytree(root / family, broken)
    index_path = broken / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    shard = broken / index["weight_map"].pop(dropped)
    state = load_file(str(shard))
    del state[dropped]
    save_file(state, str(shard), metadata={"format": "pt"})
    index_path.write_text(json.dumps(index))
    out = root / f"{family}-no-scale-out"
    with pytest.raises(MergeError, match=f"has no .*{dropped.rsplit('.', 1)[-1].removeprefix('down_proj')}"):
        merge_adapter(root / f"adapter-{family}", broken, out)
    assert not out.exists()
    assert not [p for p in root.iterdir() if p.name.startswith(f".tmp-merge-{out.name}")]
