// The capture store beside the reference's (tinker-cookbook 0.6.1, run at test time): the reference's
// own StoreSink exports capture records to our daemon (its /ingest/wire and /ingest/annotations), and
// its CaptureDB ingests the same records; our daemon then answers as its DB does — the same rows and
// annotations under the same cursors, per-run filters, the run listing, the stream's order — and a
// resend is deduped in both. (Ours differs by design in two places the records here avoid: a row
// without created_at gets the ingest time, and credentials are redacted.)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CaptureStoreClient, DAEMON_ENTRY } from '../../src/capture/store/client.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const scope = (extra: Record<string, unknown>) => ({ run_id: 'run-a', run_attempt: 0, split: 'train', purpose: 'rollout', ...extra });
const RECORDS = [
  {
    kind: 'sample',
    scope: scope({ iteration: 0, group_idx: 0, traj_idx: 0 }),
    sampling_session_id: 'sess-1',
    seq_id: 0,
    model_path: 'tinker://run-a/sampler_weights/000000',
    created_at: 1_790_000_000.25,
    prompt_tokens: [151644, 872, 198, 3838, 374],
    samples: [
      { tokens: [9707, 13, 151645], logprobs: [-0.125, -2.5, -0.0078125], stop_reason: 'stop' },
      { tokens: [40, 1513], logprobs: [-1.75, -0.5], stop_reason: 'length' },
    ],
    num_samples: 2,
  },
  { kind: 'train_op', op: 'forward_backward', scope: scope({ iteration: 0 }), created_at: 1_790_000_001.5, event_id: 'fb-0', loss: 0.6931 },
  {
    kind: 'sample',
    scope: scope({ iteration: 1, group_idx: 1, traj_idx: 3, phase: 'eval', worker: 2 }),
    sampling_session_id: 'sess-1',
    seq_id: 1,
    model_path: 'tinker://run-a/sampler_weights/000001',
    created_at: 1_790_000_002,
    prompt_tokens: [1, 2, 3],
    samples: [{ tokens: [4], logprobs: [-0.1], stop_reason: 'stop' }],
  },
  { kind: 'sample', scope: scope({ iteration: 1, split: 'test', purpose: 'eval' }), sampling_session_id: 'sess-2', seq_id: 0, created_at: 1_790_000_003, prompt_tokens: [7], samples: [] },
  { kind: 'sample', scope: { iteration: 2 }, sampling_session_id: 'sess-3', seq_id: 0, created_at: 1_790_000_004, prompt_tokens: [8, 9], samples: [{ tokens: [10, 11], logprobs: [-3, -4] }] },
  { kind: 'optim_step', scope: scope({ iteration: 1 }), created_at: 1_790_000_005, event_id: 'opt-1', learning_rate: 0.0001 },
];
const QUERIES: Record<string, [string, Record<string, string | number>]> = {
  all_a: ['run-a', {}],
  iteration_1: ['run-a', { iteration: 1 }],
  group_traj: ['run-a', { group_idx: 1, traj_idx: 3 }],
  train_rollout: ['run-a', { split: 'train', purpose: 'rollout' }],
  unattributed: ['unattributed', {}],
};

const dir = mkdtempSync(join(tmpdir(), 'h61d-parity-'));
const daemon = spawn(process.execPath, [DAEMON_ENTRY, '--data-dir', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
let client: CaptureStoreClient;
let reference: {
  ingests: Array<{ endpoint: string; inserted: number; deduped: number }>;
  queries: Record<string, unknown[]>;
  annotations: Record<string, unknown[]>;
  runs: unknown[];
  stream: Array<{ cursor: number; type: string; data: unknown }>;
};

beforeAll(async () => {
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    daemon.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    daemon.on('exit', (code) => reject(new Error(`the capture store daemon exited (${code})`)));
  });
  client = new CaptureStoreClient(url);
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const input = JSON.stringify({ url, records: RECORDS, queries: QUERIES, annotation_runs: ['run-a', 'unattributed'] });
  const child = await runPythonScript(python, [join(import.meta.dirname, 'capture_store_cases.py')], { input });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);

afterAll(() => {
  daemon.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('capture store beside the reference', () => {
  it("stores what the reference's StoreSink sends once, deduping its resend as the reference's DB does", async () => {
    const firstPass = reference.ingests.slice(0, reference.ingests.length / 2);
    const secondPass = reference.ingests.slice(reference.ingests.length / 2);
    expect(secondPass.every((i) => i.inserted === 0)).toBe(true);
    const stats = await client.stats();
    const inserted = firstPass.reduce((n, i) => n + i.inserted, 0);
    expect(stats.wire_rows + stats.annotations).toBe(inserted);
    expect(stats.daemon.deduped).toBe(secondPass.reduce((n, i) => n + i.deduped, 0));
  });

  it('answers the per-run row queries with the same rows under the same cursors', async () => {
    for (const [name, [runId, filters]] of Object.entries(QUERIES)) {
      const params = new URLSearchParams(Object.entries(filters).map(([k, v]): [string, string] => [k, String(v)]));
      const ours = (await (await fetch(`${client.baseUrl}/runs/${runId}/rows?${params}`)).json()) as { rows: unknown[] };
      expect({ name, rows: ours.rows }).toEqual({ name, rows: reference.queries[name] });
    }
    expect(reference.queries.all_a.length).toBeGreaterThan(2);
  });

  it('answers annotations, the run listing and the stream as the reference', async () => {
    for (const run of ['run-a', 'unattributed']) {
      expect((await client.annotations({ run_id: run })).annotations).toEqual(reference.annotations[run]);
    }
    expect(await client.runs()).toEqual(reference.runs);
    const events = [];
    const controller = new AbortController();
    for await (const event of client.stream({ cursor: 0, signal: controller.signal })) {
      events.push({ cursor: event.cursor, type: event.type, data: event.type === 'wire_row' ? event.row : event.annotation });
      if (events.length === reference.stream.length) controller.abort();
    }
    expect(events).toEqual(reference.stream);
  });
});
