// CaptureExporter (src/capture/exporter.ts) against sinks that record what they get: batching by size
// and by timer, order, drop-newest on a full queue, failures and timeouts counted (never thrown),
// invalid records refused at enqueue, flush and close.
import { describe, expect, it } from 'vitest';
import { CaptureExporter, type CaptureSink } from '../../src/capture/exporter.js';
import { StoreHttpSink } from '../../src/capture/http-sink.js';
import { parseWireRow, type CaptureRecord } from '../../src/capture/rows.js';
import { refusingPort } from '../support/free-port.js';

const row = (i: number): CaptureRecord => ({ type: 'wire_row', row: { run_id: 'r', iteration: i, sampled_tokens: [i], logprobs: [-0.5] } });
const iterations = (batch: readonly CaptureRecord[]) => batch.map((r) => (r.type === 'wire_row' ? r.row.iteration : null));

/** Keeps every batch; `gate` (when set) holds each export until released. */
class RecordingSink implements CaptureSink {
  batches: CaptureRecord[][] = [];
  gate: Promise<void> | null = null;
  failNext = 0;
  private waiters: Array<() => void> = [];
  async export(records: readonly CaptureRecord[]): Promise<void> {
    if (this.gate) await this.gate;
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new Error('store unreachable');
    }
    this.batches.push([...records]);
    for (const w of this.waiters.splice(0)) w();
  }
  nextBatch(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

function gated(): { gate: Promise<void>; open: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return { gate, open };
}

describe('CaptureExporter', () => {
  it('sends full batches at once and the rest on flush, in enqueue order', async () => {
    const sink = new RecordingSink();
    const exporter = new CaptureExporter(sink, { maxBatchSize: 4, flushIntervalMs: 60_000, log: () => undefined });
    const firstBatch = sink.nextBatch();
    for (let i = 0; i < 10; i++) expect(exporter.enqueue(row(i))).toBe(true);
    await firstBatch; // the size trigger fired although the interval is a minute away
    expect(await exporter.flush(5000)).toBe(true);
    expect(sink.batches.map((b) => b.length)).toEqual([4, 4, 2]);
    expect(sink.batches.flatMap(iterations)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(exporter.counters()).toEqual({ accepted: 10, sent: 10, dropped: 0, invalid: 0, failed: 0, failedBatches: 0, queued: 0 });
    await exporter.close();
  });

  it('sends a partial batch when the interval passes', async () => {
    const sink = new RecordingSink();
    const exporter = new CaptureExporter(sink, { maxBatchSize: 100, flushIntervalMs: 20, log: () => undefined });
    const arrived = sink.nextBatch();
    exporter.enqueue(row(1));
    exporter.enqueue(row(2));
    await arrived;
    expect(sink.batches.map(iterations)).toEqual([[1, 2]]);
    await exporter.close();
  });

  it('drops the newest records when the queue is full, and counts them', async () => {
    const sink = new RecordingSink();
    const { gate, open } = gated();
    sink.gate = gate;
    const exporter = new CaptureExporter(sink, { maxQueueSize: 3, maxBatchSize: 2, flushIntervalMs: 60_000, log: () => undefined });
    const accepted = [0, 1, 2, 3, 4].map((i) => exporter.enqueue(row(i)));
    expect(accepted).toEqual([true, true, true, false, false]);
    expect(exporter.counters()).toMatchObject({ accepted: 3, dropped: 2, queued: 3 });
    open();
    expect(await exporter.flush(5000)).toBe(true);
    expect(sink.batches.flatMap(iterations)).toEqual([0, 1, 2]);
    await exporter.close();
  });

  it('counts a failing sink without throwing, and keeps sending afterwards', async () => {
    const sink = new RecordingSink();
    sink.failNext = 1;
    const lines: string[] = [];
    const exporter = new CaptureExporter(sink, { maxBatchSize: 2, flushIntervalMs: 60_000, log: (l) => lines.push(l) });
    exporter.enqueue(row(0));
    exporter.enqueue(row(1));
    expect(await exporter.flush(5000)).toBe(false);
    exporter.enqueue(row(2));
    expect(await exporter.flush(5000)).toBe(true);
    expect(exporter.counters()).toMatchObject({ accepted: 3, sent: 1, failed: 2, failedBatches: 1, queued: 0 });
    expect(sink.batches.flatMap(iterations)).toEqual([2]);
    expect(lines[0]).toContain('store unreachable');
    await exporter.close();
    expect(lines.at(-1)).toContain('2 failed to send');
  });

  it('gives up on a sink that does not answer within the export timeout', async () => {
    const never: CaptureSink = { export: () => new Promise<void>(() => undefined) };
    const exporter = new CaptureExporter(never, { exportTimeoutMs: 50, flushIntervalMs: 60_000, log: () => undefined });
    exporter.enqueue(row(0));
    expect(await exporter.flush(5000)).toBe(false);
    expect(exporter.counters()).toMatchObject({ failed: 1, failedBatches: 1, queued: 0 });
    await exporter.close();
  });

  it('bounds flush by its timeout while a send is stuck, losing nothing that is queued', async () => {
    const sink = new RecordingSink();
    const { gate, open } = gated();
    sink.gate = gate;
    const exporter = new CaptureExporter(sink, { flushIntervalMs: 60_000, log: () => undefined });
    exporter.enqueue(row(0));
    expect(await exporter.flush(30)).toBe(false);
    expect(exporter.counters().queued).toBe(1);
    open();
    expect(await exporter.flush(5000)).toBe(true);
    expect(exporter.counters()).toMatchObject({ sent: 1, queued: 0 });
    await exporter.close();
  });

  it('refuses an invalid record at enqueue, naming the field once', async () => {
    const sink = new RecordingSink();
    const lines: string[] = [];
    const exporter = new CaptureExporter(sink, { log: (l) => lines.push(l) });
    const bad = { type: 'wire_row', row: { run_id: 'r', iteration: 'twelve' } } as unknown as CaptureRecord;
    expect(exporter.enqueue(bad)).toBe(false);
    expect(exporter.enqueue(bad)).toBe(false);
    expect(exporter.enqueue({ type: 'annotation', annotation: { event_id: '' } })).toBe(false);
    expect(exporter.counters()).toMatchObject({ invalid: 3, accepted: 0 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('iteration');
    await exporter.close();
  });

  it('close is idempotent, sends what is queued, and counts later records as dropped', async () => {
    const sink = new RecordingSink();
    const exporter = new CaptureExporter(sink, { flushIntervalMs: 60_000, log: () => undefined });
    exporter.enqueue(row(7));
    await Promise.all([exporter.close(), exporter.close()]);
    expect(sink.batches.flatMap(iterations)).toEqual([7]);
    expect(exporter.enqueue(row(8))).toBe(false);
    expect(exporter.counters()).toMatchObject({ sent: 1, dropped: 1, queued: 0 });
  });
});

describe('StoreHttpSink', () => {
  it('a store that refuses connections costs the producer nothing: counted, never thrown', async () => {
    const refusing = await refusingPort();
    try {
      const lines: string[] = [];
      const exporter = new CaptureExporter(new StoreHttpSink(`http://127.0.0.1:${refusing.port}`), { maxBatchSize: 2, flushIntervalMs: 60_000, log: (l) => lines.push(l) });
      for (let i = 0; i < 5; i++) expect(exporter.enqueue(row(i))).toBe(true);
      expect(await exporter.flush(10_000)).toBe(false);
      expect(exporter.counters()).toMatchObject({ accepted: 5, sent: 0, failed: 5, failedBatches: 3, queued: 0 });
      expect(lines).toHaveLength(1); // the first failure of the outage; the rest are counted
      expect(lines[0]).toBe(`capture: a batch of 2 records failed to send: capture store http://127.0.0.1:${refusing.port}/ingest unreachable: ECONNREFUSED`);
      await exporter.close();
      expect(lines.at(-1)).toContain('5 failed to send');
    } finally {
      refusing.release();
    }
  });
});

describe('capture rows', () => {
  it('names the row and the field at fault', () => {
    expect(() => parseWireRow({ run_id: 'r', sampled_tokens: [1, 2.5] }, 'wire row 3')).toThrow(/^wire row 3: sampled_tokens\.1: /);
    expect(() => parseWireRow({ run_id: 'r', iteration: 2 ** 31 }, 'wire row 0')).toThrow(/^wire row 0: iteration: /);
    expect(() => parseWireRow({ run_id: 'r', colour: 'blue' })).toThrow(/colour/);
    expect(parseWireRow({ run_id: 'r', seq_id: 2 ** 40, metadata: { tools: ['a'] } })).toMatchObject({ seq_id: 2 ** 40 });
  });
});
