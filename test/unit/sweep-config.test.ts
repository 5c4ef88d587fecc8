// Sweep configs: the grid's product order, reproducible random points, point names, and errors
// that name the sweep key (resolved with the real SL schema and fixture files, as the CLI does).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatSweepTable, pointLine } from '../../src/cli/sweep.js';
import { resolveRun } from '../../src/cli/train.js';
import { bestIndex, countPoints, expandPoints, pointName, withParams } from '../../src/cookbook/config/sweep-points.js';
import type { SweepTable } from '../../src/workflows/sweep.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const slSmall = join(fixtures, 'sl_small.json');

const write = (cfg: unknown) => {
  const p = join(mkdtempSync(join(tmpdir(), 'sweep-cfg-')), 's.json');
  writeFileSync(p, JSON.stringify(cfg));
  return p;
};
const resolveSweep = (cfg: Record<string, unknown>, overrides: string[] = []) =>
  resolveRun('sweep', write({ kind: 'sl', base_file: slSmall, ...cfg }), overrides, { runsDir: mkdtempSync(join(tmpdir(), 'sweep-runs-')) });

describe('sweep points', () => {
  it('the grid is the cartesian product, first key slowest (itertools.product order)', () => {
    const points = expandPoints({ grid: { learning_rate: [1e-4, 3e-4], lora_rank: [8, 16, 32] } });
    expect(points.map((p) => p.params)).toEqual([
      { learning_rate: 1e-4, lora_rank: 8 },
      { learning_rate: 1e-4, lora_rank: 16 },
      { learning_rate: 1e-4, lora_rank: 32 },
      { learning_rate: 3e-4, lora_rank: 8 },
      { learning_rate: 3e-4, lora_rank: 16 },
      { learning_rate: 3e-4, lora_rank: 32 },
    ]);
    expect(points.map((p) => p.name)).toEqual([
      '000-learning_rate=0.0001_lora_rank=8',
      '001-learning_rate=0.0001_lora_rank=16',
      '002-learning_rate=0.0001_lora_rank=32',
      '003-learning_rate=0.0003_lora_rank=8',
      '004-learning_rate=0.0003_lora_rank=16',
      '005-learning_rate=0.0003_lora_rank=32',
    ]);
    expect(countPoints({ grid: { a: [1, 2], b: [1, 2, 3] }, max_runs: 4 })).toBe(4);
    expect(expandPoints({ grid: { a: [1, 2], b: [1, 2, 3] }, max_runs: 4 }).map((p) => p.index)).toEqual([0, 1, 2, 3]);
  });

  it('random points are a pure function of the seed, inside their ranges, and differ between seeds', () => {
    const space = { learning_rate: { log_uniform: [1e-5, 1e-2] as [number, number] }, 'dataset.batch_size': { choice: [2, 4, 8] }, adam_beta1: { uniform: [0.8, 0.95] as [number, number] } };
    const a = expandPoints({ random: { n: 50, seed: 7, space } });
    const b = expandPoints({ random: { n: 50, seed: 7, space } });
    expect(b).toEqual(a);
    expect(expandPoints({ random: { n: 50, seed: 8, space } }).map((p) => p.params)).not.toEqual(a.map((p) => p.params));
    // The first samples do not depend on how many are drawn.
    expect(expandPoints({ random: { n: 3, seed: 7, space } })).toEqual(a.slice(0, 3));
    for (const { params } of a) {
      expect(params.learning_rate).toBeGreaterThanOrEqual(1e-5);
      expect(params.learning_rate).toBeLessThan(1e-2);
      expect([2, 4, 8]).toContain(params['dataset.batch_size']);
      expect(params.adam_beta1).toBeGreaterThanOrEqual(0.8);
      expect(params.adam_beta1).toBeLessThan(0.95);
    }
    // log_uniform spreads over decades: some draws below 1e-4 and some above 1e-3.
    expect(a.some((p) => (p.params.learning_rate as number) < 1e-4) && a.some((p) => (p.params.learning_rate as number) > 1e-3)).toBe(true);
    expect(new Set(a.map((p) => p.params['dataset.batch_size'])).size).toBe(3);
  });

  it('grid × random: each grid point is crossed with the same samples', () => {
    const points = expandPoints({ grid: { lora_rank: [8, 16] }, random: { n: 2, seed: 1, space: { learning_rate: { uniform: [0, 1] } } } });
    expect(points.map((p) => p.params.lora_rank)).toEqual([8, 8, 16, 16]);
    expect(points[0].params.learning_rate).toBe(points[2].params.learning_rate);
    expect(points[1].params.learning_rate).toBe(points[3].params.learning_rate);
  });

  it('names are path-safe and stable; dotted keys set nested values without touching the original', () => {
    expect(pointName(12, { 'dataset.batch_size': 4, renderer_name: 'qwen3/x y' })).toBe('012-dataset.batch_size=4_renderer_name=qwen3-x-y');
    const base = { dataset: { batch_size: 2, file_path: 'a' }, learning_rate: 1 };
    const out = withParams(base, { 'dataset.batch_size': 8, learning_rate: 2 });
    expect(out).toEqual({ dataset: { batch_size: 8, file_path: 'a' }, learning_rate: 2 });
    expect(base.dataset.batch_size).toBe(2);
  });

  it('best: min or max of the finite values, first on ties, none without values', () => {
    const rows = [
      { index: 0, value: 2 },
      { index: 1, value: null },
      { index: 2, value: 1 },
      { index: 3, value: 1 },
      { index: 4, value: Number.NaN },
    ];
    expect(bestIndex(rows, 'min')).toBe(2);
    expect(bestIndex(rows, 'max')).toBe(0);
    expect(bestIndex([{ index: 0, value: null }], 'min')).toBeUndefined();
  });
});

