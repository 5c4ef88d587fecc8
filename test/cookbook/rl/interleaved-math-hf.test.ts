// The RL dataset builders of issue #54 against goldens from the reference's own classes
// (test/fixtures/datasets_gen_goldens.py): InterleavedRLDataset's schedule, math_rl's Polaris and
// DeepMath datasets read from a Hugging Face hub cache folder (the rows, batches, tags and grading),
// and both through buildRLDatasets with the config errors naming their paths.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RLConfigSchema } from '../../../src/cookbook/config/rl.js';
import { MathEnv } from '../../../src/cookbook/rl/envs/math.js';
import { buildRLDatasets, RLDatasetConfigSchema } from '../../../src/cookbook/rl/datasets.js';
import { InterleavedRLDataset } from '../../../src/cookbook/rl/interleaved.js';
import type { ProblemGroupBuilder } from '../../../src/cookbook/rl/problem-env.js';
import type { EnvGroupBuilder, RLDataset } from '../../../src/cookbook/rl/types.js';
import { writeParquet } from '../hf-fixtures.js';

const fixtures = path.join(import.meta.dirname, '..', '..', 'fixtures');
const goldens = JSON.parse(readFileSync(path.join(fixtures, 'datasets_goldens.json'), 'utf8'));

/** Batch i holds sizes[i] "groups", each the string "<source>:<batch>:<slot>" (as the golden script's FakeRLDataset). */
const fakeSource = (name: string, sizes: number[]): RLDataset => ({
  length: sizes.length,
  getBatch: (i) => Array.from({ length: sizes[i] }, (_, j) => `${name}:${i}:${j}`) as unknown as EnvGroupBuilder[],
});

/** A dataset in the Hugging Face hub cache layout (datasets--owner--name/{refs/main, snapshots/<commit>/data/…}). */
function hubCacheDataset(root: string, id: string, rows: Array<Record<string, unknown>>): void {
  const repo = path.join(root, `datasets--${id.replace('/', '--')}`);
  const commit = 'c'.repeat(40);
  mkdirSync(path.join(repo, 'refs'), { recursive: true });
  writeFileSync(path.join(repo, 'refs', 'main'), commit);
  writeParquet(path.join(repo, 'snapshots', commit, 'data', 'train-00000-of-00001.parquet'), rows);
}

describe('InterleavedRLDataset (the reference _InterleavedRLDataset)', () => {
  it.each(goldens.interleaved_rl.map((c: { seed: number; total_batches: number | null }) => [c.seed, c.total_batches, c]) as Array<[number, number | null, unknown]>)(
    'seed %s, total_batches %s: the same length and the same (source, batch, group) in every slot',
    (_seed, _total, c) => {
      const { sources, weights, groups_per_batch, total_batches, seed, length, batches } = c as {
        sources: number[][];
        weights: number[];
        groups_per_batch: number;
        total_batches: number | null;
        seed: number;
        length: number;
        batches: string[][];
      };
      const ds = new InterleavedRLDataset(
        sources.map((sizes, i) => fakeSource(`s${i}`, sizes)),
        { weights, groupsPerBatch: groups_per_batch, totalBatches: total_batches, seed },
      );
      expect(ds.length).toBe(length);
      expect(Array.from({ length }, (_, i) => ds.getBatch(i))).toEqual(batches);
    },
  );

  it('refuses what the reference refuses, naming the config path', () => {
    const src = fakeSource('s0', [2, 2]);
    expect(() => new InterleavedRLDataset([src], { weights: [0], groupsPerBatch: 2, totalBatches: null, seed: 0 })).toThrow(/dataset\.weights\.0: every weight must be positive/);
    expect(() => new InterleavedRLDataset([src, src], { weights: [1], groupsPerBatch: 2, totalBatches: null, seed: 0 })).toThrow(/dataset\.weights: 1 weights for 2 sources/);
    expect(() => new InterleavedRLDataset([fakeSource('e', [])], { weights: [1], groupsPerBatch: 2, totalBatches: null, seed: 0 })).toThrow(/dataset\.sources\.0: the source has 0 batches/);
    // A short batch that is not the last cannot be addressed by flat index.
    const ragged = new InterleavedRLDataset([fakeSource('r', [3, 1, 3])], { weights: [1], groupsPerBatch: 7, totalBatches: 1, seed: 0 });
    expect(() => ragged.getBatch(0)).toThrow(/dataset\.sources\.0: batch 1 has 1 groups, expected 3 \(as batch 0\)/);
  });
});

