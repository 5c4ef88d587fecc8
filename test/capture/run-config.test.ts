// A run config's `capture` field: true, {dir} or {url}; refused, naming the file, where it is
// malformed or where the run kind records nothing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCaptureTarget } from '../../src/capture/run-config.js';
import { resolveRun } from '../../src/cli/train.js';

const dir = mkdtempSync(join(tmpdir(), 'h61f-cfg-'));
const fixtures = join(import.meta.dirname, '..', 'fixtures');
const at = (name: string) => [`log_path=${join(dir, name)}`];

describe('capture in a run config', () => {
  it('takes true, a folder or a URL on sl and rl runs', () => {
    expect(resolveRun('rl', join(fixtures, 'rl_small.json'), ['capture=true', ...at('a')]).config.capture).toBe(true);
    const sl = resolveRun('sl', join(fixtures, 'sl_small.json'), ['capture={"url": "http://127.0.0.1:1234"}', ...at('b')]);
    expect(runCaptureTarget(sl.config.capture)).toBe('http://127.0.0.1:1234');
    expect(runCaptureTarget(resolveRun('sl', join(fixtures, 'sl_small.json'), at('c')).config.capture)).toBeUndefined();
  });

  it('refuses both a folder and a URL, a bad URL, and a kind that records nothing', () => {
    expect(() => resolveRun('sl', join(fixtures, 'sl_small.json'), ['capture={"dir": "x", "url": "http://h"}', ...at('d')])).toThrow(/capture.*set dir or url, not both/s);
    expect(() => resolveRun('sl', join(fixtures, 'sl_small.json'), ['capture={"url": "ftp://h"}', ...at('e')])).toThrow(/capture\.url.*an http\(s\):\/\/ URL/s);
    const dpo = join(dir, 'dpo.json');
    writeFileSync(dpo, JSON.stringify({ model_name: 'tiny-qwen3', dataset: { file_path: join(fixtures, '..', '..', 'data', 'example_preferences.jsonl'), batch_size: 2 }, capture: true }));
    expect(() => resolveRun('dpo', dpo, at('f'))).toThrow(`${dpo}: capture: sl and rl runs record their samples and training calls; a dpo run does not yet (leave capture out)`);
    // A pipeline's stage as well: an SL stage records, a DPO stage would not.
    const pipeline = join(dir, 'pipeline.json');
    const stages = [
      { kind: 'sl', config: { model_name: 'tiny-qwen3', dataset: { file_path: join(fixtures, '..', '..', 'data', 'example_chat.jsonl'), batch_size: 2 }, capture: true } },
      { kind: 'dpo', config: { model_name: 'tiny-qwen3', dataset: { file_path: join(fixtures, '..', '..', 'data', 'example_preferences.jsonl'), batch_size: 2 }, capture: true } },
    ];
    writeFileSync(pipeline, JSON.stringify({ run_name: 'p', stages }));
    expect(() => resolveRun('pipeline', pipeline, at('g'))).toThrow(`${pipeline}: stages.1.config.capture: sl and rl runs record their samples and training calls; a dpo run does not yet (leave capture out)`);
    writeFileSync(pipeline, JSON.stringify({ run_name: 'p', stages: [stages[0]] }));
    expect(resolveRun('pipeline', pipeline, at('h')).config.stages[0].config.capture).toBe(true);
  });
});
