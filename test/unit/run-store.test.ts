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
  it('writes the reference loops\' int metrics as ints: progress/batch, token counts, trajectory totals, num_pairs', () => {
    const s = fresh();
    s.writeMetrics({
      step: 2, 'progress/batch': 2, 'optim/lr': 1, 'progress/done_frac': 1,
      'env/all/total_episodes': 12, 'env/all/total_turns': 12, 'env/all/total_ac_tokens': 96, 'env/all/total_ob_tokens': 210, 'env/all/total_cached_ob_tokens': 0,
      'env/gsm8k/total_episodes': 4, 'test/env/all/total_ob_tokens': 70, 'env/all/turns_per_episode': 1, 'env/all/reward/total': 0,
      'sampling_client/step_max': 2, 'sampling_client/step_min': 1, 'sampling_client/step_mean': 2, 'training_client/step': 2,
      'tokens/sampled': 96, 'tokens/trained': 306, 'tokens/cumulative/trained': 918, 'tokens/discarded/sampled': 0,
      'rollout_errors/total': 0, num_pairs: 4,
    });
    expect(readFileSync(s.metricsJsonl, 'utf8')).toBe(
      '{"step": 2, "progress/batch": 2, "optim/lr": 1.0, "progress/done_frac": 1.0, ' +
        '"env/all/total_episodes": 12, "env/all/total_turns": 12, "env/all/total_ac_tokens": 96, "env/all/total_ob_tokens": 210, "env/all/total_cached_ob_tokens": 0, ' +
        '"env/gsm8k/total_episodes": 4, "test/env/all/total_ob_tokens": 70, "env/all/turns_per_episode": 1.0, "env/all/reward/total": 0.0, ' +
        '"sampling_client/step_max": 2, "sampling_client/step_min": 1, "sampling_client/step_mean": 2.0, "training_client/step": 2, ' +
        '"tokens/sampled": 96, "tokens/trained": 306, "tokens/cumulative/trained": 918, "tokens/discarded/sampled": 0, ' +
        '"rollout_errors/total": 0.0, "num_pairs": 4}\n',
    );
  });
  it('writes every number of a checkpoint row as an int, nested loop state included', () => {
    const s = fresh();
    const tokens = { sampled: 96, prefill_cached: 0, prefill_uncached: 210, trained: 306 };
    s.writeCheckpoint({
      name: '000003', batch: 3, state_path: 'tinker://a/weights/000003', cumulative_tokens: tokens, discarded_tokens: { ...tokens, trained: 0 },
      next_step: 3, lora_rank: 16, resume_state: { rollout_errors: { counts: [['TypeError', 2]], groupsSkipped: 1 } },
    });
    expect(readFileSync(s.checkpointsJsonl, 'utf8')).toBe(
      '{"name": "000003", "batch": 3, "state_path": "tinker://a/weights/000003", ' +
        '"cumulative_tokens": {"sampled": 96, "prefill_cached": 0, "prefill_uncached": 210, "trained": 306}, ' +
        '"discarded_tokens": {"sampled": 96, "prefill_cached": 0, "prefill_uncached": 210, "trained": 0}, ' +
        '"next_step": 3, "lora_rank": 16, "resume_state": {"rollout_errors": {"counts": [["TypeError", 2]], "groupsSkipped": 1}}}\n',
    );
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
  it('a cache blob (no checksum record) replaces one written checked, and reads back as written', () => {
    const s = fresh();
    s.writeBlob('cache/a.json', '[1]');
    expect(() => s.writeCacheBlob('cache/a.json', '[2]')).not.toThrow();
    expect(s.readBlob('cache/a.json').toString('utf8')).toBe('[2]');
    s.writeCacheBlob('cache/b.json', '[3]');
    expect(s.readBlob('cache/b.json').toString('utf8')).toBe('[3]');
  });
});
