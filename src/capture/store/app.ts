// The capture store's HTTP API on 127.0.0.1 (the reference's store/app.py, on node:http):
//   POST /ingest                 {"records": [CaptureRecord…]}: both kinds, in order, one transaction;
//                                answered after the commit with {inserted, deduped, removed, last_cursor}
//   POST /ingest/wire            {"rows": […]} and POST /ingest/annotations {"annotations": […]} (the reference's)
//   GET  /rows?<filters>         wire rows, cursor-paged: {rows, next_cursor} (filters: query.ts)
//   GET  /annotations?<filters>  annotations, cursor-paged
//   GET  /runs                   runs seen (no registration), and /runs/<id>/rows, /runs/<id>/annotations
//   GET  /stream?run_id=&cursor= SSE of both kinds in cursor order (`id:` is the cursor, `event:` the kind);
//                                resumes from ?cursor= or Last-Event-ID; a comment line every 15 s keeps it open
//   GET  /stats                  counts, bytes, limits, rows removed, redactions
//   GET  /healthz                liveness and identity (not activity, for the idle shutdown); GET /touch is
// Every error is JSON {"error": "<one line>"}.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { CaptureRecord, StreamEvent } from '../rows.js';
import { CaptureDb, IngestError, StoreFileError } from './db.js';
import { MAX_PAGE, QueryError, paramsToAnnotationFilter, paramsToRowFilter } from './query.js';

/** As the reference's daemon: one long-context batch must fit; the sink splits bodies past 8 MiB anyway. */
export const MAX_REQUEST_BYTES = 256 * 1024 * 1024;
const HEARTBEAT_MS = 15_000;

