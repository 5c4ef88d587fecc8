// `cookbook runs --store` over a local folder and a bucket on a real S3 server (SeaweedFS) together:
// runs written by the real RunStore, the bucket's pushed by the run mirror as workers push them;
// statuses from Temporal where it knows the workflow (here one terminated while its files say it
// completed), inferred from the files elsewhere; a missing bucket named in one line.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStore, type RunKind } from '../../src/cookbook/run-store.js';
import { lastJsonLine, RunRegistry } from '../../src/cookbook/stores/registry.js';
import { S3Storage } from '../../src/cookbook/stores/s3.js';
import { mirrorOf } from '../../src/cookbook/stores/mirror.js';
import { StatusKey } from '../../src/workflows/shared/search-attributes.js';
import { cookbookOn, cookbookProcess } from '../support/cli.js';
import { s3ServerForFile, type S3Server } from '../support/s3-server.js';
import { startTestStack, type TestStack } from '../support/stack.js';

const BUCKET = 'registry-runs';
let server: S3Server;
let stack: TestStack;
const saved = { ...process.env };

beforeAll(async () => {
  [server, stack] = await Promise.all([s3ServerForFile({ buckets: [BUCKET] }), startTestStack()]);
  Object.assign(process.env, server.env, { COOKBOOK_STORE_CACHE: mkdtempSync(join(tmpdir(), 'registry-cache-')) });
}, 600_000);

afterAll(async () => {
  for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
  Object.assign(process.env, saved);
  await Promise.all([server?.close(), stack?.stop()]);
});

/** A run written where its log_path says: a folder, or this process's mirror of a bucket's run pushed to it. */
async function writeRun(logPath: string, workflowId: string, kind: RunKind, steps: number, final: boolean): Promise<void> {
  if (logPath.startsWith('s3://')) await mirrorOf(logPath).pull();
  const store = new RunStore(logPath);
  store.init({ workflowId, kind, config: { model_name: 'tiny-qwen3', log_path: logPath } }, new Set());
  for (let step = 0; step < steps; step++) store.writeMetrics({ step, train_mean_nll: 3 - step });
  if (final) store.writeCheckpoint({ name: 'final', batch: steps, state_path: `tinker://${workflowId}/weights/final` });
  if (logPath.startsWith('s3://')) await mirrorOf(logPath).push();
}

