// code_rl's DeepCoder loading beside the reference's (tinker-cookbook 0.6.1 load_deepcoder_tasks, run at
// test time by deepcoder_cases.py): the same small agentica-org/DeepCoder-Preview-Dataset snapshot
// (test/cookbook/rl/deepcoder-fixture.ts, in the Hugging Face hub cache's layout) is read by the
// reference through `datasets` and by us through the `hf` source. For several seeds: the same train
// tasks in the same order (subsets concatenated, HF's shuffle, rows dropped after it), the same test
// tasks, each with the same LiveCodeBench question, normalised tests and starter code.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CodeRLHfSchema, loadDeepCoderHf, type CodeTask } from '../../src/cookbook/rl/envs/code/tasks.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';
import { writeDeepCoderCache } from '../cookbook/rl/deepcoder-fixture.js';

const SEEDS = [0, 1, 7, 123];
const dir = mkdtempSync(path.join(tmpdir(), 'code-rl-hf-parity-'));
const cache = path.join(dir, 'hub');
type RefTask = { problem: string; tests: unknown[]; starter_code: string | null };
let reference: { train: Record<string, RefTask[]>; test: RefTask[]; calls: Array<[string, string]> };

beforeAll(async () => {
  const snapshot = writeDeepCoderCache(cache);
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const child = await runPythonScript(python, [path.join(import.meta.dirname, 'deepcoder_cases.py'), snapshot, ...SEEDS.map(String)], {
    env: { ...process.env, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1', HF_DATASETS_CACHE: path.join(dir, 'datasets-cache'), HF_HUB_CACHE: cache },
  });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const view = (tasks: CodeTask[]): RefTask[] => tasks.map((t) => ({ problem: t.problem, tests: t.tests, starter_code: t.starterCode }));
const load = (seed: number) => loadDeepCoderHf(CodeRLHfSchema.parse({}), { seed, skipBadRows: false, hub: { hfHubCache: cache, offline: true } });

describe('DeepCoder through an hf source beside the reference', () => {
  it('reads the subsets and splits the reference reads, in its order', () => {
    expect(reference.calls.slice(0, 3)).toEqual(CodeRLHfSchema.parse({}).train_subsets.map((s) => [s, 'train']));
    expect(reference.calls.slice(-2)).toEqual(CodeRLHfSchema.parse({}).test_subsets.map((s) => [s, 'test']));
  });

  it.each(SEEDS)('seed %i: the same train tasks in the same order, and the same test tasks', async (seed) => {
    const ours = await load(seed);
    expect(reference.train[String(seed)].length).toBeGreaterThan(0);
    expect(view(ours.train.tasks)).toEqual(reference.train[String(seed)]);
    expect(view(ours.test!.tasks)).toEqual(reference.test);
  });
});
