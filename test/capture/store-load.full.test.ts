// Fuller tier: the capture store under long concurrent load through repeated SIGKILLs. 64 clients send
// batches without pause; the daemon is killed three times mid-load and restarted on the same folder;
// a client whose batch got no answer resends it to the next daemon (ingest is idempotent). At the end
// every acknowledged row is in the store exactly once and nothing else is.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { CaptureRecord } from '../../src/capture/rows.js';
import { CaptureStoreClient } from '../../src/capture/store/client.js';
import { cookbookProcess } from '../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'h61d-load-'));
const pids = new Set<number>();
afterAll(() => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

async function serve() {
  const proc = cookbookProcess(['capture', 'serve', '--data-dir', dir]);
  await proc.until(/listening on (http:\/\/\S+)/, 60_000);
  pids.add(proc.child.pid!);
  return { proc, url: /listening on (http:\/\/\S+)/.exec(proc.out())![1] };
}

it('64 clients through three SIGKILLs: every acknowledged row stored exactly once', async () => {
  const clients = 64;
  const batchesPerClient = 30;
  const perBatch = 50;
  let daemon = await serve();
  let generation = 0;
  const acked = new Set<string>();
  let ackedBatches = 0;
  let restarting: Promise<void> | null = null;
  const killAt = new Set([300, 900, 1400]);

  // One restart per generation, however many clients notice the dead daemon.
  const restart = async (seen: number): Promise<void> => {
    if (restarting) return restarting;
    if (generation !== seen) return;
    restarting = (async () => {
      daemon.proc.child.kill('SIGKILL');
      await daemon.proc.done;
      daemon = await serve();
      generation += 1;
    })();
    await restarting;
    restarting = null;
  };

  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      for (let b = 0; b < batchesPerClient; b++) {
        const batch: CaptureRecord[] = Array.from({ length: perBatch }, (_, i) => ({
          type: 'wire_row',
          row: { run_id: 'load', sampling_session_id: `c${c}`, seq_id: b * perBatch + i, sample_idx: 0, iteration: b, sampled_tokens: [i], logprobs: [-1] },
        }));
        for (;;) {
          const seen = generation;
          if (restarting) await restarting;
          try {
            await new CaptureStoreClient(daemon.url).ingest(batch);
            break;
          } catch {
            await restart(seen); // the daemon is gone: wait for the next, then resend
          }
        }
        for (let i = 0; i < perBatch; i++) acked.add(`c${c}/${b * perBatch + i}`);
        ackedBatches += 1;
        if (killAt.delete(ackedBatches)) void restart(generation);
      }
    }),
  );
  expect(generation).toBe(3);
  const client = new CaptureStoreClient(daemon.url);
  const rows = await client.allRows({ run_id: 'load' });
  const keys = rows.map((r) => `${r.sampling_session_id}/${r.seq_id}`);
  expect(new Set(keys).size).toBe(keys.length);
  expect(keys.length).toBe(clients * batchesPerClient * perBatch);
  const stored = new Set(keys);
  expect([...acked].filter((k) => !stored.has(k))).toEqual([]);
  daemon.proc.child.kill('SIGTERM');
  await daemon.proc.done;
});