describe('sweep config resolution', () => {
  it('resolves the base file and validates every point with the paradigm schema', () => {
    const r = resolveSweep({ grid: { learning_rate: [0.01, 0.02], 'dataset.batch_size': [2, 4] }, max_concurrent: 2, overrides: ['max_steps=3'] });
    expect(r.kind).toBe('sweep');
    expect(r.workflowId).toMatch(/^sweep-s-\d{8}-\d{6}$/);
    expect(r.config.model_name).toBe('tiny-qwen3');
    expect(r.config.base.max_steps).toBe(3);
    expect(r.config.base.dataset.file_path).toBe(join(import.meta.dirname, '..', '..', 'data', 'example_chat_small.jsonl'));
    expect(r.config.base_file).toBeUndefined();
    expect(r.config).toMatchObject({ metric: 'train_mean_nll', mode: 'min', max_concurrent: 2, points_per_workflow_run: 100 });
  });

  it('errors name the sweep key, the value and the point', () => {
    expect(() => resolveSweep({ grid: { learning_rat: [0.1] } })).toThrow(/grid\.learning_rat: not a config key of a sl run/);
    expect(() => resolveSweep({ grid: { 'dataset.batchsize': [2] } })).toThrow(/grid\.dataset\.batchsize: not a config key of a sl run/);
    expect(() => resolveSweep({ grid: { learning_rate: [0.1, -1] } })).toThrow(/grid\.learning_rate: value -1 \(point 001-learning_rate=-1\): /);
    expect(() => resolveSweep({ random: { n: 4, space: { lora_rank: { uniform: [1, 64] } } } })).toThrow(/random\.space\.lora_rank: value [\d.]+ \(point 00\d-lora_rank=[\d.]+\): /);
    expect(() => resolveSweep({ grid: { log_path: ['x'] } })).toThrow(/grid\.log_path: set by the sweep/);
    expect(() => resolveSweep({ grid: { lora_rank: [8] }, random: { n: 1, space: { lora_rank: { choice: [8] } } } })).toThrow(/random\.space\.lora_rank: already a grid key/);
    expect(() => resolveSweep({ random: { n: 1, space: { learning_rate: { log_uniform: [0, 1] } } } })).toThrow(/random\.space\.learning_rate\.log_uniform: log_uniform needs low > 0/);
    expect(() => resolveSweep({ grid: { learning_rate: [] } })).toThrow(/grid\.learning_rate: give at least one value/);
    expect(() => resolveSweep({})).toThrow(/grid: a sweep needs a grid, a random search, or both/);
    expect(() => resolveSweep({ grid: { lora_rank: [8] }, base: { model_name: 'x' } })).toThrow(/base_file: set exactly one of base and base_file/);
    expect(() => resolveSweep({ grid: { lora_rank: [8] }, overrides: ['learning_rate=-2'] })).toThrow(/sl_small\.json: learning_rate: /);
    expect(() => resolveSweep({ grid: { 'dataset.file_path': ['other.jsonl'] } })).toThrow(/grid\.dataset\.file_path \(point 000-dataset\.file_path=other\.jsonl\): dataset\.file_path: .*other\.jsonl does not exist/);
    expect(() => resolveSweep({ grid: { 'dataset.file_path': ['sl_small.json'] } })).toThrow(/grid\.dataset\.file_path: point 000-dataset\.file_path=sl_small\.json changes when its config is resolved/);
    expect(() => resolveSweep({ grid: { a: Array.from({ length: 40 }, (_, i) => i), b: Array.from({ length: 40 }, (_, i) => i) } })).toThrow(/1600 points; a sweep holds at most 1000/);
  });

  it('an inline base names its errors under base.', () => {
    const p = write({ kind: 'sl', base: { model_name: 'tiny-qwen3', learning_rate: 'fast' }, grid: { lora_rank: [8] } });
    expect(() => resolveRun('sweep', p, [])).toThrow(/base\.learning_rate: /);
  });
});

describe('sweep table', () => {
  const t: SweepTable = {
    metric: 'test/nll',
    mode: 'min',
    best: 1,
    points: [
      { index: 0, name: '000-learning_rate=0.01', workflowId: 's/000', params: { learning_rate: 0.01 }, status: 'completed', steps: 4, value: 2.5 },
      { index: 1, name: '001-learning_rate=0.02', workflowId: 's/001', params: { learning_rate: 0.02 }, status: 'completed', steps: 4, value: 1.25 },
      { index: 2, name: '002-learning_rate=0.04', workflowId: 's/002', params: { learning_rate: 0.04 }, status: 'running', steps: null, value: null },
    ],
  };
  it('ranks by the metric, marks the best, and puts points without a value last', () => {
    const lines = formatSweepTable(t).split('\n');
    expect(lines[0]).toMatch(/^\s+point\s+learning_rate\s+status\s+steps\s+test\/nll$/);
    expect(lines[1]).toMatch(/^\*\s+001-learning_rate=0\.02\s+0\.02\s+completed\s+4\s+1\.25$/);
    expect(lines[2]).toMatch(/^\s+000-learning_rate=0\.01\s+0\.01\s+completed\s+4\s+2\.5$/);
    expect(lines[3]).toMatch(/002-learning_rate=0\.04\s+0\.04\s+running\s+–$/);
    expect(lines[4]).toBe('best: 001-learning_rate=0.02 (test/nll 1.25, min)');
    expect(formatSweepTable({ ...t, mode: 'max', best: 0 }).split('\n')[1]).toMatch(/^\*\s+000-/);
    expect(pointLine(t.points[1], 1, 3, 'test/nll')).toBe('[1/3] 001-learning_rate=0.02 completed · 4 steps · test/nll 1.25');
  });
});
