// The capture store (src/capture/store/) as a user runs it: `cookbook capture serve` processes on real
// SQLite files, over HTTP. Concurrent ingest loses nothing acknowledged; a SIGKILLed daemon restarted
// keeps every acknowledged row; a resend is deduped; the stream delivers rows in cursor order;
// retention and the size cap remove the oldest rows (counted); credentials are redacted; a corrupted or
// locked store file ends the daemon with one line naming it, and leaves the file as it was.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { CaptureExporter } from '../../src/capture/exporter.js';
import { StoreHttpSink } from '../../src/capture/http-sink.js';
import type { CaptureRecord, StreamEvent } from '../../src/capture/rows.js';
import { CaptureStoreClient, DAEMON_ENTRY, ensureCaptureStore } from '../../src/capture/store/client.js';
import { readDaemonInfo, STORE_FILE } from '../../src/capture/store/daemon.js';
import { cookbookProcess } from '../support/cli.js';

const dirs: string[] = [];
const pids = new Set<number>();
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'h61d-store-'));
  dirs.push(dir);
  return dir;
}

afterAll(() => {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * The daemon in the foreground, up once it says where it listens: `cookbook capture serve`'s own entry,
 * as ensureCaptureStore starts it (the refusals below go through `cookbook capture serve` itself).
 */
async function serve(dir: string, flags: string[] = []) {
  const proc = daemonProcess(['--data-dir', dir, ...flags]);
  await proc.until();
  const url = /listening on (http:\/\/\S+)/.exec(proc.out())![1];
  pids.add(proc.child.pid!);
  return { proc, url, client: new CaptureStoreClient(url) };
}

function daemonProcess(args: string[]) {
  const child = spawn(process.execPath, [DAEMON_ENTRY, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const done = new Promise<{ code: number; out: string; err: string }>((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, out, err })));
  const listening = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => /listening on/.test(out) && resolve());
    void done.then(() => reject(new Error(`the daemon exited before listening: ${out}${err}`)));
  });
  return { child, done, out: () => out, until: async () => listening };
}

const wire = (session: string, seq: number, extra: Record<string, unknown> = {}): CaptureRecord => ({
  type: 'wire_row',
  row: { run_id: 'load', sampling_session_id: session, seq_id: seq, sample_idx: 0, iteration: seq, prompt_tokens: [1, 2, 3], sampled_tokens: [seq % 1000, 7], logprobs: [-0.25, -1.5], ...extra },
});

