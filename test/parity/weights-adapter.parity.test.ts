// The serving adapter (`cookbook export --format peft`) against the reference's build_lora_adapter, family
// by family on the merge tests' tiny seeded bases (laid out as each family's checkpoints are) and seeded
// Tinker-layout adapters (unembed_tokens, GPT-OSS `.attn`, 3-D w1/w2/w3 experts, Qwen3.5's split q/k/v,
// Nemotron's Mamba gate_proj/x_proj), and on the quantized-merge tests' MXFP4 GPT-OSS and INT4 Kimi
// K2 / K2.5 bases: the same tensors under the same names, byte-identical
// adapter_config.json, and DeepSeek V3 refused by both. See weights_adapter_cases.py.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWeightsCases, type WeightsCases } from './weights-cases.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCRIPT = path.join(here, 'weights_adapter_cases.py');

interface FamilyResult {
  reference_error: string | null;
  ours_error: string | null;
  keys?: string[];
  same_keys?: boolean;
  unequal_tensors?: string[];
  reference_config?: Record<string, unknown>;
  ours_config?: Record<string, unknown>;
  config_text_equal?: boolean;
  files?: string[];
}

let cases: WeightsCases<FamilyResult>;
let results: Record<string, FamilyResult>;

describe('serving adapter parity with build_lora_adapter', () => {
  beforeAll(async () => {
    cases = await runWeightsCases<FamilyResult>(SCRIPT);
    results = cases.results;
  }, 300_000);

  afterAll(() => cases?.remove());

  const SERVED = ['qwen3', 'qwen3_tied', 'qwen3_moe', 'qwen3_moe_fused', 'qwen3_5', 'qwen3_5_moe', 'qwen3_5_moe_fused', 'gpt_oss', 'kimi_k25', 'nemotron_h'];
  // Quantized bases: the names come from the packed tensors (X_blocks, X.weight_packed), checked all the same.
  const QUANTIZED = ['gpt_oss_mxfp4', 'kimi_k2_int4', 'kimi_k25_int4'];
  it.each([...SERVED, ...QUANTIZED])('%s: the same tensors and adapter_config.json', (family) => {
    const r = results[family];
    expect(r.reference_error).toBeNull();
    expect(r.ours_error).toBeNull();
    expect(r.same_keys).toBe(true);
    expect(r.unequal_tensors).toEqual([]);
    expect(r.ours_config).toEqual(r.reference_config);
    expect(r.config_text_equal).toBe(true);
    expect(r.files).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
  });

  it('the families’ names: unembed_tokens -> lm_head or the tied embedding, one pair per expert, GPT-OSS self_attn, Nemotron in_proj under model.', () => {
    for (const family of SERVED) expect(results[family].keys!.some((k) => k.includes('unembed_tokens'))).toBe(false);
    expect(results.qwen3.keys).toContain('base_model.model.lm_head.lora_A.weight');
    expect(results.qwen3_tied.keys).toContain('base_model.model.model.embed_tokens.lora_A.weight');
    for (const family of ['qwen3_moe', 'qwen3_moe_fused', 'gpt_oss']) {
      expect(results[family].keys).toContain('base_model.model.model.layers.1.mlp.experts.3.gate_proj.lora_B.weight');
      expect(results[family].keys!.some((k) => /experts\.w[123]/.test(k))).toBe(false);
    }
    expect(results.gpt_oss.keys).toContain('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight');
    expect(results.gpt_oss.keys!.some((k) => k.includes('.attn.'))).toBe(false);
    expect(results.qwen3_5.keys!.some((k) => k.includes('model.language_model.layers.0.linear_attn.in_proj_q.'))).toBe(true);
    expect(results.kimi_k25.keys!.every((k) => k.startsWith('base_model.model.model.') || k.startsWith('base_model.model.lm_head.'))).toBe(true);
    const nemotron = results.nemotron_h;
    expect(nemotron.keys!.some((k) => /layers\.\d+\.mixer\.in_proj\.lora_A/.test(k))).toBe(true);
    expect(nemotron.keys!.some((k) => k.includes('backbone.') || k.includes('.gate_proj.') || k.includes('x_proj'))).toBe(false);
    expect(nemotron.keys!.some((k) => k.includes('.experts.0.up_proj.'))).toBe(true);
    expect(nemotron.ours_config).toMatchObject({ rank_pattern: { in_proj: 8 }, alpha_pattern: { in_proj: 64 }, r: 4, lora_alpha: 32 });
  });

  it('the model card: the reference’s text for an adapter and for a merged folder (but the version line)', () => {
    const cards = results.cards as unknown as Record<string, { equal: boolean; ours: string }>;
    for (const kind of ['adapter', 'merged']) expect(cards[kind].equal).toBe(true);
    expect(cards.adapter.ours).toContain('library_name: peft');
    expect(cards.merged.ours).toContain('library_name: transformers');
    expect(cards.merged.ours).toMatch(/- durable-cookbook: \S+/);
  });

  it('deepseek_v3: refused by both, with the reference’s reason', () => {
    const r = results.deepseek_v3;
    expect(r.reference_error).toContain("DeepSeek V3/V3.1 (model_type='deepseek_v3') does not support LoRA adapter serving in vLLM or SGLang");
    expect(r.ours_error).toContain("DeepSeek V3/V3.1 (model_type='deepseek_v3') does not support LoRA adapter serving in vLLM or SGLang");
    expect(r.ours_error).toContain('--format merged');
  });
});
