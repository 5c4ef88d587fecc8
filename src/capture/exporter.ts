/**
 * The capture exporter (tinker-cookbook 0.6.1 `capture/exporter.py`): producers hand it rows, and it
 * sends them in the background, batched, to a sink (the store daemon over HTTP: `StoreHttpSink`).
 * Capture must never slow or break what it watches, so:
 * - `enqueue` never blocks, never throws and never awaits: a full queue drops the NEWEST record
 *   (counted in `dropped`), an invalid record is counted in `invalid` (and named once on the log);
 *   token lists are kept as given (not copied), so a producer must not change them afterwards;
 * - a batch is sent when `maxBatchSize` records wait or `flushIntervalMs` has passed since the first of
 *   them, whichever comes first, one batch in flight at a time, in enqueue order;
 * - a sink failure or a send past `exportTimeoutMs` is counted (`failed` records, `failedBatches`), logged
 *   (the first of an outage, then a summary at most every 30 s) and never thrown: those records are lost
 *   (the store's ingest is idempotent, so a caller that wants retries can resend them itself);
 * - `flush(timeoutMs)` resolves `true` once everything enqueued before it reached the sink, `false` on
 *   timeout or a failure meanwhile; `close(timeoutMs)` flushes, stops, and drops (counted) later enqueues.
 *   A process about to exit with records still queued sends them first (`beforeExit`), as the
 *   reference's `atexit` shutdown does; call `close()` to be sure.
 *
 * Usage:
 * ```ts
 * import { StoreHttpSink } from './http-sink.js';
 * import { ensureCaptureStore } from './store/client.js';
 * const exporter = new CaptureExporter(new StoreHttpSink(await ensureCaptureStore(dataDir)));
 * exporter.enqueue({ type: 'wire_row', row: { run_id: 'r1', iteration: 3, prompt_tokens, sampled_tokens, logprobs, created_at: nowSeconds() } });
 * exporter.enqueue({ type: 'annotation', annotation: { event_id: randomUUID(), run_id: 'r1', kind: 'train_op', payload } });
 * exporter.counters(); // { accepted, sent, dropped, invalid, failed, failedBatches, queued }
 * await exporter.close();
 * ```
 */
import { parseCaptureRecord, type CaptureRecord } from './rows.js';

/** Where batches go. `export` rejects on failure; `signal` aborts when the exporter's deadline passes. */
export interface CaptureSink {
  export(records: readonly CaptureRecord[], signal: AbortSignal): Promise<void>;
}

export interface CaptureExporterOptions {
  /** Records held at most; beyond, the newest is dropped. */
  maxQueueSize?: number;
  maxBatchSize?: number;
  flushIntervalMs?: number;
  /** A batch not acknowledged by then counts as failed. */
  exportTimeoutMs?: number;
  /** Where warnings go (one line each); stderr by default. */
  log?: (line: string) => void;
}

export interface ExporterCounters {
  /** Records taken into the queue. */
  accepted: number;
  /** Records the sink acknowledged. */
  sent: number;
  /** Records refused because the queue was full or the exporter closed. */
  dropped: number;
  /** Records refused because they did not match the row schema. */
  invalid: number;
  /** Records in batches the sink failed (or did not answer in time). */
  failed: number;
  failedBatches: number;
  /** Records waiting or in flight. */
  queued: number;
}

const DEFAULTS = { maxQueueSize: 4096, maxBatchSize: 256, flushIntervalMs: 1000, exportTimeoutMs: 10_000 };
const FAILURE_REPORT_INTERVAL_MS = 30_000;

// One `beforeExit` listener for every open exporter (a listener each would trip Node's leak warning).
const openExporters = new Set<CaptureExporter>();
let beforeExitHooked = false;
function watchExit(exporter: CaptureExporter): void {
  openExporters.add(exporter);
  if (beforeExitHooked) return;
  beforeExitHooked = true;
  process.on('beforeExit', () => {
    for (const e of openExporters) e.drainBeforeExit();
  });
}

export class CaptureExporter {
  private readonly options: Required<Omit<CaptureExporterOptions, 'log'>>;
  private readonly log: (line: string) => void;
  private readonly queue: CaptureRecord[] = [];
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending = false;
  private pumpPending = false;
  private urgent = 0;
  private closing: Promise<void> | null = null;
  private readonly progress = new Set<() => void>();
  private readonly count = { accepted: 0, sent: 0, dropped: 0, invalid: 0, failed: 0, failedBatches: 0 };
  private outageSince = 0;
  private failuresSinceReport = 0;
  private lastFailureReport = 0;

  constructor(
    private readonly sink: CaptureSink,
    options: CaptureExporterOptions = {},
  ) {
    this.options = {
      maxQueueSize: options.maxQueueSize ?? DEFAULTS.maxQueueSize,
      maxBatchSize: options.maxBatchSize ?? DEFAULTS.maxBatchSize,
      flushIntervalMs: options.flushIntervalMs ?? DEFAULTS.flushIntervalMs,
      exportTimeoutMs: options.exportTimeoutMs ?? DEFAULTS.exportTimeoutMs,
    };
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    watchExit(this);
  }

