// RL parity with cookbook 0.6.1, the pure parts: config names, defaults and errors naming the path;
// the streaming-minibatch partition; the datum each loss receives.
import { describe, expect, it } from 'vitest';
import type { Datum } from '../../src/backends/types.js';
import { RLConfigSchema, trainingLossFn } from '../../src/cookbook/config/rl.js';
import { datumForLoss, streamMinibatchRanges } from '../../src/cookbook/rl/data.js';

const base = { model_name: 'tiny-qwen3', dataset: { kind: 'arithmetic', batch_size: 4, group_size: 2, n_batches: 2 }, max_tokens: 4 };
const issues = (extra: Record<string, unknown>) => {
  const r = RLConfigSchema.safeParse({ ...base, ...extra });
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('RL config: 0.6.1 names and defaults', () => {
  it('defaults as the reference Config: importance_sampling, no streaming, one epoch', () => {
    const cfg = RLConfigSchema.parse(base);
    expect(cfg.loss_fn).toBe('importance_sampling');
    expect(cfg.loss_fn_config).toBeNull();
    expect(cfg.num_substeps).toBe(1);
    expect(cfg.stream_minibatch_config).toBeNull();
    expect(cfg.num_epochs).toBe(1);
  });

  it('accepts gspo with clip thresholds and streaming minibatches', () => {
    const cfg = RLConfigSchema.parse({
      ...base,
      loss_fn: 'gspo',
      loss_fn_config: { clip_low_threshold: 0.9, clip_high_threshold: 1.1 },
      num_substeps: 2,
      num_epochs: 3,
      stream_minibatch_config: { groups_per_batch: 4, num_minibatches: 2 },
    });
    expect(cfg.loss_fn).toBe('gspo');
    expect(cfg.stream_minibatch_config).toEqual({ groups_per_batch: 4, num_minibatches: 2 });
    expect(cfg.num_epochs).toBe(3);
  });

  it('refuses what it cannot run, naming the config path', () => {
    // stable_reinforce is valid (hosted Tinker serves it; the cookbook sends the provenance it needs)
    expect(issues({ loss_fn: 'stable_reinforce' })).toEqual([]);
    expect(issues({ loss_fn: 'hinge' })[0]).toMatch(/^loss_fn: /);
    expect(issues({ num_epochs: 0 })[0]).toMatch(/^num_epochs: /);
    expect(issues({ num_substeps: 3, stream_minibatch_config: { groups_per_batch: 4, num_minibatches: 1 } })).toEqual([
      'stream_minibatch_config.groups_per_batch: must be divisible by num_substeps (3)',
    ]);
    expect(issues({ num_substeps: 2, stream_minibatch_config: { groups_per_batch: 4, num_minibatches: 4 } })).toEqual([
      'stream_minibatch_config.num_minibatches: must divide groups_per_batch / num_substeps (2)',
    ]);
    // Async with streaming minibatches, as 0.6.1: the same divisibility rules.
    expect(issues({ async_config: { max_steps_off_policy: 1, groups_per_batch: 4 }, stream_minibatch_config: { groups_per_batch: 4, num_minibatches: 2 } })).toEqual([]);
    expect(issues({ num_substeps: 3, async_config: { max_steps_off_policy: 1, groups_per_batch: 4 }, stream_minibatch_config: { groups_per_batch: 4, num_minibatches: 1 } })).toEqual([
      'stream_minibatch_config.groups_per_batch: must be divisible by num_substeps (3)',
    ]);
    expect(issues({ stream_minibatch_config: { groups_per_batch: 4 } })[0]).toMatch(/^stream_minibatch_config\.num_minibatches: /);
  });

  it("async runs train with AsyncConfig.loss_fn (default stable_reinforce); a conflicting Config.loss_fn is refused, as 0.6.1's main()", () => {
    const async_config = { max_steps_off_policy: 1, groups_per_batch: 4 };
    const cfg = RLConfigSchema.parse({ ...base, async_config });
    expect(cfg.async_config?.loss_fn).toBe('stable_reinforce');
    expect(trainingLossFn(cfg)).toBe('stable_reinforce');
    expect(trainingLossFn(RLConfigSchema.parse({ ...base, loss_fn: 'ppo' }))).toBe('ppo');
    // Config.loss_fn at its default, or equal to the async one: no conflict.
    expect(trainingLossFn(RLConfigSchema.parse({ ...base, loss_fn: 'ppo', async_config: { ...async_config, loss_fn: 'ppo' } }))).toBe('ppo');
    expect(issues({ loss_fn: 'gspo', async_config })).toEqual([
      "loss_fn: loss_fn='gspo' conflicts with async_config.loss_fn='stable_reinforce'; async runs train with async_config.loss_fn, so set the loss there",
    ]);
    // A config stored before AsyncConfig had a loss trained with its own.
    expect(trainingLossFn({ loss_fn: 'ppo', async_config: {} })).toBe('ppo');
  });
});

describe('streaming minibatch partition', () => {
  it('cuts the groups in order into substeps of minibatches', () => {
    expect(streamMinibatchRanges(4, 2, 2)).toEqual([
      [[0, 1], [1, 2]],
      [[2, 3], [3, 4]],
    ]);
    expect(streamMinibatchRanges(6, 1, 3)).toEqual([[[0, 2], [2, 4], [4, 6]]]);
    expect(streamMinibatchRanges(6, 3, 1)).toEqual([[[0, 2]], [[2, 4]], [[4, 6]]]);
  });
  it('refuses partitions the reference asserts against', () => {
    expect(() => streamMinibatchRanges(4, 3, 1)).toThrow(/divisible by num_substeps 3/);
    expect(() => streamMinibatchRanges(4, 2, 4)).toThrow(/divisible by num_minibatches 4/);
  });
});

describe('the datum each loss receives', () => {
  const f = (data: number[]) => ({ data, dtype: 'float32' as const, shape: [data.length] });
  const datum: Datum = {
    model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2, 3] }] },
    loss_fn_inputs: {
      target_tokens: { data: [2, 3, 4], dtype: 'int64', shape: [3] },
      logprobs: f([0, -0.5, -0.25]),
      advantages: f([0, 1, 1]),
      mask: f([0, 1, 1]),
    },
  };
  it('keeps the mask client-side, and gives gspo its sequence_ratio_mask over the action tokens', () => {
    expect(Object.keys(datumForLoss(datum, 'ppo').loss_fn_inputs).sort()).toEqual(['advantages', 'logprobs', 'target_tokens']);
    const gspo = datumForLoss(datum, 'gspo');
    expect(Object.keys(gspo.loss_fn_inputs).sort()).toEqual(['advantages', 'logprobs', 'sequence_ratio_mask', 'target_tokens']);
    expect(gspo.loss_fn_inputs.sequence_ratio_mask.data).toEqual([0, 1, 1]);
  });
});
