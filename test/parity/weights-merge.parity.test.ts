// The per-family merge (`cookbook export --format merged --base-dir`, tinker_engine.weights.merge_adapter)
// against the reference's build_hf_model (shard strategy), family by family on tiny seeded bfloat16 bases
// (engine/tests/weights_tiny.py: Qwen3 dense and tied, Qwen3 MoE separate and fused experts, Qwen3.5 dense
// (tied, split QKV, VL prefix), Qwen3.5 MoE separate and fused, GPT-OSS, DeepSeek V3, Kimi K2.5, Nemotron H)
// and seeded Tinker-layout adapters: every tensor bit for bit. See weights_merge_cases.py.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWeightsCases, type WeightsCases } from './weights-cases.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const SCRIPT = path.join(here, 'weights_merge_cases.py');
const FAMILIES = ['qwen3', 'qwen3_moe', 'qwen3_moe_fused', 'qwen3_5_moe', 'qwen3_5_moe_fused', 'gpt_oss', 'deepseek_v3', 'kimi_k25', 'nemotron_h'];
const TIED = ['qwen3_tied', 'qwen3_5'];

interface FamilyResult {
  reference_error: string | null;
  ours_error: string | null;
  summary?: { family: string; expert_layout: string; ops: number };
  same_keys?: boolean;
  only_reference?: string[];
  only_ours?: string[];
  tensors?: number;
  changed_by_merge?: number;
  unequal_tensors?: string[];
  max_ulps?: number;
  tied_head?: { reference_has_head: boolean; ours_head_is_reference_embedding: boolean; ours_embedding_is_base: boolean };
}

let cases: WeightsCases<FamilyResult>;
let results: Record<string, FamilyResult>;

describe('per-family merge parity with build_hf_model', () => {
  beforeAll(async () => {
    cases = await runWeightsCases<FamilyResult>(SCRIPT);
    results = cases.results;
  }, 300_000);

  afterAll(() => cases?.remove());

  it.each([...FAMILIES, ...TIED])('%s: every tensor of the merged folder bit for bit', (family) => {
    const r = results[family];
    expect(r.reference_error).toBeNull();
    expect(r.ours_error).toBeNull();
    expect({ onlyReference: r.only_reference, onlyOurs: r.only_ours }).toEqual({ onlyReference: [], onlyOurs: [] });
    expect(r.same_keys).toBe(true);
    expect(r.changed_by_merge).toBeGreaterThan(10); // the adapters reach attention, MLP or experts, and the head
    expect(r.unequal_tensors).toEqual([]);
    expect(r.max_ulps).toBe(0);
  });

  it.each(TIED)('%s: a head LoRA on a tied head is our untied head, the reference’s shared embedding', (family) => {
    expect(results[family].tied_head).toEqual({
      reference_has_head: false,
      ours_head_is_reference_embedding: true,
      ours_embedding_is_base: true,
    });
  });

  it('each family took its own profile and expert layout', () => {
    const layout = Object.fromEntries(Object.entries(results).map(([f, r]) => [f, `${r.summary!.family}/${r.summary!.expert_layout}`]));
    expect(layout).toEqual({
      qwen3: 'default/separate',
      qwen3_tied: 'default/separate',
      qwen3_moe: 'default/separate',
      qwen3_moe_fused: 'default/fused_concatenated',
      qwen3_5: 'qwen3_5/separate',
      qwen3_5_moe: 'qwen3_5/separate',
      qwen3_5_moe_fused: 'qwen3_5/fused_concatenated',
      gpt_oss: 'gpt_oss/fused_interleaved',
      deepseek_v3: 'deepseek_v3/separate',
      kimi_k25: 'kimi_k25/separate',
      nemotron_h: 'nemotron_h/separate',
    });
  });
});
