// Pipeline stages that are not a chain (RLHF): `init_from` and "@stage:<i>/sampler" references are
// validated with errors naming the config path, and filled in from earlier stages' results.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRun } from '../../src/cli/train.js';
import { findStageRefs, initSource, parseStageRef, substituteStageRefs } from '../../src/cookbook/config/pipeline-refs.js';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'cookbook-pipeline-rlhf-'));
const sl = { kind: 'sl', config: { model_name: 'tiny-qwen3', dataset: { builtin: 'example_chat_small', batch_size: 4 } } };
const rm = { kind: 'sl', init_from: 'base', config: { model_name: 'tiny-qwen3', dataset: { file_path: join(root, 'data', 'example_preferences.jsonl'), comparisons: {}, batch_size: 8 } } };
const rl = (rm_weights_path: string, init_from: unknown = 0) => ({
  kind: 'rl',
  init_from,
  config: {
    model_name: 'tiny-qwen3',
    max_tokens: 8,
    dataset: { kind: 'pairwise_preference', file_path: join(root, 'data', 'example_preferences.jsonl'), batch_size: 2, group_size: 4, preference_model: { rm_weights_path } },
  },
});
let n = 0;
const pipeline = (stages: unknown[]) => {
  const path = join(dir, `p${++n}.json`);
  writeFileSync(path, JSON.stringify({ stages }));
  return resolveRun('pipeline', path, [`log_path=${join(dir, `run${n}`)}`]);
};

describe('pipeline stage references', () => {
  it('the shipped RLHF config resolves: SFT and RM from base, RL from stage 0 with stage 1\'s sampler', () => {
    const r = resolveRun('pipeline', join(root, 'configs', 'pipeline_rlhf.json'), [`log_path=${join(dir, 'shipped')}`]);
    expect(r.config.stages.map((s: { kind: string; init_from: unknown }) => [s.kind, s.init_from])).toEqual([['sl', 'base'], ['sl', 'base'], ['rl', 0]]);
    expect(r.config.stages[2].config.dataset.preference_model.rm_weights_path).toBe('@stage:1/sampler');
    expect(r.config.stages[1].config.dataset.comparisons).toEqual({ swap: false });
  });
  it('init_from defaults to "previous"; it must name an earlier stage', () => {
    expect(pipeline([sl, sl]).config.stages[1].init_from).toBe('previous');
    expect(() => pipeline([sl, { ...sl, init_from: 1 }])).toThrow(/stages\.1\.init_from: 1 is not an earlier stage/);
    expect(() => pipeline([sl, { ...sl, init_from: 'middle' }])).toThrow(/stages\.1\.init_from/);
  });
  it('a stage from the base model may load a checkpoint of its own; others may not', () => {
    const own = { ...sl, init_from: 'base', config: { ...sl.config, load_checkpoint_path: 'tinker://x/weights/final' } };
    expect(pipeline([sl, own]).config.stages[1].config.load_checkpoint_path).toBe('tinker://x/weights/final');
    expect(() => pipeline([sl, { ...own, init_from: 'previous' }])).toThrow(/stages\.1\.config\.load_checkpoint_path: set by the pipeline/);
  });
  it('references must be well formed and name a stage that finishes first', () => {
    expect(pipeline([sl, rm, rl('@stage:1/sampler')]).config.stages[2].config.dataset.preference_model.rm_weights_path).toBe('@stage:1/sampler');
    expect(() => pipeline([sl, rm, rl('@stage:2/sampler')])).toThrow(/stages\.2\.config\.dataset\.preference_model\.rm_weights_path: "@stage:2\/sampler" refers to stage 2, which does not finish before stage 2/);
    expect(() => pipeline([sl, rm, rl('@stage:1/weights')])).toThrow(/stages\.2\.config\.dataset\.preference_model\.rm_weights_path: "@stage:1\/weights" is not a stage reference/);
  });
  it('helpers: parse, find, substitute, init source', () => {
    expect(parseStageRef('@stage:12/state')).toEqual({ stage: 12, what: 'state' });
    expect(parseStageRef('@stage:x/state')).toBeNull();
    expect(findStageRefs({ a: [{ b: '@stage:0/sampler' }], c: 'plain' })).toEqual([{ path: ['a', '0', 'b'], text: '@stage:0/sampler', ref: { stage: 0, what: 'sampler' } }]);
    const cfg = { a: [{ b: '@stage:0/sampler' }], c: '@stage:1/state', d: 3 };
    expect(substituteStageRefs(cfg, (r) => `path-${r.stage}-${r.what}`)).toEqual({ a: [{ b: 'path-0-sampler' }], c: 'path-1-state', d: 3 });
    expect(cfg.c).toBe('@stage:1/state');
    expect([initSource(0, 'previous'), initSource(2, undefined), initSource(2, 'base'), initSource(2, 0)]).toEqual([null, 1, null, 0]);
  });
});
