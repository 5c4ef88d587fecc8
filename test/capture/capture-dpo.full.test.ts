// Preference data from captured traffic (fuller tier): prompts sampled twice each (`n: 2`) through
// `cookbook serve --capture`, each sample scored after the fact by a `reward` annotation naming its
// row, exported by `cookbook capture export --format comparisons` as the best over the worst of
// each prompt, and trained by the DPO workflow as it is.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { CaptureStoreClient, ensureCaptureStore } from '../../src/capture/store/client.js';
import { readDaemonInfo } from '../../src/capture/store/daemon.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { cookbookProcess } from '../support/cli.js';
import { metricsOf } from '../support/runs.js';
import { startServe, stopServe } from '../support/serve.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';

const MODEL = 'tiny-qwen3';
const RUN = 'preferences';

describe('captured samples → comparisons → DPO', { timeout: 600_000 }, () => {
  let stack: TestStack;
  let dir: string;
  let store: CaptureStoreClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'h61f-dpo-'));
    stack = await startTestStack();
    store = new CaptureStoreClient(await ensureCaptureStore(dir, { idleShutdownMinutes: 10 }));
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
    const daemon = dir ? readDaemonInfo(dir) : null;
    if (daemon) process.kill(daemon.pid, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('pairs each prompt’s best and worst scored sample, and DPO trains on them', async () => {
    const served = await startServe(stack.engine.baseUrl, [MODEL, '--capture', store.baseUrl, '--capture-run', RUN]);
    const client = new OpenAI({ baseURL: served.url, apiKey: 'unused', maxRetries: 0 });
    const prompts = ['Name a colour.', 'Name a fruit.', 'Name a city.', 'Name an animal.'];
    for (const [i, content] of prompts.entries()) {
      await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content }], n: 2, max_tokens: 6, temperature: 1, seed: i });
    }
    await stopServe(served.child);
    const rows = await store.allRows({ run_id: RUN });
    expect(rows).toHaveLength(8);
    // A grader's scores, given after the fact: the second sample of each prompt is the better.
    await store.ingest(
      rows.map((r) => ({
        type: 'annotation' as const,
        annotation: { event_id: `grade-${r.cursor}`, run_id: RUN, kind: 'reward', payload: { sampling_session_id: r.sampling_session_id, seq_id: r.seq_id, sample_idx: r.sample_idx, value: r.sample_idx === 1 ? 1 : 0 } },
      })),
    );

    const out = join(dir, 'pairs.jsonl');
    const exported = await cookbookProcess(['capture', 'export', '--format', 'comparisons', '--out', out, '--url', store.baseUrl, '--run', RUN]).done;
    expect(exported.code, exported.err).toBe(0);
    const pairs = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { prompt_conversation: Array<{ content: string }>; chosen: unknown[]; source: { chosen: { cursor: number } } });
    expect(pairs).toHaveLength(4);
    expect(pairs.map((p) => p.prompt_conversation.at(-1)!.content)).toEqual(prompts);
    expect(pairs.map((p) => rows.find((r) => r.cursor === p.source.chosen.cursor)!.sample_idx)).toEqual([1, 1, 1, 1]);
    expect(pairs.map((p) => p.chosen)).toEqual(pairs.map((p) => [(rows.find((r) => r.cursor === p.source.chosen.cursor)!.metadata as { completion: unknown }).completion]));

    const config = join(dir, 'dpo_from_capture.json');
    writeFileSync(config, JSON.stringify({ model_name: MODEL, dataset: { file_path: out, batch_size: 2 }, learning_rate: 0.02, lr_schedule: 'constant', lora_rank: 8, dpo_beta: 0.5, eval_every: 0, save_every: 0 }));
    const run = testRun(stack, config, [], 'dpo');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(2);
    // Two steps of two pairs each, every one with a finite DPO loss.
    const rows_ = metricsOf(run.run.logPath).filter((m) => 'dpo_loss' in m);
    expect(rows_.map((m) => m.step)).toEqual([0, 1]);
    for (const m of rows_) expect(Number.isFinite(m.dpo_loss as number)).toBe(true);
  });
});
