// The distill config: reference defaults, the shipped example configs, errors naming the path.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRun, TRAINABLE_KINDS } from '../../../src/cli/train.js';
import { DistillConfigSchema } from '../../../src/cookbook/config/distill.js';

const repo = join(import.meta.dirname, '..', '..', '..');
const runsDir = mkdtempSync(join(tmpdir(), 'distill-config-'));
const minimal = { model_name: 'tiny-qwen3', max_tokens: 8, dataset_configs: [{ teacher_config: { base_model: 'tiny-qwen3' }, groups_per_batch: 2 }] };

describe('distill config', () => {
  it('has the reference defaults (§5.1)', () => {
    const cfg = DistillConfigSchema.parse(minimal);
    expect(cfg).toMatchObject({
      mode: 'on_policy',
      temperature: 1.0,
      compute_post_kl: false,
      lora_rank: 32,
      kl_penalty_coef: 1.0,
      kl_discount_factor: 0.0,
      loss_fn: 'importance_sampling',
      loss_fn_config: null,
      num_substeps: 1,
      eval_every: 20,
      save_every: 20,
      load_checkpoint_path: null,
      max_steps: null,
    });
    expect(cfg.dataset_configs[0]).toEqual({
      dataset: { group_size: 4, max_prompt_tokens: 1024 },
      teacher_config: { base_model: 'tiny-qwen3', load_checkpoint_path: null },
      groups_per_batch: 2,
    });
    expect(cfg.off_policy).toEqual({ prompts_per_shard: 8, samples_per_prompt: 1, max_parallel_shards: 8, output_name: 'teacher_conversations.jsonl' });
  });

  it('resolves the shipped configs through the CLI, prompt paths made absolute', () => {
    expect(TRAINABLE_KINDS.distill.workflowType).toBe('distillWorkflow');
    for (const [file, mode] of [['distill_on_policy.json', 'on_policy'], ['distill_teacher_samples.json', 'off_policy_sample']]) {
      const r = resolveRun('distill', join(repo, 'configs', file), [], { runsDir });
      expect(r.config.mode).toBe(mode);
      expect(r.config.dataset_configs[0].dataset.file_path).toBe(join(repo, 'data', 'distill_prompts.jsonl'));
      expect(r.run.kind).toBe('distill');
    }
  });

  it('takes any loss the RL loop takes (the reference types loss_fn as LossFnType)', () => {
    for (const loss of ['importance_sampling', 'ppo', 'cispo', 'dro', 'gspo', 'stable_reinforce']) {
      expect(DistillConfigSchema.parse({ ...minimal, loss_fn: loss }).loss_fn).toBe(loss);
    }
    const bad = DistillConfigSchema.safeParse({ ...minimal, loss_fn: 'nll' });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0].path).toEqual(['loss_fn']);
  });

  it('names the offending path in errors', () => {
    const bad = join(runsDir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ ...minimal, max_tokens: undefined, dataset_configs: [{ ...minimal.dataset_configs[0], dataset: { file_path: 'nope.jsonl' } }] }));
    expect(() => resolveRun('distill', bad, [], { runsDir })).toThrow(/max_tokens/);
    writeFileSync(bad, JSON.stringify({ ...minimal, dataset_configs: [{ ...minimal.dataset_configs[0], dataset: { file_path: 'nope.jsonl' } }] }));
    expect(() => resolveRun('distill', bad, [], { runsDir })).toThrow(/dataset_configs\.0\.dataset\.file_path: .*nope\.jsonl does not exist/);
    expect(() => resolveRun('distill', bad, ['mode=sample'], { runsDir })).toThrow(/mode/);
  });
});
