// The run registry (src/cookbook/stores/registry.ts) and the eval store on local folders: runs laid
// out by the real RunStore as runs, sweeps and scheduled evals write them, nested, found with their
// kind, model, last step and metrics, checkpoints and inferred status; the walk's bounds; a store
// that cannot be read named in one line while the others are still listed.
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EvalResultsFile } from '../../src/cookbook/eval/results.js';
import { RunStore, type RunKind } from '../../src/cookbook/run-store.js';
import { EvalStore } from '../../src/cookbook/stores/eval-store.js';
import { inferKind, lastJsonLine, RunRegistry } from '../../src/cookbook/stores/registry.js';
import { LocalStorage, type Storage } from '../../src/cookbook/stores/storage.js';

const HOUR_AGO = new Date(Date.now() - 3_600_000);

function run(dir: string, workflowId: string, kind: RunKind, config: Record<string, unknown>): RunStore {
  const store = new RunStore(dir);
  store.init({ workflowId, kind, config: { ...config, log_path: dir } }, new Set());
  return store;
}

const age = (file: string) => utimesSync(file, HOUR_AGO, HOUR_AGO);

function evalResults(model: string, correct: boolean[]): EvalResultsFile {
  return {
    format: 'eval_results/v1',
    suite: 'gsm8k',
    model,
    base_model: 'tiny-qwen3',
    data: 'sample',
    sampling: { max_tokens: 64, temperature: 0, seed: 0, num_samples: 1 },
    metrics: { accuracy: correct.filter(Boolean).length / correct.length, num_examples: correct.length },
    examples: correct.map((c, i) => ({ index: i, id: `q${i}`, prompt: 'p', response: 'r', expected: '1', extracted: c ? '1' : '2', correct: c })),
  };
}

/** Runs as this project writes them: a finished SL run, a sweep with a running RL point and a scheduled eval of it. */
async function layout(root: string): Promise<void> {
  const sl = run(join(root, 'sl-a'), 'sl-a-20261129', 'sl', { model_name: 'tiny-qwen3', learning_rate: 1e-4 });
  for (let step = 0; step < 3; step++) sl.writeMetrics({ step, train_mean_nll: 2 - step / 4, 'optim/lr': 1e-4 });
  sl.writeCheckpoint({ name: '000002', batch: 2, state_path: 'tinker://a/weights/000002' });
  sl.writeCheckpoint({ name: 'final', batch: 3, state_path: 'tinker://a/weights/final' });
  sl.writeIterationFile(1, 'train_logtree.json', '{}');
  age(sl.metricsJsonl);

  run(join(root, 'sweeps', 'lr'), 'sweep-lr', 'sweep', { kind: 'rl', model_name: 'tiny-qwen3' });
  const point = run(join(root, 'sweeps', 'lr', 'p0'), 'sweep-lr/p0', 'rl', { model_name: 'tiny-qwen3', learning_rate: 1e-5 });
  point.writeMetrics({ step: 0, 'env/all/reward/total': 0.25 });
  point.writeMetrics({ step: 1, 'env/all/reward/total': Number.NaN });
  point.writeCheckpoint({ name: '000001', batch: 1, state_path: 'tinker://p0/weights/000001' });

  const evalDir = join(root, 'sweeps', 'lr', 'p0', 'evals', '000001', 'gsm8k');
  run(evalDir, 'sweep-lr/p0/eval/000001/gsm8k', 'eval', { model: 'tinker://p0/sampler_weights/000001', suite: 'gsm8k' });
  await new EvalStore(new LocalStorage(root), 'sweeps/lr/p0/evals/000001/gsm8k').writeResults(evalResults('tinker://p0/sampler_weights/000001', [true, false, true, true]));

  // the reference's layout (no run record): its config says its kind
  const ref = new LocalStorage(join(root, 'ref-dpo'));
  await ref.put('config.json', Buffer.from(JSON.stringify({ model_name: 'ref-model', dpo_beta: 0.1 })));
  await ref.put('metrics.jsonl', Buffer.from('{"step": 0, "dpo_loss": 0.69}\n{"step": 1, "dpo_loss": 0.5}\n'));
  age(join(root, 'ref-dpo', 'metrics.jsonl'));
  // not runs: a folder of notes, a config alone
  writeFileSync(join(mkdtempSync(join(root, 'notes-')), 'config.json'), '{}');
}