export interface StoreAppOptions {
  /** Fields `/healthz` reports so a client can tell this daemon from another that took the same port. */
  identity: Record<string, string | number>;
  /** Called on every request but `/healthz` (the idle shutdown's clock). */
  onActivity?: () => void;
  maxRequestBytes?: number;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface StoreApp {
  server: Server;
  /** Streams still open. */
  streams(): number;
  /** Ends the open streams (before the server closes: they would hold it open). */
  endStreams(): void;
}

export function createStoreApp(db: CaptureDb, options: StoreAppOptions): StoreApp {
  const listeners = new Set<() => void>();
  const openStreams = new Set<ServerResponse>();
  const startedAt = Date.now() / 1000;
  const served = { ingest_requests: 0, inserted: 0, deduped: 0, refused: 0 };
  const maxBytes = options.maxRequestBytes ?? MAX_REQUEST_BYTES;

  const ingest = (records: CaptureRecord[]) => {
    const result = db.ingest(records);
    served.ingest_requests += 1;
    served.inserted += result.inserted;
    served.deduped += result.deduped;
    if (result.inserted > 0) for (const wake of listeners) wake();
    return result;
  };

  const routes = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<unknown> => {
    const path = url.pathname;
    if (req.method === 'POST') {
      const body = await readJson(req, maxBytes);
      if (path === '/ingest') return ingest(listField(body, 'records') as CaptureRecord[]);
      if (path === '/ingest/wire') return ingest((listField(body, 'rows') as CaptureRecord[]).map((row) => ({ type: 'wire_row', row }) as unknown as CaptureRecord));
      if (path === '/ingest/annotations') return ingest((listField(body, 'annotations') as CaptureRecord[]).map((annotation) => ({ type: 'annotation', annotation }) as unknown as CaptureRecord));
      throw new HttpError(404, `no POST ${path} here`);
    }
    if (req.method !== 'GET') throw new HttpError(405, `${req.method} is not served here`);
    if (path === '/healthz') return { status: 'ok', pid: process.pid, ...options.identity };
    if (path === '/touch') return { status: 'ok' };
    if (path === '/stats') return { ...db.stats(), daemon: { pid: process.pid, started_at: startedAt, streams: openStreams.size, ...served } };
    if (path === '/runs') return { runs: db.runs() };
    const perRun = /^\/runs\/([^/]+)\/(rows|annotations)$/.exec(path);
    if (path === '/rows' || perRun?.[2] === 'rows') {
      const { filter, page } = paramsToRowFilter(url.searchParams);
      if (perRun) filter.run_id = decodeURIComponent(perRun[1]);
      const rows = db.rows(filter, page);
      return { rows, next_cursor: rows.at(-1)?.cursor ?? null };
    }
    if (path === '/annotations' || perRun?.[2] === 'annotations') {
      const { filter, page } = paramsToAnnotationFilter(url.searchParams);
      if (perRun) filter.run_id = decodeURIComponent(perRun[1]);
      const annotations = db.annotations(filter, page);
      return { annotations, next_cursor: annotations.at(-1)?.cursor ?? null };
    }
    if (path === '/stream') {
      const raw = url.searchParams.get('cursor') ?? (req.headers['last-event-id'] as string | undefined) ?? '0';
      if (!/^\d+$/.test(raw)) throw new HttpError(400, `cursor must be a non-negative integer (query parameter or Last-Event-ID header), got "${raw}"`);
      await stream(res, Number(raw), url.searchParams.get('run_id') ?? undefined);
      return undefined;
    }
    throw new HttpError(404, `no GET ${path} here`);
  };

  const stream = async (res: ServerResponse, from: number, runId: string | undefined): Promise<void> => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    res.write(': capture store stream\n\n');
    openStreams.add(res);
    let cursor = from;
    let dirty = true;
    let wake: (() => void) | null = null;
    let closed = false;
    const notify = () => {
      dirty = true;
      wake?.();
    };
    listeners.add(notify);
    const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), HEARTBEAT_MS);
    res.on('close', () => {
      closed = true;
      notify();
    });
    try {
      while (!closed) {
        if (!dirty) await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        dirty = false;
        let events: StreamEvent[];
        do {
          events = db.events(cursor, runId, MAX_PAGE);
          for (const event of events) {
            const data = event.type === 'wire_row' ? event.row : event.annotation;
            cursor = event.cursor;
            if (!res.write(`id: ${event.cursor}\nevent: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`)) {
              await new Promise<void>((resolve) => {
                const done = () => {
                  res.off('drain', done);
                  res.off('close', done);
                  resolve();
                };
                res.on('drain', done);
                res.on('close', done);
              });
            }
            if (closed) return;
          }
        } while (events.length === MAX_PAGE && !closed);
      }
    } finally {
      clearInterval(heartbeat);
      listeners.delete(notify);
      openStreams.delete(res);
    }
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/healthz') options.onActivity?.();
    routes(req, res, url).then(
      (answer) => {
        if (answer !== undefined) sendJson(res, 200, answer);
      },
      (error: unknown) => {
        if (error instanceof IngestError) served.refused += 1;
        const status = error instanceof HttpError ? error.status : error instanceof IngestError || error instanceof QueryError ? 400 : isBusy(error) ? 503 : 500;
        const message = isBusy(error) ? `capture store ${db.path} is locked by another process (another writer holds it); the batch was not stored, resend it` : (error as Error).message;
        if (res.headersSent) res.end();
        else sendJson(res, status, { error: message });
      },
    );
  });
  return {
    server,
    streams: () => openStreams.size,
    endStreams: () => {
      for (const res of openStreams) res.end();
    },
  };
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || (error instanceof StoreFileError && error.reason === 'locked');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (tooLarge) return reject(new HttpError(413, `request body is ${size} bytes, over the store's ${maxBytes}; send smaller batches`));
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new HttpError(400, 'request body must be valid JSON'));
      }
    });
  });
}

function listField(body: unknown, key: string): unknown[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'request body must be a JSON object');
  // A missing or misspelt key read as an empty batch would answer success while the rows are lost.
  if (!(key in body)) throw new HttpError(400, `request body must contain "${key}"`);
  const items = (body as Record<string, unknown>)[key];
  if (!Array.isArray(items) || !items.every((item) => item !== null && typeof item === 'object' && !Array.isArray(item))) {
    throw new HttpError(400, `"${key}" must be a list of JSON objects`);
  }
  return items;
}
