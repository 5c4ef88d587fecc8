// An evaluation harness end to end: Inspect AI (its OpenAI-compatible provider) runs a two-sample
// task against `cookbook serve` over the real engine. Full tier: the harness's first install is a
// few hundred megabytes of Python packages.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openServedModel, type ServedModel } from '../../src/serve/served-model.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { type EngineHandle, startEngine } from '../support/engine.js';
import { ensureInspectEnv } from '../support/python-tools.js';
import { workerEngine } from '../support/shared-engine.js';

const MODEL = 'tiny-qwen3';
const KEY = 'sk-inspect';

let engine: EngineHandle | undefined;
let model: ServedModel;
let server: RunningServer;
let work: string;

beforeAll(async () => {
  const shared = inject('sharedStack');
  const engineUrl = shared ? workerEngine(shared).engineUrl : (engine = await startEngine()).baseUrl;
  model = await openServedModel({ source: MODEL, baseUrl: engineUrl });
  server = await startServer({ model, apiKey: KEY, defaultMaxTokens: 64 });
  work = mkdtempSync(join(tmpdir(), 'inspect-'));
}, 600_000);

afterAll(async () => {
  await server?.close();
  await model?.close();
  await engine?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('an evaluation harness through cookbook serve', () => {
  it('Inspect AI runs a task to completion, and its completions are the API’s', async () => {
    const { python } = await ensureInspectEnv();
    // Asynchronously: the server answering Inspect runs in this process.
    const run = await promisify(execFile)(python, [join(import.meta.dirname, 'inspect_eval.py'), server.url, MODEL, KEY, join(work, 'logs')], { encoding: 'utf8', timeout: 240_000 });
    const result = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(result.error).toBeNull();
    expect(result.status).toBe('success');
    expect(result.metrics.accuracy).toBeGreaterThanOrEqual(0);
    expect(result.metrics.accuracy).toBeLessThanOrEqual(1);
    expect(result.samples).toHaveLength(2);
    const client = new OpenAI({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
    for (const s of result.samples) {
      const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: s.input }], max_tokens: 8, temperature: 0 });
      expect(s.completion).toBe(r.choices[0].message.content);
    }
  });
});
