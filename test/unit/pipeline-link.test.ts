// Teacher sampling → SFT in a pipeline: the SFT stage names "@previous_stage" as its data, and
// only a stage that writes teacher conversations may feed it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRunData, resolveRun } from '../../src/cli/train.js';

const root = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'cookbook-pipeline-link-'));
const sampling = { kind: 'distill', config_file: join(root, 'configs', 'distill_teacher_samples.json') };
const sft = (file_path: string) => ({ kind: 'sl', config: { model_name: 'tiny-qwen3', dataset: { file_path, batch_size: 4, max_length: 64 } } });
const pipeline = (name: string, stages: unknown[]) => {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify({ stages }));
  return resolveRun('pipeline', path, [`log_path=${join(dir, name)}`]);
};

describe('pipeline stage links', () => {
  it('sampling then SFT on "@previous_stage" resolves, and its data check skips the file not yet written', async () => {
    const r = pipeline('ok', [sampling, sft('@previous_stage')]);
    expect(r.config.stages.map((s: { kind: string }) => s.kind)).toEqual(['distill', 'sl']);
    expect(r.config.stages[1].config.dataset.file_path).toBe('@previous_stage');
    await expect(checkRunData(r)).resolves.toBeUndefined();
  });
  it('"@previous_stage" after a stage that writes no conversations is an error naming the stage', () => {
    const first = { kind: 'sl', config: { model_name: 'tiny-qwen3', dataset: { builtin: 'example_chat_small', batch_size: 4, max_length: 64 } } };
    expect(() => pipeline('bad-marker', [first, sft('@previous_stage')])).toThrow(/stages\.1\.config\.dataset\.file_path: "@previous_stage" needs a previous stage that writes conversations/);
  });
  it('a stage after teacher sampling must train on its conversations', () => {
    expect(() => pipeline('no-marker', [sampling, sft(join(root, 'data', 'example_chat_small.jsonl'))])).toThrow(/stages\.1\.config\.dataset\.file_path: stage 0 writes teacher conversations/);
  });
});