describe('run registry on local folders', () => {
  it('finds runs nested at any depth with their kind, model, last step, metrics, checkpoints and status', async () => {
    const root = mkdtempSync(join(tmpdir(), 'registry-registry-'));
    await layout(root);
    const [scan] = await new RunRegistry([root]).refresh();
    expect(scan.error).toBeUndefined();
    expect(scan.truncated).toBeUndefined();
    const byId = Object.fromEntries(scan.runs.map((r) => [r.id, r]));
    expect(Object.keys(byId).sort()).toEqual(['ref-dpo', 'sl-a-20261129', 'sweep-lr', 'sweep-lr/p0', 'sweep-lr/p0/eval/000001/gsm8k']);

    expect(byId['sl-a-20261129']).toMatchObject({
      kind: 'sl',
      model: 'tiny-qwen3',
      prefix: 'sl-a',
      uri: `file://${join(root, 'sl-a')}`,
      hasRecord: true,
      lastStep: 2,
      lastMetrics: { step: 2, train_mean_nll: 1.5, 'optim/lr': 1e-4 },
      checkpoints: 2,
      status: 'completed',
    });
    // metrics written just now: running; Python's NaN reads as null
    expect(byId['sweep-lr/p0']).toMatchObject({ kind: 'rl', lastStep: 1, lastMetrics: { step: 1, 'env/all/reward/total': null }, checkpoints: 1, status: 'running' });
    expect(byId['sweep-lr']).toMatchObject({ kind: 'sweep', model: 'tiny-qwen3', lastStep: null, status: 'idle' });
    expect(byId['sweep-lr/p0/eval/000001/gsm8k']).toMatchObject({ kind: 'eval', model: 'tinker://p0/sampler_weights/000001', lastMetrics: { accuracy: 0.75, num_examples: 4 }, status: 'completed' });
    expect(byId['ref-dpo']).toMatchObject({ kind: 'dpo', model: 'ref-model', hasRecord: false, lastStep: 1, lastMetrics: { step: 1, dpo_loss: 0.5 }, checkpoints: 0, status: 'idle' });
    expect(byId['ref-dpo'].lastUpdated).toBeLessThan(Date.now() - 3_000_000);
  });

  it('stops its walk at the bounds and says so', async () => {
    const root = mkdtempSync(join(tmpdir(), 'registry-registry-'));
    await layout(root);
    const [shallow] = await new RunRegistry([root], { maxDepth: 1 }).refresh();
    expect(shallow.runs.map((r) => r.id).sort()).toEqual(['ref-dpo', 'sl-a-20261129']);
    expect(shallow.truncated).toMatch(/deeper than 1 levels/);
    const [few] = await new RunRegistry([root], { maxFolders: 3 }).refresh();
    expect(few.truncated).toMatch(/stopped after 3 folders/);
  });

  it('names a store it cannot read in one line and still lists the others', async () => {
    const root = mkdtempSync(join(tmpdir(), 'registry-registry-'));
    await layout(root);
    const missing = join(root, 'no-such-store');
    const scans = await new RunRegistry([missing, 'gs://bucket/runs', root]).refresh();
    expect(scans[0].error).toBe(`${missing}: no such folder (${missing})`);
    expect(scans[1].error).toMatch(/^gs:\/\/bucket\/runs: not a store this version reads/);
    expect(scans[2].runs).toHaveLength(5);
  });

  it('reads the last metrics row from the tail of a long file, not the whole file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'registry-registry-'));
    const store = run(dir, 'long', 'sl', { model_name: 'tiny-qwen3' });
    for (let step = 0; step < 1200; step++) store.writeMetrics({ step, train_mean_nll: 1 / (step + 1) });
    let bytesRead = 0;
    const local = new LocalStorage(dir);
    const counting: Storage = Object.assign(Object.create(local) as LocalStorage, {
      getRange: async (path: string, start: number, end?: number) => {
        const got = await local.getRange(path, start, end);
        bytesRead += got?.data.length ?? 0;
        return got;
      },
      get: async () => {
        throw new Error('read whole');
      },
    });
    const size = (await local.stat('metrics.jsonl'))!.size;
    expect(size).toBeGreaterThan(40_000);
    expect(await lastJsonLine(counting, 'metrics.jsonl')).toEqual({ step: 1199, train_mean_nll: 1 / 1200 });
    expect(bytesRead).toBeLessThanOrEqual(16 * 1024);

    // a line still being written (no newline yet) is not read; a file of one long line is read whole
    await local.put('partial.jsonl', Buffer.from('{"step": 0}\n{"step": 1, "lo'));
    expect(await lastJsonLine(local, 'partial.jsonl')).toEqual({ step: 0 });
    await local.put('one.jsonl', Buffer.from(`${JSON.stringify({ step: 7, text: 'x'.repeat(40_000) })}\n`));
    expect(await lastJsonLine(local, 'one.jsonl')).toMatchObject({ step: 7 });
    expect(await lastJsonLine(local, 'absent.jsonl')).toBeUndefined();
  });

  it('LocalStorage range reads: a slice, a suffix, past the end', async () => {
    const s = new LocalStorage(mkdtempSync(join(tmpdir(), 'registry-range-')));
    await s.put('f', Buffer.from('0123456789'));
    expect((await s.getRange('f', 2, 5))!.data.toString()).toBe('234');
    expect(await s.getRange('f', -3)).toEqual({ data: Buffer.from('789'), size: 10 });
    expect((await s.getRange('f', -30))!.data.toString()).toBe('0123456789');
    expect((await s.getRange('f', 8))!.data.toString()).toBe('89');
    expect((await s.getRange('f', 20))!.data.length).toBe(0);
    expect(await s.getRange('missing', 0)).toBeUndefined();
    expect((await s.stat('f'))!.size).toBe(10);
    expect(await s.stat('missing')).toBeUndefined();
  });

  it('infers a reference config’s kind as the reference does', () => {
    expect(inferKind({ dpo_beta: 0.1, loss_fn: 'x' })).toBe('dpo');
    expect(inferKind({ loss_fn: 'importance_sampling' })).toBe('rl');
    expect(inferKind({ num_epochs: 1 })).toBe('sl');
    expect(inferKind({ dataset_builder: { __type__: 'tinker_cookbook.rl.RLDatasetBuilder' } })).toBe('rl');
    expect(inferKind({ dataset_builder: { __type__: 'ChatDatasetBuilder.SupervisedFromHF' } })).toBe('sl');
    expect(inferKind({ learning_rate: 1 })).toBeNull();
  });
});

