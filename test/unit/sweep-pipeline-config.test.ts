// Pipeline sweeps' configs, resolved with the real schemas and fixture files as the CLI does: keys
// `stages.<index>.<config key>` land in that stage's config only, every point's changed stage is
// validated, and each error names the sweep key or config path. Also the pure helpers the sweep
// workflow uses for pipeline points and forwarded `set`s.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatSetResult } from '../../src/cli/sweep.js';
import { resolveRun } from '../../src/cli/train.js';
import type { ResolvedSweepConfig } from '../../src/cookbook/config/sweep.js';
import { expandPoints, metricSubdir, pointConfig, withHotSettings, withParam } from '../../src/cookbook/config/sweep-points.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const pipelineSmall = join(fixtures, 'pipeline_small.json');

const write = (cfg: unknown) => {
  const p = join(mkdtempSync(join(tmpdir(), 'sweep-pipe-cfg-')), 's.json');
  writeFileSync(p, JSON.stringify(cfg));
  return p;
};
const resolvePipelineSweep = (cfg: Record<string, unknown>) =>
  resolveRun('sweep', write({ kind: 'pipeline', base_file: pipelineSmall, grid: { 'stages.1.learning_rate': [0.01, 0.03] }, ...cfg }), [], { runsDir: mkdtempSync(join(tmpdir(), 'sweep-pipe-runs-')) });