describe('capture store daemon', () => {
  it('64 concurrent clients: every acknowledged row is stored once; a resend is deduped', async () => {
    const { proc, client } = await serve(freshDir());
    const batches = 4;
    const perBatch = 25;
    const acks = await Promise.all(
      Array.from({ length: 64 }, async (_, c) => {
        const sender = new CaptureStoreClient(client.baseUrl);
        let inserted = 0;
        for (let b = 0; b < batches; b++) {
          const records = Array.from({ length: perBatch }, (_, i) => wire(`client-${c}`, b * perBatch + i));
          inserted += (await sender.ingest(records)).inserted;
        }
        return inserted;
      }),
    );
    expect(acks.reduce((a, b) => a + b, 0)).toBe(64 * batches * perBatch);
    const stats = await client.stats();
    expect(stats.wire_rows).toBe(64 * batches * perBatch);
    expect(stats.cursor).toBe(64 * batches * perBatch);
    // The stream pages through that backlog (past its 1000-row page, under backpressure) in cursor order.
    const backlog = new AbortController();
    const streamed: number[] = [];
    for await (const event of client.stream({ cursor: 0, signal: backlog.signal })) {
      streamed.push(event.cursor);
      if (streamed.length === stats.cursor) backlog.abort();
    }
    expect(streamed).toEqual(Array.from({ length: stats.cursor }, (_, i) => i + 1));
    const again = await client.ingest([wire('client-3', 0), wire('client-63', 99), wire('client-64', 0)]);
    expect(again).toMatchObject({ inserted: 1, deduped: 2 });
    // Rows without the full dedupe key are never deduped (SQLite's NULLs are distinct), as the reference.
    expect((await client.ingest([wire('x', 1, { seq_id: null }), wire('x', 1, { seq_id: null })])).inserted).toBe(2);
    // A body past the sink's limit goes in halves, in order, and is all stored.
    const split = await new StoreHttpSink(client.baseUrl, 2000).post(Array.from({ length: 40 }, (_, i) => wire('split', i)));
    expect(split).toMatchObject({ inserted: 40, deduped: 0 });
    expect((await client.rows({ sampling_session_id: 'split' })).rows.map((r) => r.seq_id)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    proc.child.kill('SIGTERM');
    expect((await proc.done).code).toBe(0);
  });

  it('a daemon SIGKILLed mid-ingest keeps, once restarted, every row it acknowledged', async () => {
    const dir = freshDir();
    const first = await serve(dir);
    const acked: CaptureRecord[][] = [];
    let killed = false;
    const exited = first.proc.done;
    // Eight senders keep batches in flight; the daemon is killed once 40 batches are acknowledged,
    // so some requests die with it unanswered.
    await Promise.all(
      Array.from({ length: 8 }, async (_, c) => {
        for (let b = 0; !killed; b++) {
          const batch = Array.from({ length: 20 }, (_, i) => wire(`k${c}`, b * 20 + i));
          try {
            await first.client.ingest(batch);
          } catch {
            return; // the daemon died with this batch in flight: unacknowledged
          }
          acked.push(batch);
          if (acked.length === 40 && !killed) {
            killed = true;
            first.proc.child.kill('SIGKILL');
          }
        }
      }),
    );
    expect((await exited).code).not.toBe(0);
    const second = await serve(dir);
    const stored = await second.client.allRows({ run_id: 'load' });
    const keys = new Set(stored.map((r) => `${r.sampling_session_id}/${r.seq_id}`));
    const ackedKeys = acked.flat().map((r) => (r.type === 'wire_row' ? `${r.row.sampling_session_id}/${r.row.seq_id}` : ''));
    expect(ackedKeys.length).toBeGreaterThanOrEqual(40 * 20);
    expect(ackedKeys.filter((k) => !keys.has(k))).toEqual([]);
    // Resending what was acknowledged stores nothing twice.
    const resent = await second.client.ingest(acked.flat());
    expect(resent.inserted).toBe(0);
    expect(resent.deduped).toBe(ackedKeys.length);
    second.proc.child.kill('SIGTERM');
    await second.proc.done;
  });

  it('streams rows and annotations in cursor order as concurrent writers commit them; the exporter feeds it', async () => {
    const { proc, client } = await serve(freshDir());
    const expected = 6 * 30 + 10;
    const controller = new AbortController();
    const received: StreamEvent[] = [];
    const streamed = (async () => {
      for await (const event of client.stream({ cursor: 0, signal: controller.signal })) {
        received.push(event);
        if (received.length === expected) controller.abort();
      }
    })();
    const exporter = new CaptureExporter(new StoreHttpSink(client.baseUrl), { maxBatchSize: 7, flushIntervalMs: 10, log: () => undefined });
    for (let i = 0; i < 10; i++) exporter.enqueue({ type: 'annotation', annotation: { event_id: `ev-${i}`, run_id: 'load', kind: 'train_op', payload: { step: i } } });
    await Promise.all(Array.from({ length: 6 }, (_, c) => (async () => {
      for (let b = 0; b < 3; b++) await client.ingest(Array.from({ length: 10 }, (_, i) => wire(`s${c}`, b * 10 + i)));
    })()));
    expect(await exporter.flush(10_000)).toBe(true);
    expect(exporter.counters()).toMatchObject({ accepted: 10, sent: 10, failed: 0, dropped: 0 });
    await exporter.close();
    await streamed;
    const cursors = received.map((e) => e.cursor);
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
    expect(new Set(cursors).size).toBe(expected);
    expect(received.filter((e) => e.type === 'annotation').map((e) => (e.type === 'annotation' ? e.annotation.event_id : ''))).toEqual(Array.from({ length: 10 }, (_, i) => `ev-${i}`));
    // Resuming after a cursor gives exactly the rest.
    const resumed: StreamEvent[] = [];
    const resume = new AbortController();
    for await (const event of client.stream({ cursor: cursors[99], signal: resume.signal })) {
      resumed.push(event);
      if (resumed.length === expected - 100) resume.abort();
    }
    expect(resumed[0].cursor).toBe(cursors[100]);
    // The CLI's tail follows the same stream.
    const tail = await cookbookProcess(['capture', 'tail', '--url', client.baseUrl, '--cursor', String(cursors[expected - 3]), '--count', '2', '--json']).done;
    expect(tail.code).toBe(0);
    expect(tail.out.trim().split('\n').map((l) => (JSON.parse(l) as StreamEvent).cursor)).toEqual(cursors.slice(expected - 2));
    proc.child.kill('SIGTERM');
    await proc.done;
  });

  it('queries by run, iteration range, time, purpose and metadata; bad filters and bad rows get one line, and nothing of a bad batch is stored', async () => {
    const { proc, client } = await serve(freshDir());
    const now = Date.now() / 1000;
    await client.ingest([
      wire('q', 1, { run_id: 'a', iteration: 1, purpose: 'serve', created_at: now - 100, metadata: { tool_use: true, label: 'good' } }),
      wire('q', 2, { run_id: 'a', iteration: 2, purpose: 'serve', created_at: now - 50, metadata: { tool_use: false, label: 'bad' } }),
      wire('q', 3, { run_id: 'a', iteration: 5, purpose: 'rollout', created_at: now, metadata: { labels: { quality: 3 } } }),
      wire('q', 4, { run_id: 'b', iteration: 2, purpose: 'serve', created_at: now }),
    ]);
    const seqs = async (filter: Parameters<CaptureStoreClient['rows']>[0]) => (await client.rows(filter)).rows.map((r) => r.seq_id);
    expect(await seqs({ run_id: 'a', iteration_min: 2, iteration_max: 5 })).toEqual([2, 3]);
    expect(await seqs({ since: now - 60 })).toEqual([2, 3, 4]);
    expect(await seqs({ purpose: 'serve', until: now - 60 })).toEqual([1]);
    expect(await seqs({ meta: { tool_use: 'true' } })).toEqual([1]);
    expect(await seqs({ meta: { label: 'bad' } })).toEqual([2]);
    expect(await seqs({ meta: { 'labels.quality': '3' } })).toEqual([3]);
    expect(await seqs({ has: ['label'] })).toEqual([1, 2]);
    expect((await client.rows({}, { cursor: 2, limit: 1 })).rows.map((r) => r.cursor)).toEqual([3]);
    await expect(fetch(`${client.baseUrl}/rows?iteration=two`).then((r) => r.json())).resolves.toEqual({ error: 'iteration must be an integer, got "two"' });
    const refused = await fetch(`${client.baseUrl}/ingest`, { method: 'POST', body: JSON.stringify({ records: [wire('bad', 1), { type: 'wire_row', row: { run_id: 'a', logprobs: ['x'] } }] }) });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: 'record 1: logprobs.0: must be a finite number, got "x"' });
    expect((await client.stats()).wire_rows).toBe(4);
    const table = await cookbookProcess(['capture', 'query', '--url', client.baseUrl, '--run-id', 'a', '--tool-use']).done;
    const lines = table.out.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^cursor\s+run\s+iter/);
    expect(lines[1]).toMatch(/^1\s+a\s+1\s/);
    proc.child.kill('SIGTERM');
    await proc.done;
  });

  it('redacts credentials in metadata and annotation payloads before storing them', async () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'daemon.lock'), 'not a database'); // a damaged lock file holds nothing: taken all the same
    const { proc, client } = await serve(dir);
    await client.ingest([
      wire('r', 1, {
        metadata: {
          request: { headers: { Authorization: 'Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz', 'x-api-key': 'sk-ant-api03-zyxwvutsrqponmlkjih', 'content-type': 'application/json' } },
          client: { tinker_api_key: 'tml-0123456789abcdefghij', base_url: 'http://127.0.0.1:1' },
          prompt: 'my key is sk-proj-ABCDEFGHIJKLMNOPQRSTUV, keep it safe',
          max_tokens: 64,
        },
      }),
      { type: 'annotation', annotation: { event_id: 'e', run_id: 'load', kind: 'note', payload: { env: { OPENAI_API_KEY: 'sk-abcdefghijklmnopqrstuvwx', HF_TOKEN: 'hf_abcdefghijklmnopqrstuvwxyz0123' } } } },
    ]);
    const [row] = (await client.rows()).rows;
    expect(row.metadata).toEqual({
      request: { headers: { Authorization: '[REDACTED]', 'x-api-key': '[REDACTED]', 'content-type': 'application/json' } },
      client: { tinker_api_key: '[REDACTED]', base_url: 'http://127.0.0.1:1' },
      prompt: 'my key is [REDACTED], keep it safe',
      max_tokens: 64,
    });
    const [annotation] = (await client.annotations()).annotations;
    expect(annotation.payload).toEqual({ env: { OPENAI_API_KEY: '[REDACTED]', HF_TOKEN: '[REDACTED]' } });
    expect((await client.stats()).redacted).toBe(6);
    // Nothing of the keys reached the file, the WAL included.
    proc.child.kill('SIGTERM');
    await proc.done;
    const raw = readFileSync(join(dir, STORE_FILE), 'latin1');
    expect(raw).toContain('[REDACTED]');
    expect(raw).not.toMatch(/sk-ant|sk-proj|tml-0123|hf_abc/);
  });

  it('keeps to its retention and size cap, oldest rows first, and counts what it removed', async () => {
    const dir = freshDir();
    const { proc, client } = await serve(dir, ['--retention-days', '7', '--max-bytes', '400kB']);
    const now = Date.now() / 1000;
    const old = await client.ingest([wire('old', 1, { created_at: now - 10 * 86_400 }), wire('old', 2, { created_at: now - 8 * 86_400 }), wire('old', 3, { created_at: now - 86_400 })]);
    expect(old).toMatchObject({ inserted: 3, removed: 2 });
    expect((await client.rows()).rows.map((r) => r.seq_id)).toEqual([3]);
    const big = Array.from({ length: 2000 }, (_, i) => i);
    for (let b = 0; b < 20; b++) await client.ingest(Array.from({ length: 5 }, (_, i) => wire('big', b * 5 + i, { prompt_tokens: big })));
    const stats = await client.stats();
    expect(stats.used_bytes).toBeLessThanOrEqual(400_000);
    expect(stats.removed).toMatchObject({ retention: 2 });
    expect(stats.removed.cap).toBeGreaterThan(0);
    const kept = await client.allRows();
    expect(kept.length + stats.removed.cap).toBe(1 + 100);
    // The oldest went first: what is left is the newest, contiguous up to the last row stored.
    expect(kept.at(-1)!.seq_id).toBe(99);
    expect(kept.map((r) => r.cursor)).toEqual(Array.from({ length: kept.length }, (_, i) => stats.cursor - kept.length + 1 + i));
    const printed = await cookbookProcess(['capture', 'stats', '--url', client.baseUrl]).done;
    expect(printed.out).toContain(`removed         2 by retention, ${stats.removed.cap} by the size cap`);
    expect(printed.out).toContain('(cap: 0.4 MB)');
    proc.child.kill('SIGTERM');
    await proc.done;
  });

  it('an exporter whose process ends without close() still sends what it queued', async () => {
    const { proc, client } = await serve(freshDir());
    const script = join(import.meta.dirname, 'exporter-exit-main.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', script, client.baseUrl], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(err).toBe('');
    expect(code).toBe(0);
    expect((await client.rows({ sampling_session_id: 'exit' })).rows.map((r) => r.seq_id)).toEqual([0, 1, 2, 3, 4]);
    proc.child.kill('SIGTERM');
    await proc.done;
  });

  it('refuses a corrupted store file with one line naming it, and leaves the file as it was', async () => {
    const garbage = async () => {
      const dir = freshDir();
      const file = join(dir, STORE_FILE);
      writeFileSync(file, 'these are not the rows you are looking for'.repeat(200));
      const before = readFileSync(file);
      const result = await cookbookProcess(['capture', 'serve', '--data-dir', dir]).done;
      expect(result.code).toBe(2);
      expect(result.err.trim().split('\n')).toHaveLength(1);
      expect(result.err).toContain(`capture store ${file} is corrupted`);
      expect(readFileSync(file).equals(before)).toBe(true);
      await expect(ensureCaptureStore(dir, { idleShutdownMinutes: 1 })).rejects.toThrow(`capture store ${file} is corrupted`);
    };
    // A real store with a damaged page: the integrity check finds it; nothing is written to it.
    const damagedPage = async () => {
      const dir = freshDir();
      const file = join(dir, STORE_FILE);
      const db = new Database(file);
      db.exec('CREATE TABLE filler (x TEXT); ');
      const insert = db.prepare('INSERT INTO filler VALUES (?)');
      for (let i = 0; i < 200; i++) insert.run('y'.repeat(500));
      db.close();
      const bytes = readFileSync(file);
      bytes.fill(0xee, 4096 + 100, 4096 * 3);
      writeFileSync(file, bytes);
      const damaged = await cookbookProcess(['capture', 'serve', '--data-dir', dir]).done;
      expect(damaged.code).toBe(2);
      expect(damaged.err).toMatch(new RegExp(`capture store ${file} is corrupted \\(`));
      expect(readFileSync(file).equals(bytes)).toBe(true);
    };
    await Promise.all([garbage(), damagedPage()]);
  });

  it('one writer per folder: a second daemon exits naming the owner; a store locked by another process gets one clear line; an idle daemon exits', async () => {
    const owned = async () => {
      const dir = freshDir();
      const [url1, url2] = await Promise.all([ensureCaptureStore(dir, { idleShutdownMinutes: 1 }), ensureCaptureStore(dir, { idleShutdownMinutes: 1 })]);
      expect(url1).toBe(url2);
      const owner = readDaemonInfo(dir)!;
      pids.add(owner.pid);
      const second = await cookbookProcess(['capture', 'serve', '--data-dir', dir]).done;
      expect(second.code).toBe(1);
      expect(second.err.trim()).toBe(`another capture store daemon owns ${dir} (pid ${owner.pid}, ${owner.base_url}); use it, or stop it first`);
      expect(await ensureCaptureStore(dir)).toBe(url1);
      process.kill(owner.pid, 'SIGTERM');
    };
    // A daemon with an idle limit exits by itself, taking its discovery file with it.
    const idle = async () => {
      const dir = freshDir();
      const daemon = await serve(dir, ['--idle-shutdown-minutes', '0.01']);
      expect((await daemon.proc.done).code).toBe(0);
      expect(readDaemonInfo(dir)).toBeNull();
    };
    const locked = async () => {
      const dir = freshDir();
      const holder = new Database(join(dir, STORE_FILE));
      holder.exec('BEGIN EXCLUSIVE');
      const result = await cookbookProcess(['capture', 'serve', '--data-dir', dir]).done;
      holder.close();
      expect(result.code).toBe(2);
      expect(result.err.trim().split('\n')).toHaveLength(1);
      expect(result.err).toContain(`capture store ${join(dir, STORE_FILE)} is locked by another process`);

      // Locked while the daemon runs: the batch is refused (503, one line), not half-stored; resent once the lock is gone, it is stored.
      const daemon = await serve(dir);
      const writer = new Database(join(dir, STORE_FILE));
      writer.exec('BEGIN IMMEDIATE');
      const refused = await fetch(`${daemon.url}/ingest`, { method: 'POST', body: JSON.stringify({ records: [wire('lock', 1)] }) });
      writer.exec('ROLLBACK');
      writer.close();
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: string }).error).toBe(`capture store ${join(dir, STORE_FILE)} is locked by another process (another writer holds it); the batch was not stored, resend it`);
      expect(await daemon.client.ingest([wire('lock', 1)])).toMatchObject({ inserted: 1, deduped: 0 });
      daemon.proc.child.kill('SIGTERM');
      await daemon.proc.done;
    };
    await Promise.all([owned(), idle(), locked()]);
  });
});
