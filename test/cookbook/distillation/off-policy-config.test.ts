// The distill_off_policy config: the shipped configs resolve with the reference's defaults, bad
// values are refused naming their path, and a pipeline can fine-tune a teacher then distill from it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkRunData, resolveRun } from '../../../src/cli/train.js';

const root = join(import.meta.dirname, '..', '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'cookbook-off-policy-config-'));
const config = (name: string) => join(root, 'configs', name);

describe('distill_off_policy config', () => {
  it("the shipped configs resolve, with the reference's defaults where they say nothing", async () => {
    const r = resolveRun('distill_off_policy', config('distill_off_policy.json'), [`log_path=${join(dir, 'single')}`]);
    expect(r.config).toMatchObject({ recipe_name: 'distillation_off_policy', n_teacher_targets: 20, teacher_concurrency: 64, lora_rank: 16 });
    expect(r.config.dataset_configs[0].weight).toBe(1);
    expect(r.config.dataset_configs[0].dataset.file_path).toBe(join(root, 'data', 'example_chat.jsonl'));
    await expect(checkRunData(r)).resolves.toMatchObject({ steps: 20 });
    const multi = resolveRun('distill_off_policy', config('distill_off_policy_multi.json'), [`log_path=${join(dir, 'multi')}`]);
    expect(multi.config.dataset_configs.map((d: { dataset: { file_path: string } }) => d.dataset.file_path)).toEqual([join(root, 'data', 'example_chat.jsonl'), join(root, 'data', 'example_arithmetic.jsonl')]);
    // Defaults of the reference's Config where the file is silent.
    const bare = join(dir, 'bare.json');
    writeFileSync(bare, JSON.stringify({ model_name: 'tiny-qwen3', dataset_configs: [{ dataset: { file_path: join(root, 'data', 'example_chat.jsonl'), batch_size: 64 }, teacher_config: { base_model: 'tiny-qwen3' } }] }));
    expect(resolveRun('distill_off_policy', bare, [`log_path=${join(dir, 'bare')}`]).config).toMatchObject({ batch_size: 64, save_every: 10, eval_every: 20, lora_rank: 32, n_teacher_targets: 20 });
  });

  it('refuses what the reference refuses, naming the path', () => {
    const run = (overrides: string[]) => () => resolveRun('distill_off_policy', config('distill_off_policy_multi.json'), [`log_path=${join(dir, 'bad')}`, ...overrides]);
    expect(run(['batch_size=1'])).toThrow(/batch_size.*batch_size \(1\) must be >= number of domains \(2\)/);
    expect(run(['dataset_configs.1.weight=0'])).toThrow(/dataset_configs\.1\.weight/);
    expect(run(['n_teacher_targets=0'])).toThrow(/n_teacher_targets/);
    expect(run(['dataset_configs.0.teacher=x'])).toThrow(/dataset_configs\.0.*teacher/);
    expect(run(['mode=on_policy'])).toThrow(/mode/);
  });

  it('a pipeline fine-tunes the teacher, then distills the base model from its sampler weights', () => {
    const r = resolveRun('pipeline', config('pipeline_distill_topk.json'), [`log_path=${join(dir, 'pipeline')}`]);
    expect(r.config.stages.map((s: { kind: string }) => s.kind)).toEqual(['sl', 'distill_off_policy']);
    expect(r.config.stages[1].init_from).toBe('base');
    expect(r.config.stages[1].config.dataset_configs[0].teacher_config.load_checkpoint_path).toBe('@stage:0/sampler');
  });
});