describe('pipeline sweep configs', () => {
  it('resolves the pipeline and puts each value into its stage only; the metric stage defaults to the last', () => {
    const { config } = resolvePipelineSweep({ grid: { 'stages.1.learning_rate': [0.01, 0.03], 'stages.0.lora_rank': [4] } });
    expect(config.kind).toBe('pipeline');
    expect(config.model_name).toBe('tiny-qwen3');
    expect(config.base.stages.map((s: { kind: string }) => s.kind)).toEqual(['sl', 'dpo']);
    const points = expandPoints(config);
    expect(points.map((p) => p.name)).toEqual(['000-stages.1.learning_rate=0.01_stages.0.lora_rank=4', '001-stages.1.learning_rate=0.03_stages.0.lora_rank=4']);
    const point = pointConfig('pipeline', config.base, points[1].params) as { stages: Array<{ config: Record<string, unknown> }> };
    expect(point.stages[1].config.learning_rate).toBe(0.03);
    expect(point.stages[0].config.learning_rate).toBe(0.01); // sl_small's own
    expect(point.stages[0].config.lora_rank).toBe(4);
    expect(point.stages[1].config.lora_rank).toBe(8);
    expect(config.base.stages[1].config.learning_rate).toBe(0.02); // the base is not changed
    expect(metricSubdir(config as ResolvedSweepConfig)).toBe('1-dpo');
    expect(metricSubdir(resolvePipelineSweep({ metric_stage: 0 }).config as ResolvedSweepConfig)).toBe('0-sl');
    // Stage paths are resolved against the pipeline's own files, as `cookbook train pipeline` does.
    expect(config.base.stages[0].config.dataset.file_path).toBe(join(fixtures, '..', '..', 'data', 'example_chat_small.jsonl'));
  });

  it('random-search keys address stages the same way', () => {
    const { config } = resolvePipelineSweep({ grid: undefined, random: { n: 3, seed: 1, space: { 'stages.1.dpo_beta': { uniform: [0.1, 0.5] } } } });
    for (const p of expandPoints(config)) {
      const beta = (pointConfig('pipeline', config.base, p.params) as any).stages[1].config.dpo_beta;
      expect(beta).toBe(p.params['stages.1.dpo_beta']);
      expect(beta).toBeGreaterThanOrEqual(0.1);
    }
  });

  it.each([
    [{ grid: { learning_rate: [0.01] } }, /grid\.learning_rate: a pipeline sweep key names a stage's config key as stages\.<index>\.<key> \(e\.g\. stages\.1\.learning_rate\)/],
    [{ grid: { 'stages.2.learning_rate': [0.01] } }, /grid\.stages\.2\.learning_rate: the pipeline has no stage 2 \(stages 0–1\)/],
    [{ grid: { 'stages.1.learnig_rate': [0.01] } }, /grid\.stages\.1\.learnig_rate: not a config key of stage 1 \(dpo\)/],
    [{ grid: { 'stages.1.learning_rate': [0.01, -1] } }, /grid\.stages\.1\.learning_rate: value -1 \(point 001-stages\.1\.learning_rate=-1\)/],
    [{ grid: { 'stages.0.model_name': ['tiny-llama'] } }, /grid\.stages\.0\.model_name: each stage trains the previous stage's weights/],
    [{ grid: { 'stages.1.log_path': ['/tmp/x'] } }, /grid\.stages\.1\.log_path: set by the pipeline/],
    [{ random: { n: 2, space: { 'stages.1.lora_rank': { choice: [0] } } } }, /random\.space\.stages\.1\.lora_rank: value 0/],
    [{ metric_stage: 2 }, /metric_stage: 2 is not a stage of the pipeline \(stages 0–1\)/],
  ])('names the bad key: %j', (cfg, message) => {
    expect(() => resolvePipelineSweep(cfg)).toThrow(message);
  });

  it('metric_stage belongs to pipeline sweeps only; a bad base names the pipeline file', () => {
    const sl = write({ kind: 'sl', base_file: join(fixtures, 'sl_small.json'), grid: { learning_rate: [0.01] }, metric_stage: 0 });
    expect(() => resolveRun('sweep', sl, [])).toThrow(/metric_stage: only a pipeline sweep has stages/);
    // A stage's error names the stage's own file (as for `cookbook train pipeline`); a pipeline-level one the pipeline file.
    const badStage = write({ stages: [{ kind: 'sl', config_file: join(fixtures, 'sl_small.json'), overrides: ['learning_rate=-1'] }] });
    expect(() => resolveRun('sweep', write({ kind: 'pipeline', base_file: badStage, grid: { 'stages.0.lora_rank': [4] } }), [])).toThrow(/sl_small\.json: stages\.0\.config\.learning_rate/);
    const noStages = write({ stages: [] });
    expect(() => resolveRun('sweep', write({ kind: 'pipeline', base_file: noStages, grid: { 'stages.0.lora_rank': [4] } }), [])).toThrow(`${noStages}: stages`);
  });
});

describe('pipeline sweep helpers', () => {
  it('withParam indexes arrays and copies what it changes', () => {
    const base = { stages: [{ config: { a: 1 } }, { config: { a: 2 } }] };
    const changed = withParam(base, 'stages.1.config.a', 5) as typeof base;
    expect(changed.stages).toEqual([{ config: { a: 1 } }, { config: { a: 5 } }]);
    expect(base.stages[1].config.a).toBe(2);
    expect(changed.stages[0]).toBe(base.stages[0]);
  });

  it('withHotSettings carries eval_every/save_every into configs that have them, never lr_multiplier', () => {
    expect(withHotSettings('sl', { eval_every: 3, save_every: 4, learning_rate: 0.1 }, { lr_multiplier: 0.5, save_every: 2 } as any)).toEqual({ eval_every: 3, save_every: 2, learning_rate: 0.1 });
    const pipeline = { stages: [{ kind: 'sl', config: { eval_every: 3, save_every: 4 } }, { kind: 'distill', config: { mode: 'off_policy_sample' } }] };
    expect(withHotSettings('pipeline', pipeline, { eval_every: 0 })).toEqual({ stages: [{ kind: 'sl', config: { eval_every: 0, save_every: 4 } }, { kind: 'distill', config: { mode: 'off_policy_sample' } }] });
    expect(withHotSettings('sl', pipeline, {})).toBe(pipeline);
  });

  it('formatSetResult lists each run a sweep forwarded to, nested through a pipeline', () => {
    const settings = { lr_multiplier: 0.5, eval_every: 0, save_every: 0 };
    expect(formatSetResult('run', { settings, fromStep: 3 })).toBe('run: hot settings now {"lr_multiplier":0.5,"eval_every":0,"save_every":0}, from step 3');
    expect(
      formatSetResult('sw', { settings, fromStep: 1, forwarded: [{ workflowId: 'sw/000', fromStep: 0, forwarded: [{ workflowId: 'sw/000/1-dpo', fromStep: 2 }] }, { workflowId: 'sw/001', fromStep: null }] }).split('\n'),
    ).toEqual(['sw: hot settings now {"lr_multiplier":0.5,"eval_every":0,"save_every":0}', '  → sw/000: forwarded', '    → sw/000/1-dpo: from step 2', '  → sw/001: already ended, unchanged']);
    expect(formatSetResult('sw', { settings, fromStep: 0, forwarded: [] })).toContain('(no run going now)');
  });
});