  /** Takes a record for export; `false` when it was dropped or invalid. Never throws, never waits. */
  enqueue(record: CaptureRecord): boolean {
    try {
      if (this.closing !== null || this.queue.length + this.inFlight >= this.options.maxQueueSize) {
        this.count.dropped += 1;
        return false;
      }
      let parsed: CaptureRecord;
      try {
        parsed = parseCaptureRecord(record, `capture ${record.type === 'annotation' ? 'annotation' : 'wire row'}`);
      } catch (error) {
        if (this.count.invalid === 0) this.log(`capture: dropped an invalid record (${(error as Error).message}); later ones are only counted`);
        this.count.invalid += 1;
        return false;
      }
      this.queue.push(parsed);
      this.count.accepted += 1;
      this.schedule();
      return true;
    } catch {
      this.count.dropped += 1;
      return false;
    }
  }

  counters(): ExporterCounters {
    return { ...this.count, queued: this.queue.length + this.inFlight };
  }

  /** Sends everything enqueued so far; `true` when all of it reached the sink within `timeoutMs`. */
  async flush(timeoutMs = this.options.exportTimeoutMs): Promise<boolean> {
    const target = this.count.accepted;
    const failedBefore = this.count.failed;
    const done = () => this.count.sent + this.count.failed >= target;
    if (done()) return this.count.failed === failedBefore;
    this.urgent += 1;
    try {
      this.pump();
      const reached = await this.waitFor(done, timeoutMs);
      return reached && this.count.failed === failedBefore;
    } finally {
      this.urgent -= 1;
    }
  }

  /** Flushes (waiting at most `timeoutMs`), then stops; idempotent. Later enqueues are counted as dropped. */
  close(timeoutMs = 5000): Promise<void> {
    this.closing ??= (async () => {
      await this.flush(timeoutMs);
      if (this.timer !== null) clearTimeout(this.timer);
      this.timer = null;
      openExporters.delete(this);
      const { dropped, invalid, failed } = this.count;
      const unsent = this.queue.length + this.inFlight;
      if (dropped + invalid + failed + unsent > 0) {
        this.log(`capture exporter closed with losses: ${dropped} dropped (queue full), ${invalid} invalid, ${failed} failed to send, ${unsent} unsent`);
      }
    })();
    return this.closing;
  }

  /** @internal The process is about to exit with records queued: send them (the pending send keeps it alive). */
  drainBeforeExit(): void {
    if (this.queue.length > 0 && !this.sending) this.pump();
  }

  private schedule(): void {
    if (this.sending) return;
    if (this.queue.length >= this.options.maxBatchSize || this.urgent > 0) {
      // Not synchronously: the caller's stack is the sampling path, and a send serialises the batch.
      if (!this.pumpPending) {
        this.pumpPending = true;
        setImmediate(() => {
          this.pumpPending = false;
          this.pump();
        });
      }
      return;
    }
    if (this.timer === null) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.pump();
      }, this.options.flushIntervalMs);
      this.timer.unref();
    }
  }

  private pump(): void {
    if (this.sending || this.queue.length === 0) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.queue.splice(0, this.options.maxBatchSize);
    this.sending = true;
    this.inFlight = batch.length;
    void this.send(batch).finally(() => {
      this.sending = false;
      this.inFlight = 0;
      for (const wake of [...this.progress]) wake();
      if (this.queue.length > 0) {
        if (this.urgent > 0 || this.closing !== null || this.queue.length >= this.options.maxBatchSize) this.pump();
        else this.schedule();
      }
    });
  }

  private async send(batch: CaptureRecord[]): Promise<void> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(`no answer from the capture sink within ${this.options.exportTimeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, this.options.exportTimeoutMs);
    });
    try {
      // A sink that ignores the signal still cannot hold the exporter past the deadline.
      await Promise.race([Promise.resolve().then(() => this.sink.export(batch, controller.signal)), deadline]);
      this.count.sent += batch.length;
      this.outageSince = 0;
    } catch (error) {
      this.count.failed += batch.length;
      this.count.failedBatches += 1;
      this.reportFailure(error, batch.length);
    } finally {
      clearTimeout(timer);
    }
  }

  private reportFailure(error: unknown, size: number): void {
    const now = Date.now();
    const message = error instanceof Error ? error.message : String(error);
    if (this.outageSince === 0) {
      this.outageSince = now;
      this.lastFailureReport = now;
      this.failuresSinceReport = 0;
      this.log(`capture: a batch of ${size} records failed to send: ${message}`);
      return;
    }
    this.failuresSinceReport += 1;
    if (now - this.lastFailureReport >= FAILURE_REPORT_INTERVAL_MS) {
      this.log(`capture: sink still failing (${this.failuresSinceReport} batches since the last report): ${message}`);
      this.lastFailureReport = now;
      this.failuresSinceReport = 0;
    }
  }

  private waitFor(done: () => boolean, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const finish = (value: boolean) => {
        clearTimeout(timer);
        this.progress.delete(check);
        resolve(value);
      };
      const check = () => {
        if (done()) finish(true);
      };
      const timer = setTimeout(() => finish(done()), Math.max(0, timeoutMs));
      this.progress.add(check);
      check();
    });
  }
}
