/**
 * The exporter's sink to the capture store daemon (src/capture/store/): one `POST /ingest` per batch,
 * wire rows and annotations together in enqueue order, so the store's shared cursor keeps that order.
 * The daemon answers only after the batch is committed, and ingest is idempotent (dedupe keys), so a
 * resend after an unanswered POST stores nothing twice. A body past `maxPostBytes` is split in halves
 * before sending (the daemon refuses larger ones with 413, which splits it too).
 */
import type { CaptureSink } from './exporter.js';
import type { CaptureRecord } from './rows.js';

/** The daemon's answer to an ingest. */
export interface IngestResult {
  inserted: number;
  deduped: number;
}

/** Well under the daemon's body cap (store/app.ts), as the reference keeps 8 MiB under 256 MiB. */
export const MAX_POST_BYTES = 8 * 1024 * 1024;

export class StoreHttpSink implements CaptureSink {
  private readonly baseUrl: string;

  constructor(
    baseUrl: string,
    private readonly maxPostBytes = MAX_POST_BYTES,
  ) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  async export(records: readonly CaptureRecord[], signal: AbortSignal): Promise<void> {
    await this.post(records, signal);
  }

  /** Posts records; resolves with the store's counts once they are committed. */
  async post(records: readonly CaptureRecord[], signal?: AbortSignal): Promise<IngestResult> {
    const body = JSON.stringify({ records });
    if (records.length > 1 && Buffer.byteLength(body) > this.maxPostBytes) return this.postHalves(records, signal);
    const url = `${this.baseUrl}/ingest`;
    let response: Response;
    try {
      response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal });
    } catch (error) {
      // fetch says only "fetch failed"; the reason (ECONNREFUSED, a reset, the deadline) is its cause.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new Error(`capture store ${url} unreachable: ${cause?.code ?? cause?.message ?? (error as Error).message}`);
    }
    const text = await response.text();
    if (response.status === 413 && records.length > 1) return this.postHalves(records, signal);
    if (!response.ok) throw new Error(`capture store answered ${response.status} to POST ${url}: ${errorText(text)}`);
    return JSON.parse(text) as IngestResult;
  }

  private async postHalves(records: readonly CaptureRecord[], signal?: AbortSignal): Promise<IngestResult> {
    const middle = Math.floor(records.length / 2);
    const first = await this.post(records.slice(0, middle), signal);
    const second = await this.post(records.slice(middle), signal);
    return { inserted: first.inserted + second.inserted, deduped: first.deduped + second.deduped };
  }
}

function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
  } catch {
    // not JSON: the raw text says more than a parse error would
  }
  return text.slice(0, 500);
}
