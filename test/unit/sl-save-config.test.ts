// SL's save-trigger and infrequent-evaluator fields: the reference's defaults, strict values named
// by their path, and infrequent evaluators' files resolved and checked like `evaluators`.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRun } from '../../src/cli/train.js';

const dir = mkdtempSync(join(tmpdir(), 'cookbook-save-config-'));
writeFileSync(join(dir, 'chat.jsonl'), '{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}\n');
writeFileSync(join(dir, 'eval.jsonl'), '{"input":"hi","output":"hello"}\n');
const config = (body: Record<string, unknown>) => {
  const p = join(dir, `c${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, JSON.stringify({ model_name: 'tiny-qwen3', dataset: { file_path: 'chat.jsonl', batch_size: 1, max_length: 64 }, ...body }));
  return p;
};
const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a config error');
};

describe('SL save triggers and infrequent evaluators in the config', () => {
  it("default as the reference's Config: off, blocking saves, no infrequent evaluators every 100 steps", () => {
    const { config: c } = resolveRun('sl', config({}), []);
    expect(c).toMatchObject({ save_every_tokens: 0, save_every_seconds: 0, async_periodic_saves: false, infrequent_evaluators: [], infrequent_eval_every: 100 });
  });

  it('name a bad value by its key', () => {
    const p = config({ save_every_tokens: -1, save_every_seconds: 'often', async_periodic_saves: 1, infrequent_eval_every: 2.5 });
    const message = errorOf(() => resolveRun('sl', p, []));
    for (const key of ['save_every_tokens', 'save_every_seconds', 'async_periodic_saves', 'infrequent_eval_every']) expect(message).toMatch(new RegExp(`${key}: `));
  });

  it("the reference's builder name points to the field that stands in for it", () => {
    expect(errorOf(() => resolveRun('sl', config({ infrequent_evaluator_builders: [] }), []))).toMatch(/infrequent_evaluator_builders: unknown config key; did you mean infrequent_evaluators\?/);
  });

  it('infrequent evaluator files resolve against the config file, and a missing one is named by its path', () => {
    const { config: c } = resolveRun('sl', config({ infrequent_evaluators: [{ kind: 'custom_sampling', file_path: 'eval.jsonl' }] }), []);
    expect(c.infrequent_evaluators[0].file_path).toBe(join(dir, 'eval.jsonl'));
    expect(errorOf(() => resolveRun('sl', config({ infrequent_evaluators: [{ kind: 'custom_sampling', file_path: 'nope.jsonl' }] }), []))).toMatch(/infrequent_evaluators\.0\.file_path: .*nope\.jsonl does not exist/);
  });
});
