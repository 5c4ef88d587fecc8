// Distillation on the real stack (Temporal dev server, engine over HTTP, real tokenizer). The
// teacher is tiny-qwen3 briefly fine-tuned by a supervised run; its final sampler weights are the
// teacher path of the on-policy run (student: base tiny-qwen3) and of the off-policy sampling stage.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { parseConversationsJsonl } from '../../src/cookbook/supervised/jsonl.js';
import type { TeacherSamplingResult } from '../../src/workflows/distill.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { checkpointsOf, metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const distillFixture = JSON.parse(readFileSync(join(fixtures, 'distill_small.json'), 'utf8'));
const promptsFile = join(import.meta.dirname, '..', '..', 'data', 'distill_prompts.jsonl');
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('distillation workflows', () => {
  let stack: TestStack;
  let teacherPath: string;

  /** The fixture config with the fine-tuned teacher, written into the stack's temp dir. */
  function distillConfig(name: string, patch: Record<string, unknown> = {}): string {
    const cfg = structuredClone(distillFixture);
    cfg.dataset_configs[0].teacher_config.load_checkpoint_path = teacherPath;
    cfg.dataset_configs[0].dataset.file_path = promptsFile;
    const path = join(stack.dir, `distill-${name}.json`);
    writeFileSync(path, JSON.stringify({ ...cfg, ...patch }));
    return path;
  }

  beforeAll(async () => {
    stack = await startTestStack();
    // The teacher: a few high-learning-rate SFT steps move tiny-qwen3 well away from its base.
    const teacher = testRun(stack, join(fixtures, 'sl_small.json'), ['num_epochs=1', 'learning_rate=0.02', 'eval_every=0', 'save_every=0']);
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, teacher, stack.taskQueue)).result()) as RunResult);
    teacherPath = result.finalCheckpoint!.samplerPath!;
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('on-policy: the student moves toward the teacher (teacher_kl falls)', async () => {
    const probe = join(import.meta.dirname, '..', 'fixtures', 'eval_probe.jsonl');
    const run = testRun(stack, distillConfig('on', { eval_every: 3, evaluators: [{ kind: 'custom_sampling', name: 'probe', file_path: probe, max_tokens: 8 }] }), [], 'distill');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(6); // 24 prompts / 4 groups per batch

    const rows = metricsOf(run.run.logPath);
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4, 5]);
    for (const key of ['progress/batch', 'optim/lr', 'progress/done_frac', 'teacher_kl', 'teacher_kl/dataset_0', 'env/all/total_episodes', 'optim/kl_sample_train_v1', 'optim/entropy']) {
      expect(rows[0]).toHaveProperty(key);
    }
    expect(rows[0]['env/all/total_episodes']).toBe(8); // 4 groups × 2 samples
    // The custom evaluator ran on the pre-update sampler at steps 0 and 3, its keys under test/.
    expect(rows.filter((r) => 'test/probe/accuracy' in r).map((r) => r.step)).toEqual([0, 3]);
    expect(rows[0]['env/all/reward/total']).toBe(0);
    const kl = rows.map((r) => r.teacher_kl as number);
    expect(kl[0]).toBeGreaterThan(0);
    expect(mean(kl.slice(-2))).toBeLessThan(mean(kl.slice(0, 2)));

    // As the reference's loop, which passes RL's pieces no cost tracker: no tokens/* metrics and no
    // closing totals row, but the trajectory totals include the prompt tokens that hit a prefix cache.
    expect(rows.every((r) => !Object.keys(r).some((k) => k.startsWith('tokens/')))).toBe(true);
    expect(rows[0]['env/all/total_cached_ob_tokens']).toBe(0);
    const metricsText = readFileSync(join(run.run.logPath, 'metrics.jsonl'), 'utf8');
    expect(metricsText).toContain('"progress/batch": 5, ');
    expect(metricsText).toMatch(/"env\/all\/total_episodes": 8, .*"env\/all\/total_ob_tokens": \d+, "env\/all\/total_cached_ob_tokens": 0, /);

    // As RL: checkpoints after step i are named i+1; every number in their rows an int.
    expect(checkpointsOf(run.run.logPath).map((c) => [c.name, c.batch])).toEqual([['000003', 3], ['000006', 6], ['final', 6]]);
    expect(readFileSync(join(run.run.logPath, 'checkpoints.jsonl'), 'utf8')).not.toMatch(/": \d+\.0[,}]/);
    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
  }, 240_000);

  it('off-policy: the sampling stage writes teacher conversations that a supervised run trains on', async () => {
    const sample = testRun(stack, distillConfig('sample', { mode: 'off_policy_sample', max_tokens: 12 }), [], 'distill');
    // A shard left by an earlier attempt is reused, not sampled again.
    const earlier = JSON.stringify({ messages: [{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'kept' }] });
    mkdirSync(join(sample.run.logPath, '.cookbook', 'store', 'teacher_samples'), { recursive: true });
    writeFileSync(join(sample.run.logPath, '.cookbook', 'store', 'teacher_samples', 'shard_00001.jsonl'), `${earlier}\n`);

    const sampled = await withWorker(stack, async () => (await (await startRun(stack.client, sample, stack.taskQueue)).result()) as TeacherSamplingResult);
    expect(sampled.status).toBe('completed');
    expect(sampled.shards).toBe(6); // 24 prompts / 4 per shard
    expect(sampled.outputPath).toBe(join(sample.run.logPath, 'teacher_conversations.jsonl'));
    expect(sampled.conversations).toBe(21); // 5 sampled shards × 4 + the reused one-line shard

    const text = readFileSync(sampled.outputPath, 'utf8');
    const rows = parseConversationsJsonl(text, 'teacher_conversations.jsonl');
    expect(rows).toHaveLength(21);
    expect(rows[4].messages).toEqual([{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'kept' }]);
    const prompts = readFileSync(promptsFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l).messages);
    expect(rows[0].messages.slice(0, -1)).toEqual(prompts[0]);
    expect(rows[5].messages.slice(0, -1)).toEqual(prompts[8]);
    for (const r of rows) expect(r.messages[r.messages.length - 1].role).toBe('assistant');

    // Second stage: SFT of the student on the teacher's traces.
    const sft = testRun(stack, join(fixtures, 'sl_small.json'), [`dataset.file_path=${sampled.outputPath}`, 'dataset.test_size=0', 'num_epochs=1', 'eval_every=0']);
    const trained = await withWorker(stack, async () => (await (await startRun(stack.client, sft, stack.taskQueue)).result()) as RunResult);
    expect(trained.status).toBe('completed');
    expect(trained.steps).toBe(5); // 21 conversations / batch 4
    expect(metricsOf(sft.run.logPath).every((r) => Number.isFinite(r.train_mean_nll))).toBe(true);
  }, 240_000);
});
