// The SL dataset mixture (`dataset.sources`) against the reference's InterleavedChatDatasetBuilder
// (goldens: test/fixtures/datasets_gen_goldens.py): the same rows in the same order for each
// stopping strategy, explicit and row-count weights, and the held-out test rows of test_size; read
// from parquet folders in the Hub's layout. Also numpy's draws behind it and the config errors.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRun } from '../../src/cli/train.js';
import { interleavePositions, NumpyRng } from '../../src/cookbook/hf/interleave.js';
import { ChatDatasetConfigSchema, buildChatDatasets } from '../../src/cookbook/supervised/dataset.js';
import { interleaveChatRows, loadInterleavedSources, HFDatasetSourceSchema } from '../../src/cookbook/supervised/interleaved.js';
import { writeParquet } from './hf-fixtures.js';

type Msg = { role: string; content: unknown };
const goldens = JSON.parse(readFileSync(path.join(import.meta.dirname, '..', 'fixtures', 'datasets_goldens.json'), 'utf8')).interleaved_chat as {
  sources: Record<string, Array<{ messages: Msg[] }>>;
  cases: Array<{ sources: Array<[string, number | null]>; stopping_strategy: 'first_exhausted' | 'all_exhausted' | 'all_exhausted_without_replacement'; seed: number; test_size: number; train: string[]; test: string[] | null; n_batches: number }>;
};
const dir = mkdtempSync(path.join(tmpdir(), 'cookbook-interleaved-'));
const folderOf = (p: string) => path.join(dir, p.replace('/', '_'));
for (const [p, rows] of Object.entries(goldens.sources)) writeParquet(path.join(folderOf(p), 'data', 'train-00000-of-00001.parquet'), rows, { messagesColumn: 'messages' });
const firstUser = (r: { value: Array<{ content: unknown }> }) => r.value[0].content;

describe('dataset mixtures (the reference InterleavedChatDatasetBuilder)', () => {
  it('numpy draws: random() and choice(p) as numpy 2 gives them', () => {
    // Values printed by numpy 2 in the reference venv: default_rng(0).random(3), default_rng(1).choice(3, size=6, p=[0.5, 0.3, 0.2]).
    const rng = new NumpyRng(0);
    expect([rng.random(), rng.random(), rng.random()]).toEqual([0.6369616873214543, 0.2697867137638703, 0.04097352393619469]);
    const choose = new NumpyRng(1).chooser([0.5, 0.3, 0.2]);
    expect(Array.from({ length: 6 }, choose)).toEqual([1, 2, 0, 2, 0, 0]);
  });

  it.each(goldens.cases.map((c, i) => [i, c.stopping_strategy, c.test_size, c] as const))('case %s (%s, test_size %s): the reference rows in the reference order', async (_i, _s, _t, c) => {
    const sources = c.sources.map(([p, weight]) => HFDatasetSourceSchema.parse({ path: folderOf(p), weight }));
    const rows = await loadInterleavedSources(sources, {});
    const mixed = interleaveChatRows(rows, sources, { test_size: c.test_size, shuffle_seed: c.seed, stopping_strategy: c.stopping_strategy });
    expect(mixed.train.map(firstUser)).toEqual(c.train);
    expect(mixed.test?.map(firstUser) ?? null).toEqual(c.test);
  });

  it('through the SL dataset config: batches of the mixture, one test batch, a repeated row trained again', async () => {
    const c = goldens.cases[4];
    const built = await buildChatDatasets(
      { sources: c.sources.map(([p, weight]) => ({ path: folderOf(p), weight })), stopping_strategy: c.stopping_strategy, shuffle_seed: c.seed, test_size: c.test_size, batch_size: 2 },
      'tiny-qwen3',
    );
    expect(built.train.length).toBe(c.n_batches);
    expect(built.test?.length).toBe(1);
    expect(built.test?.getBatch(0)).toHaveLength(c.test_size);
  });

  it('names the config path of what it refuses', async () => {
    const bad = ChatDatasetConfigSchema.safeParse({ sources: [{ path: 'x', weigth: 1 }], batch_size: 2 });
    expect(bad.error?.issues[0]).toMatchObject({ path: ['sources', 0], message: expect.stringMatching(/weigth/) });
    const both = ChatDatasetConfigSchema.safeParse({ sources: [{ path: 'x' }], file_path: 'y.jsonl', batch_size: 2 });
    expect(both.error?.issues[0].message).toBe('set exactly one of file_path, builtin, hf and sources');
    const strategy = ChatDatasetConfigSchema.safeParse({ file_path: 'y.jsonl', stopping_strategy: 'first_exhausted', batch_size: 2 });
    expect(strategy.error?.issues[0].path).toEqual(['stopping_strategy']);
    await expect(buildChatDatasets({ sources: [{ path: folderOf('src/a'), weight: 1 }, { path: folderOf('src/b') }], batch_size: 2 }, 'tiny-qwen3')).rejects.toThrow(
      /dataset\.sources\.1\.weight: either all sources have explicit weights or none of them/,
    );
    await expect(buildChatDatasets({ sources: [{ path: folderOf('src/a') }, { path: folderOf('src/b') }], test_size: 9, batch_size: 2 }, 'tiny-qwen3')).rejects.toThrow(
      /dataset\.test_size: 9 exceeds the 8 rows that can be held out/,
    );
    expect(() => interleavePositions([3, 2], [1, 0], 0, 'all_exhausted')).toThrow(/cannot exhaust sources 1, which have weight 0/);
    await expect(buildChatDatasets({ sources: [{ path: path.join(dir, 'missing') }], batch_size: 2 }, 'tiny-qwen3')).rejects.toThrow(/^dataset\.sources\.0: /);
  });

  it('the shipped example config resolves, its sources relative to the config file', () => {
    const runsDir = mkdtempSync(path.join(tmpdir(), 'interleaved-runs-'));
    const r = resolveRun('sl', path.join(import.meta.dirname, '..', '..', 'configs', 'sl_interleaved.json'), [], { runsDir });
    const sources = r.config.dataset.sources as Array<{ path: string }>;
    expect(sources.every((s) => path.isAbsolute(s.path))).toBe(true);
  });
});
