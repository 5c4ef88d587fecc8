// Tracking reads metrics.jsonl from where its last sync stopped (MetricsTail), not the whole file
// every step: proven by damaging an already-read line in place, which a full read refuses and the
// incremental read never touches. Falls back to the full, checked read on a rewrite (a restore),
// a destination holding fewer steps, or a lost cursor; leaves torn and unrecorded tails alone.
import { appendFileSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunStore } from '../../src/cookbook/run-store.js';
import { MetricsTail } from '../../src/cookbook/tracking/metrics-tail.js';
import { syncRun } from '../../src/cookbook/tracking/sync.js';
import { summaryOf } from '../../src/cookbook/tracking/wandb-format.js';
import { OfflineWandbRun } from '../../src/cookbook/tracking/wandb-offline.js';

function run() {
  const logPath = mkdtempSync(join(tmpdir(), 'cookbook-metrics-tail-'));
  const workflowId = `tail-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const store = new RunStore(logPath);
  store.init({ workflowId, kind: 'sl', config: { wandb_project: 'cookbook-tests' } }, new Set(['loss']));
  const write = (step: number, extra: Record<string, unknown> = {}) => store.writeMetrics({ step, loss: 10 - step, ...extra });
  return { logPath, workflowId, store, write };
}

/** Overwrites bytes of metrics.jsonl in place (same size, same inode), as a bit flip would. */
function damageInPlace(logPath: string, at: number, bytes: string) {
  const fd = openSync(join(logPath, 'metrics.jsonl'), 'r+');
  writeSync(fd, Buffer.from(bytes), 0, bytes.length, at);
  closeSync(fd);
}

const steps = (rows: Array<Record<string, unknown>>) => rows.map((r) => r.step);

describe('MetricsTail', () => {
  it('reads only the rows after its cursor, with the summary of the whole file', () => {
    const { logPath, store, write } = run();
    const tail = new MetricsTail(logPath);
    [0, 1, 2].forEach((s) => write(s, { only_at_0: s === 0 ? 1 : undefined }));
    const first = tail.read(-1);
    expect(first.full).toBe(true);
    expect(steps(first.rows)).toEqual([0, 1, 2]);
    first.commit();

    write(3);
    write(4, { 'eval/acc': 0.5 });
    const second = tail.read(2);
    expect(second.full).toBe(false);
    expect(steps(second.rows)).toEqual([3, 4]);
    expect(second.summary).toEqual(summaryOf(store.readMetrics()));
    // Not committed (the send failed): the same rows come again.
    expect(steps(tail.read(2).rows)).toEqual([3, 4]);
    second.commit();
    expect(tail.read(4).rows).toEqual([]);

    // Line 1 was read already: damaging it is invisible to the incremental read (it is not re-read)…
    damageInPlace(logPath, 2, 'X');
    write(5);
    const third = tail.read(4);
    expect(third.full).toBe(false);
    expect(steps(third.rows)).toEqual([5]);
    // …while the full read, which every sync did before, refuses the file naming the line.
    expect(() => store.readMetrics()).toThrow(/metrics\.jsonl:1: damaged/);
  });

  it('leaves a torn or unrecorded tail for later, and reads the row once it is committed', () => {
    const { logPath, write } = run();
    const tail = new MetricsTail(logPath);
    write(0);
    tail.read(-1).commit();
    appendFileSync(join(logPath, 'metrics.jsonl'), '{"step": 1, "lo');
    const torn = tail.read(0);
    expect(torn.full).toBe(false);
    expect(torn.rows).toEqual([]);
    torn.commit();
    write(1);
    expect(steps(tail.read(0).rows)).toEqual([1]);
  });

  it('falls back to the full read after a restore rewrote rows, for a destination behind the cursor, and without a cursor', () => {
    const { logPath, store, write } = run();
    const tail = new MetricsTail(logPath);
    [0, 1, 2, 3].forEach((s) => write(s, { replayed: false }));
    tail.read(-1).commit();
    store.truncateMetrics(2);
    [2, 3, 4].forEach((s) => write(s, { replayed: true }));
    const after = tail.read(3);
    expect(after.full).toBe(true);
    expect(steps(after.rows)).toEqual([0, 1, 2, 3, 4]);
    expect(after.summary).toEqual(summaryOf(store.readMetrics()));
    after.commit();

    // Another destination (`cookbook track` after an offline run) holds nothing: it gets every row.
    const behind = tail.read(-1);
    expect(behind.full).toBe(true);
    expect(steps(behind.rows)).toEqual([0, 1, 2, 3, 4]);

    rmSync(join(logPath, '.cookbook', 'tracking', 'metrics-read.json'));
    expect(tail.read(4).full).toBe(true);
    writeSync(openSync(join(logPath, '.cookbook', 'tracking', 'metrics-read.json'), 'w'), '{not json');
    expect(tail.read(4).full).toBe(true);
  });

  it('syncRun mirrors every row once through incremental reads, a restore and a damaged cursor', async () => {
    const { logPath, workflowId, store, write } = run();
    const env = { WANDB_MODE: 'offline' };
    for (let s = 0; s < 6; s++) {
      write(s);
      await syncRun(logPath, env);
    }
    store.truncateMetrics(4);
    [4, 5, 6].forEach((s) => write(s, { after_restore: 1 }));
    await syncRun(logPath, env);
    writeSync(openSync(join(logPath, '.cookbook', 'tracking', 'metrics-read.json'), 'w'), '[]');
    write(7);
    await syncRun(logPath, env);
    const offline = new OfflineWandbRun({ workflowId, logPath, project: 'cookbook-tests', name: null, config: {} });
    expect(steps(offline.readHistory())).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(offline.readSummary()).toEqual(summaryOf(store.readMetrics()));
    expect(JSON.parse(readFileSync(join(logPath, '.cookbook', 'tracking', 'metrics-read.json'), 'utf8')).lastStep).toBe(7);
  });
});