describe("math_rl's Polaris and DeepMath datasets", () => {
  const cache = mkdtempSync(path.join(tmpdir(), 'cookbook-hub-cache-'));
  beforeAll(() => {
    const asText = (rows: Array<Record<string, unknown>>) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)])));
    hubCacheDataset(cache, 'POLARIS-Project/Polaris-Dataset-53K', asText(goldens.math_rl.polaris_rows));
    hubCacheDataset(cache, 'zwhe99/DeepMath-103K', asText(goldens.math_rl.deepmath_rows));
    process.env.HF_HUB_CACHE = cache;
    process.env.HF_HUB_OFFLINE = '1';
  });

  type Case = { kind: 'polaris' | 'deepmath'; seed: number; batch_size: number; group_size: number; batches: Array<Array<{ question: string; answer: string; group_size: number; tag: string[] }>> };
  it.each(goldens.math_rl.cases.map((c: Case) => [c.kind, c.seed, c]) as Array<[string, number, Case]>)('%s, seed %s: the reference batches (rows without a problem or answer dropped in their batch)', async (_k, _s, c) => {
    const { kind, seed, batch_size, group_size, batches } = c as Case;
    const { train, test } = await buildRLDatasets({ kind, batch_size, group_size, seed }, 'tiny-qwen3');
    expect(test).toBeUndefined();
    expect(train.length).toBe(batches.length);
    const ours = Array.from({ length: train.length }, (_, i) =>
      train.getBatch(i).map((b) => {
        const builder = b as ProblemGroupBuilder;
        const env = builder.envThunk() as MathEnv;
        expect(env.convoPrefix).toEqual([]);
        return { question: env.getQuestion(), answer: env.getReferenceAnswer(), group_size: builder.numEnvs, tag: builder.loggingTags() };
      }),
    );
    expect(ours).toEqual(batches);
  });

  it("grades as the reference's MathEnv (sympy)", async () => {
    const { train } = await buildRLDatasets({ kind: 'deepmath', batch_size: 2, group_size: 1 }, 'tiny-qwen3');
    const renderer = (train.getBatch(0)[0] as ProblemGroupBuilder).envThunk() as MathEnv;
    for (const g of goldens.math_rl.grading as Array<{ answer: string; sample: string; format: boolean; correct: boolean }>) {
      const env = new MathEnv('p', g.answer, renderer.renderer);
      expect([g.answer, g.sample, env.checkFormat(g.sample), await env.checkAnswer(g.sample)]).toEqual([g.answer, g.sample, g.format, g.correct]);
    }
  });

  it('an interleaved mix of polaris and arithmetic through the RL config', async () => {
    const cfg = RLConfigSchema.parse({
      model_name: 'tiny-qwen3',
      max_tokens: 8,
      dataset: {
        kind: 'interleaved',
        sources: [
          { kind: 'polaris', batch_size: 4, group_size: 2, seed: 5 },
          { kind: 'arithmetic', batch_size: 2, group_size: 2, n_batches: 3 },
        ],
        weights: [1, 1],
        groups_per_batch: 4,
      },
    });
    expect(cfg.dataset).toMatchObject({ total_batches: null, seed: 0 });
    const { train, test } = await buildRLDatasets(cfg.dataset, 'tiny-qwen3');
    expect(test).toBeUndefined();
    // Polaris (seed 5) keeps 9 of 11 rows in batches of 3, 3, 3; arithmetic has 6 groups: the
    // natural length is min(⌊9 / (0.5·4)⌋, ⌊6 / (0.5·4)⌋) = 3.
    expect(train.length).toBe(3);
    const batches = Array.from({ length: 3 }, (_, i) => train.getBatch(i));
    expect(batches.map((b) => b.length)).toEqual([4, 4, 4]);
    const tags = new Set(batches.flat().map((b) => b.loggingTags()[0]));
    expect(tags.has('polaris')).toBe(true);
    expect(tags.size).toBe(2);
    const bad = RLDatasetConfigSchema.safeParse({ ...cfg.dataset, weights: [1] });
    expect(bad.error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual(['weights: 1 weights for 2 sources; give one weight per source']);
    const nested = RLDatasetConfigSchema.safeParse({ ...cfg.dataset, sources: [{ kind: 'polaris', batch_size: 2, group_size: 1, shuffle: true }, cfg.dataset.kind === 'interleaved' ? cfg.dataset.sources[1] : null] });
    expect(nested.error?.issues[0].path).toEqual(['sources', 0]);
  });
});

describe('configs/rl_interleaved.json', () => {
  it('resolves through the CLI and builds the mixture it names', async () => {
    const { resolveRun } = await import('../../../src/cli/train.js');
    const runsDir = mkdtempSync(path.join(tmpdir(), 'rl-interleaved-runs-'));
    const r = resolveRun('rl', path.join(import.meta.dirname, '..', '..', '..', 'configs', 'rl_interleaved.json'), [], { runsDir });
    const { train } = await buildRLDatasets(r.config.dataset, 'tiny-qwen3');
    expect(train.length).toBe(10);
    expect(train.getBatch(9)).toHaveLength(4);
  });
});