describe('eval store', () => {
  it('writes, reads, filters, lists and deletes eval runs', async () => {
    const root = mkdtempSync(join(tmpdir(), 'registry-evalstore-'));
    const storage = new LocalStorage(root);
    // a training run with two scheduled evals, one finished, one still running; and a standalone eval run
    run(join(root, 'train'), 'train-1', 'sl', { model_name: 'tiny-qwen3' });
    run(join(root, 'train', 'evals', '000002', 'gsm8k'), 'train-1/eval/000002/gsm8k', 'eval', { model: 'tinker://t/sampler_weights/000002' });
    run(join(root, 'train', 'evals', 'final', 'gsm8k'), 'train-1/eval/final/gsm8k', 'eval', { model: 'tinker://t/sampler_weights/final' });
    run(join(root, 'solo'), 'eval-solo', 'eval', { model: 'tiny-qwen3' });
    const trainEvals = new EvalStore(storage, 'train');
    await trainEvals.writeResults(evalResults('tinker://t/sampler_weights/000002', [true, false]), 'evals/000002/gsm8k');
    const all = new EvalStore(storage);
    await all.writeResults(evalResults('tiny-qwen3', [true, true, false]), 'solo');

    const solo = await all.readResults('solo');
    expect(solo).toEqual(evalResults('tiny-qwen3', [true, true, false]));
    // the table the CLI prints, beside it
    expect((await storage.get('solo/results.md'))!.data.toString()).toMatch(/^suite gsm8k · model tiny-qwen3 · data sample\n\n\| metric/);
    expect((await all.readExamples('solo', { correctOnly: true })).map((e) => e.id)).toEqual(['q0', 'q1']);
    expect((await all.readExamples('solo', { incorrectOnly: true })).map((e) => e.id)).toEqual(['q2']);
    expect(await all.readExamples('solo', { errorsOnly: true })).toEqual([]);
    expect(await all.readResults('train')).toBeUndefined();

    expect(await trainEvals.listScheduled()).toEqual([
      { run: 'evals/000002/gsm8k', uri: `file://${join(root, 'train/evals/000002/gsm8k')}`, benchmark: 'gsm8k', model: 'tinker://t/sampler_weights/000002', base_model: 'tiny-qwen3', metrics: { accuracy: 0.5, num_examples: 2 }, examples: 2, checkpoint: '000002' },
    ]);
    expect((await all.listRuns()).map((r) => [r.run, r.checkpoint, r.metrics.accuracy])).toEqual([
      ['solo', null, 2 / 3],
      ['train/evals/000002/gsm8k', '000002', 0.5],
    ]);

    await all.deleteRun('solo');
    expect(await all.readResults('solo')).toBeUndefined();
    expect((await all.listRuns()).map((r) => r.run)).toEqual(['train/evals/000002/gsm8k']);
    await expect(all.deleteRun('')).rejects.toThrow(/root refused/);
  });

  it('reads a long results.json’s aggregate from its head only', async () => {
    const root = mkdtempSync(join(tmpdir(), 'registry-evalstore-'));
    const local = new LocalStorage(root);
    let bytesRead = 0;
    const counting: Storage = Object.assign(Object.create(local) as LocalStorage, {
      getRange: async (path: string, start: number, end?: number) => {
        const got = await local.getRange(path, start, end);
        bytesRead += got?.data.length ?? 0;
        return got;
      },
      get: async () => {
        throw new Error('read whole');
      },
    });
    run(join(root, 'big'), 'eval-big', 'eval', { model: 'tiny-qwen3' });
    const file = evalResults('tiny-qwen3', Array.from({ length: 2000 }, (_, i) => i % 3 === 0));
    await new EvalStore(local, 'big').writeResults(file);
    expect((await local.stat('big/results.json'))!.size).toBeGreaterThan(200_000);
    const { examples: _, ...head } = file;
    expect(await new EvalStore(counting, 'big').readHead()).toEqual(head);
    expect(bytesRead).toBeLessThanOrEqual(64 * 1024);

    // an Inspect run's file (samples, not examples), small enough to be read in one go
    const inspect = { format: 'inspect_results/v1' as const, task: 'gsm8k', model: 'm', base_model: 'm', inspect_log: 'l.json', sampling: { max_tokens: 8, temperature: 0, seed: 0 }, metrics: { 'match/accuracy': 0.5, num_samples: 2 }, samples: [] };
    await new EvalStore(local, 'insp').writeResults(inspect, '', 'table');
    expect(await new EvalStore(local, 'insp').readHead()).toEqual({ ...inspect, samples: undefined });
    expect((await new EvalStore(local).listRuns()).map((r) => [r.run, r.benchmark, r.examples])).toEqual([
      ['big', 'gsm8k', 2000],
      ['insp', 'gsm8k', 2],
    ]);
  });
});
