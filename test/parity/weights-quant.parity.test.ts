// Quantized bases merged beside the reference (tinker-cookbook 0.6.1's weights.build_hf_model, run at
// test time by weights_quant_cases.py in the reference venv): the engine's MXFP4, INT4 pack-quantized
// and FP8 block codecs bit for bit, and every output tensor and config.json of a merge onto tiny seeded
// GPT-OSS (MXFP4 experts, kept MXFP4), Kimi K2 and K2.5 (INT4 experts, kept INT4) and DeepSeek V3 (native FP8 and
// bfloat16, exported as the reference's experts-FP8 for vLLM; GPT-OSS bfloat16 too) bases, with both of our
// strategies.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

interface MergeCase {
  id: string;
  strategy: string;
  tensors: number;
  mismatched: string[];
  missing: string[];
  extra: string[];
  config_equal: boolean;
  changed: number;
  quantized_out: number;
}

let result: { codecs: Array<{ id: string; equal: boolean }>; merges: MergeCase[] };

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const root = mkdtempSync(join(tmpdir(), 'weights-quant-parity-'));
  const child = await runPythonScript(python, [join(import.meta.dirname, 'weights_quant_cases.py')], {
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
    input: JSON.stringify({ root }),
  });
  expect(child.status, child.stderr).toBe(0);
  result = JSON.parse(child.stdout);
}, 300_000);

describe('quantized weights beside the reference', () => {
  it('MXFP4, INT4 and FP8 block codecs quantize and dequantize bit for bit', () => {
    expect(result.codecs.length).toBeGreaterThanOrEqual(28);
    expect(result.codecs.filter((c) => !c.equal).map((c) => c.id)).toEqual([]);
  });

  it('each merge writes the same tensors and config.json as the reference, with either strategy', () => {
    const ids = new Set(result.merges.map((m) => m.id));
    expect(ids.size).toBe(6);
    for (const m of result.merges) {
      const label = `${m.id} (${m.strategy})`;
      expect({ label, mismatched: m.mismatched, missing: m.missing, extra: m.extra, config: m.config_equal }).toEqual({
        label,
        mismatched: [],
        missing: [],
        extra: [],
        config: true,
      });
      expect(m.tensors, label).toBeGreaterThan(40);
      expect(m.quantized_out, label).toBeGreaterThan(0);
    }
  });

  it('the merges change the quantized tensors they land on', () => {
    for (const m of result.merges.filter((c) => !c.id.includes('bfloat16'))) expect(m.changed, `${m.id} (${m.strategy})`).toBeGreaterThan(0);
  });
});
