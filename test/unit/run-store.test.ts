import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunDirInUseError, RunStore } from '../../src/cookbook/run-store.js';

const fresh = () => new RunStore(mkdtempSync(join(tmpdir(), 'cookbook-store-')));

describe('RunStore', () => {
  it('writes metrics rows in the reference format, ints as ints and floats as floats', () => {
    const s = fresh();
    s.writeMetrics({ step: 0, epoch: 0, progress: 1, learning_rate: 4e-5, num_tokens: 12, train_mean_nll: 2.5 });
    expect(readFileSync(s.metricsJsonl, 'utf8')).toBe('{"step": 0, "epoch": 0, "progress": 1.0, "learning_rate": 4e-05, "num_tokens": 12, "train_mean_nll": 2.5}\n');
  });
  it('a rewritten step replaces its row and drops later rows (rolled back by a restore)', () => {
    const s = fresh();
    for (const step of [0, 1, 2, 3]) s.writeMetrics({ step, loss: step });
    s.writeMetrics({ step: 2, loss: 20 });
    expect(s.readMetrics()).toEqual([{ step: 0, loss: 0 }, { step: 1, loss: 1 }, { step: 2, loss: 20 }]);
    s.writeMetrics({ step: 2, loss: 20 });
    expect(s.readMetrics()).toHaveLength(3);
  });
  it('a restore truncates rows of undone steps', () => {
    const s = fresh();
    for (const step of [0, 1, 2, 3]) s.writeMetrics({ step, loss: step });
    s.truncateMetrics(2);
    expect(s.readMetrics()).toEqual([{ step: 0, loss: 0 }, { step: 1, loss: 1 }]);
    s.truncateMetrics(0);
    expect(s.readMetrics()).toEqual([]);
  });
  it('checkpoint rows keep the reference key order and are upserted by name', () => {
    const s = fresh();
    s.writeCheckpoint({ name: '000020', elapsed_tokens: 99, state_path: 'tinker://a/weights/000020', epoch: 0, batch: 20, sampler_path: 'tinker://a/sampler_weights/000020' });
    expect(readFileSync(s.checkpointsJsonl, 'utf8')).toBe(
      '{"name": "000020", "batch": 20, "epoch": 0, "state_path": "tinker://a/weights/000020", "sampler_path": "tinker://a/sampler_weights/000020", "elapsed_tokens": 99}\n',
    );
    s.writeCheckpoint({ name: '000020', batch: 20, epoch: 0, state_path: 'tinker://b/weights/000020' });
    s.writeCheckpoint({ name: 'final', epoch: 1, batch: 0, state_path: 'tinker://b/weights/final' });
    expect(s.readCheckpoints().map((r) => [r.name, r.state_path])).toEqual([
      ['000020', 'tinker://b/weights/000020'],
      ['final', 'tinker://b/weights/final'],
    ]);
  });
  it('claims a directory for one workflow; a retry by the same one is a no-op', () => {
    const s = fresh();
    s.init({ workflowId: 'sl-a', kind: 'sl', config: { learning_rate: 1, lora_rank: 8 } }, new Set(['learning_rate']));
    expect(readFileSync(s.configJson, 'utf8')).toBe('{\n  "learning_rate": 1.0,\n  "lora_rank": 8\n}');
    s.init({ workflowId: 'sl-a', kind: 'sl', config: {} }, new Set());
    expect(() => s.init({ workflowId: 'sl-b', kind: 'sl', config: {} }, new Set())).toThrow(RunDirInUseError);
    expect(s.read().workflowId).toBe('sl-a');
  });
});
