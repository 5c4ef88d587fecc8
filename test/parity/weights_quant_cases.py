"""Quantized bases merged by the reference (tinker-cookbook 0.6.1's weights.build_hf_model) and by ours
(tinker_engine.weights.merge_adapter), for weights-quant.parity.test.ts. Runs in the reference venv, which
sees the engine venv's packages; the engine's source is put on the path.

stdin: {"root": a new temporary folder}. stdout: one JSON object:
  codecs: [{id, equal}]  our MXFP4 / INT4 / FP8 quantize and dequantize beside the reference's, bit for bit,
          on seeded tensors with ties, zero blocks, edge blocks and both float32 and bfloat16 inputs.
  merges: [{id, strategy, tensors, mismatched, missing, extra, config_equal, changed}]  every output tensor
          compared bit for bit (dtype and shape included), config.json compared as JSON; `changed` counts
          the base's quantized tensors the merge altered, quantized_out the quantized tensors written.
"""

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENGINE = HERE.parent.parent / "engine"
sys.path[:0] = [str(ENGINE), str(ENGINE / "tests")]

import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

import quantized_bases as qb  # noqa: E402
from tinker_cookbook.weights import _mxfp4 as ref_mx  # noqa: E402
from tinker_cookbook.weights import _packed_int4 as ref_int4  # noqa: E402
from tinker_cookbook.weights import build_hf_model  # noqa: E402
from tinker_cookbook.weights._export import _quantized as ref_fp8  # noqa: E402
from tinker_engine.weights import fp8_block, mxfp4, packed_int4  # noqa: E402
from tinker_engine.weights.merge import merge_adapter  # noqa: E402


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype in (torch.float8_e4m3fn, torch.bfloat16, torch.float32):
        return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))
    return torch.equal(a, b)


def codec_cases() -> list[dict]:
    g = torch.Generator().manual_seed(5)
    cases = []
    for dtype in (torch.float32, torch.bfloat16):
        tag = str(dtype).removeprefix("torch.")
        w = (torch.randn(3, 40, 96, generator=g) * 0.05).to(dtype)
        w[0, 0, :32] = 0  # a zero block
        w[0, 1, :8] = torch.tensor([0.25, -0.25, 0.75, 1.25, 5.0, -5.0, 3.5, 2.5])  # halfway between FP4 codes
        blocks, scales = mxfp4.quantize(w)
        rb, rs = ref_mx.quantize_mxfp4(w)
        cases.append({"id": f"mxfp4 quantize {tag}", "equal": same(blocks, rb) and same(scales, rs)})
        cases.append({"id": f"mxfp4 dequantize {tag}",
                      "equal": same(mxfp4.dequantize(blocks, scales), ref_mx.dequantize_mxfp4(rb, rs, tuple(w.shape)))})
        w2 = (torch.randn(48, 128, generator=g) * 0.02).to(dtype)
        w2[1, :32] = 0
        for group in (32, 64):
            p, s = packed_int4.quantize(w2, group)
            rp, rsc = ref_int4.quantize_int4_group(w2, group)
            cases.append({"id": f"int4 quantize group {group} {tag}", "equal": same(p, rp) and same(s, rsc)})
            cases.append({"id": f"int4 dequantize group {group} {tag}",
                          "equal": same(packed_int4.dequantize(p, s, (48, 128), group),
                                        ref_int4.dequantize_int4_group(rp, rsc, (48, 128), group))})
        for shape, block in (((256, 384), (128, 128)), ((200, 130), (128, 128)), ((7, 5), (128, 128)), ((96, 80), (32, 32))):
            w3 = (torch.randn(*shape, generator=g) * 0.1).to(dtype)
            q, si = fp8_block.quantize(w3, block)
            rq, rsi = ref_fp8.quantize_blockwise(w3, block)
            cases.append({"id": f"fp8 quantize {shape} blocks {block} {tag}", "equal": same(q, rq) and same(si, rsi)})
            cases.append({"id": f"fp8 dequantize {shape} blocks {block} {tag}",
                          "equal": same(fp8_block.dequantize(q, si, block), ref_fp8.dequantize_blockwise(rq, rsi, block))})
    return cases


def tensors(folder: Path) -> dict[str, torch.Tensor]:
    out = {}
    for f in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


def compare(case: str, strategy: str, base: Path, ref: Path, ours: Path) -> dict:
    r, o, b = tensors(ref), tensors(ours), tensors(base)
    quantized = [k for k in b if b[k].dtype in (torch.uint8, torch.int32, torch.float8_e4m3fn) and k in o]
    return {
        "id": case, "strategy": strategy, "tensors": len(r),
        "mismatched": sorted(k for k in set(r) & set(o) if not same(r[k], o[k])),
        "missing": sorted(set(r) - set(o)), "extra": sorted(set(o) - set(r)),
        "config_equal": json.loads((ref / "config.json").read_text()) == json.loads((ours / "config.json").read_text()),
        "changed": sum(1 for k in quantized if not same(b[k], o[k])),
        "quantized_out": sum(1 for t in o.values() if t.dtype in (torch.uint8, torch.int32, torch.float8_e4m3fn)),
    }


def merge_cases(root: Path) -> list[dict]:
    qb.gpt_oss_mxfp4(root / "gpt_oss", root / "gpt_oss-save")
    qb.kimi_int4(root / "kimi", root / "kimi-save")
    qb.deepseek_fp8(root / "deepseek", root / "deepseek-save")
    qb.kimi_k25_int4(root / "kimi_k25", root / "kimi_k25-save")
    qb.gpt_oss_adapter(root / "adapter-gpt_oss")
    qb.deepseek_adapter(root / "adapter-deepseek")
    experts_fp8 = {"quantize": "experts-fp8", "serving_format": "vllm"}
    plan = [
        ("GPT-OSS MXFP4, kept MXFP4", "gpt_oss", "adapter-gpt_oss", {}),
        ("Kimi K2 INT4 pack-quantized, kept INT4", "kimi", "adapter-deepseek", {}),
        ("Kimi K2.5 INT4 pack-quantized (VL layout), kept INT4", "kimi_k25", "adapter-deepseek", {}),
        ("DeepSeek V3 native FP8 to experts-FP8 (vLLM)", "deepseek", "adapter-deepseek", experts_fp8),
        ("DeepSeek V3 bfloat16 to experts-FP8 (vLLM)", "deepseek-save", "adapter-deepseek", experts_fp8),
        ("GPT-OSS bfloat16 (fused 3-D experts) to experts-FP8 (vLLM)", "gpt_oss-save", "adapter-gpt_oss", experts_fp8),
    ]
    results = []
    for i, (case, base, adapter, options) in enumerate(plan):
        ref = root / f"ref-{i}"
        build_hf_model(base_model=str(root / base), adapter_path=str(root / adapter), output_path=str(ref),
                       merge_strategy="shard", device="cpu", **options)
        for strategy in ("shard", "full"):
            ours = root / f"ours-{i}-{strategy}"
            merge_adapter(root / adapter, root / base, ours, strategy=strategy, **options)
            results.append(compare(case, strategy, root / base, ref, ours))
    return results


def main() -> None:
    request = json.loads(sys.stdin.read())
    root = Path(request["root"])
    root.mkdir(parents=True, exist_ok=True)
    try:
        print(json.dumps({"codecs": codec_cases(), "merges": merge_cases(root)}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