describe('runs across a local folder and a bucket', () => {
  it('lists both stores with kind, model, status, last step, metrics and store URI', async () => {
    const local = mkdtempSync(join(tmpdir(), 'registry-local-'));
    const bucketRoot = `s3://${BUCKET}/team`;
    const tag = stack.taskQueue;
    const ids = { local: `registry-local-${tag}`, flat: `registry-s3-flat-${tag}`, nested: `registry-s3-nested-${tag}` };
    await writeRun(join(local, 'run-a'), ids.local, 'sl', 3, true);
    await writeRun(`${bucketRoot}/flat`, ids.flat, 'rl', 2, false);
    await writeRun(`${bucketRoot}/group/nested`, ids.nested, 'dpo', 5, true);

    // the registry's own view of the bucket: the metrics tail by a range read, checkpoints counted
    const [scan] = await new RunRegistry([bucketRoot]).refresh();
    expect(scan.error).toBeUndefined();
    expect(scan.runs.map((r) => [r.id, r.kind, r.model, r.uri, r.lastStep, r.lastMetrics, r.checkpoints, r.status])).toEqual([
      [ids.flat, 'rl', 'tiny-qwen3', `${bucketRoot}/flat`, 1, { step: 1, train_mean_nll: 2 }, 0, 'running'],
      [ids.nested, 'dpo', 'tiny-qwen3', `${bucketRoot}/group/nested`, 4, { step: 4, train_mean_nll: -1 }, 1, 'running'],
    ]);

    // Temporal knows one run (terminated although its files say completed); the others it does not
    const handle = await stack.client.workflow.start('registryNoSuchWorkflow', {
      workflowId: ids.nested,
      taskQueue: `${tag}-nobody`,
      typedSearchAttributes: [{ key: StatusKey, value: 'running' }],
    });
    await handle.terminate('registry test');

    const res = await cookbookOn(stack, ['runs', '--wide', '--store', local, '--store', bucketRoot], { ...server.env });
    expect(res.err).toBe('');
    expect(res.code).toBe(0);
    const rows = res.out.trim().split('\n');
    expect(rows[0]).toMatch(/^RUN\s+KIND\s+MODEL\s+STATUS\s+STEP\s+METRICS\s+STORE URI$/);
    const row = (id: string) => rows.find((r) => r.startsWith(`${id} `))?.split(/\s{2,}/);
    expect(row(ids.local)).toEqual([ids.local, 'sl', 'tiny-qwen3', 'running (inferred)', '2', 'train_mean_nll=1', `file://${join(local, 'run-a')}`]);
    expect(row(ids.flat)).toEqual([ids.flat, 'rl', 'tiny-qwen3', 'running (inferred)', '1', 'train_mean_nll=2', `${bucketRoot}/flat`]);
    expect(row(ids.nested)).toEqual([ids.nested, 'dpo', 'tiny-qwen3', 'terminated (was running)', '4', 'train_mean_nll=-1', `${bucketRoot}/group/nested`]);
    expect(rows).toHaveLength(4);

    // Temporal not reachable: said once on stderr, every status the files' (the terminated run's files say it is going)
    const offline = await cookbookProcess(['runs', '--wide', '--store', bucketRoot, '--address', '127.0.0.1:1'], { env: { ...server.env } }).done;
    expect(offline.code).toBe(0);
    expect(offline.err.trim()).toMatch(/^statuses inferred from the files: cannot reach Temporal at 127\.0\.0\.1:1 [^\n]*$/);
    expect(offline.out.split('\n').find((r) => r.startsWith(`${ids.nested} `))?.split(/\s{2,}/)[3]).toBe('running (inferred)');

    // a bucket that does not exist: one line naming it, the other store still listed, exit 1
    const bad = await cookbookOn(stack, ['runs', '--store', `s3://registry-no-such-bucket/x`, '--store', local], { ...server.env });
    expect(bad.code).toBe(1);
    expect(bad.err.trim()).toBe('error: s3://registry-no-such-bucket/x: the bucket registry-no-such-bucket does not exist (create it, or fix the URI)');
    expect(bad.out).toContain(ids.local);
  }, 120_000);

  it('reads the tail of a long metrics.jsonl in the bucket by range reads', async () => {
    const s3 = new S3Storage(`s3://${BUCKET}/tail`);
    const rows = Array.from({ length: 2000 }, (_, step) => `{"step": ${step}, "loss": ${step / 2}}\n`).join('');
    await s3.put('metrics.jsonl', Buffer.from(rows));
    expect((await s3.getRange('metrics.jsonl', 0, 12))!.data.toString()).toBe('{"step": 0, ');
    expect(await s3.getRange('metrics.jsonl', -6)).toEqual({ data: Buffer.from('99.5}\n'), size: rows.length });
    expect((await s3.getRange('metrics.jsonl', rows.length + 10))!.data.length).toBe(0);
    await s3.put('empty.jsonl', Buffer.alloc(0));
    expect(await s3.getRange('empty.jsonl', -100)).toEqual({ data: Buffer.alloc(0), size: 0 });
    expect(await s3.getRange('absent.jsonl', -100)).toBeUndefined();
    expect((await s3.stat('metrics.jsonl'))!.size).toBe(rows.length);

    let bytesRead = 0;
    const counting = Object.assign(Object.create(s3) as S3Storage, {
      getRange: async (path: string, start: number, end?: number) => {
        const got = await s3.getRange(path, start, end);
        bytesRead += got?.data.length ?? 0;
        return got;
      },
    });
    expect(await lastJsonLine(counting, 'metrics.jsonl')).toEqual({ step: 1999, loss: 999.5 });
    expect(bytesRead).toBeLessThanOrEqual(16 * 1024);
    expect(rows.length).toBeGreaterThan(40_000);
  });
});
