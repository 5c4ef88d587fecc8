// The client side of the capture store daemon (the reference's store/client.py):
// - `ensureCaptureStore(dataDir)`: the base URL of the folder's daemon, started (detached, outliving the
//   caller) when none answers. Two callers racing both may spawn one; the daemon's owner lock lets one
//   win, the loser exits, and both callers converge on the winner (verified by its instance token).
// - `CaptureStoreClient`: ingest, query (one page, or every page), runs, stats, and the live stream.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StoreHttpSink, type IngestResult } from '../http-sink.js';
import type { Annotation, CaptureRecord, StreamEvent, WireRow } from '../rows.js';
import type { RunSummary, StoreLimits, StoreStats } from './db.js';
import { DAEMON_INFO_FILE, EXIT_STORE_FILE, LOG_FILE, readDaemonInfo } from './daemon.js';
import { annotationFilterToParams, rowFilterToParams, type AnnotationFilter, type Page, type RowFilter } from './query.js';

/** Where captures go unless told: $COOKBOOK_CAPTURE_DIR, else ~/.cache/durable-cookbook/capture. */
export function defaultCaptureDir(): string {
  return process.env.COOKBOOK_CAPTURE_DIR || join(homedir(), '.cache', 'durable-cookbook', 'capture');
}

/** `cookbook capture serve`'s own entry (daemon-entry.mjs): the daemon starts without the rest of the CLI. */
export const DAEMON_ENTRY = fileURLToPath(new URL('./daemon-entry.mjs', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RESPAWN_INTERVAL_MS = 500;

export interface EnsureOptions extends StoreLimits {
  /** A spawned daemon exits after this long without requests (default 60, as the reference; null: never). */
  idleShutdownMinutes?: number | null;
  /** How long to wait for a daemon to answer (default 30 s). */
  timeoutMs?: number;
}

async function getJson(url: string, timeoutMs: number): Promise<Record<string, unknown>> {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

/** The base URL of the folder's daemon if it answers as itself (data folder and token match), claimed via /touch. */
async function healthyDaemon(dataDir: string): Promise<string | null> {
  const infoPath = join(dataDir, DAEMON_INFO_FILE);
  let raw: string;
  try {
    raw = readFileSync(infoPath, 'utf8');
  } catch {
    return null;
  }
  const info = readDaemonInfo(dataDir);
  if (info === null) return null;
  try {
    const health = await getJson(`${info.base_url}/healthz`, 1000);
    if (health.status === 'ok' && health.data_dir === dataDir && health.instance_token === info.instance_token) {
      // /healthz is not activity: claim the daemon so one about to idle out does not exit under us.
      return (await getJson(`${info.base_url}/touch`, 1000)).status === 'ok' ? info.base_url : null;
    }
    // Another daemon answers on that port: the file is stale. Remove it only if nobody rewrote it meanwhile.
    if (readFileSync(infoPath, 'utf8') === raw) rmSync(infoPath, { force: true });
    return null;
  } catch {
    return null;
  }
}

function lastLogLine(dataDir: string): string {
  try {
    const lines = readFileSync(join(dataDir, LOG_FILE), 'utf8').trim().split('\n');
    return lines.at(-1) ?? '';
  } catch {
    return '';
  }
}

/** The base URL of `dataDir`'s capture store daemon, starting one when none answers. */
export async function ensureCaptureStore(dataDir: string = defaultCaptureDir(), options: EnsureOptions = {}): Promise<string> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const existing = await healthyDaemon(dir);
  if (existing !== null) return existing;

  const args = [DAEMON_ENTRY, '--data-dir', dir, '--port', '0'];
  const idle = options.idleShutdownMinutes === undefined ? 60 : options.idleShutdownMinutes;
  if (idle !== null) args.push('--idle-shutdown-minutes', String(idle));
  if (options.maxBytes != null) args.push('--max-bytes', String(options.maxBytes));
  if (options.retentionDays != null) args.push('--retention-days', String(options.retentionDays));
  const start = () => {
    const log = openSync(join(dir, LOG_FILE), 'a');
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, detached: true, stdio: ['ignore', log, log] });
    closeSync(log);
    const state = { exit: null as number | null, at: Date.now() };
    child.on('exit', (code) => (state.exit = code ?? -1));
    child.unref();
    return state;
  };

  // Our daemon may lose the owner lock to one that is exiting (it idled out) and exit without serving:
  // start another until one answers, as the reference's ensure_daemon does.
  let child = start();
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    const url = await healthyDaemon(dir);
    if (url !== null) return url;
    if (child.exit === EXIT_STORE_FILE) throw new Error(lastLogLine(dir) || `the capture store daemon for ${dir} refused its store file (see ${join(dir, LOG_FILE)})`);
    if (child.exit !== null && Date.now() - child.at >= RESPAWN_INTERVAL_MS) child = start();
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error(`no capture store daemon answered for ${dir} within ${options.timeoutMs ?? 30_000} ms (its log: ${join(dir, LOG_FILE)}: ${lastLogLine(dir)})`);
}

export class CaptureStoreClient {
  readonly baseUrl: string;
  private readonly sink: StoreHttpSink;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.sink = new StoreHttpSink(this.baseUrl);
  }

  /** Stores records; resolves once the store committed them. */
  ingest(records: readonly CaptureRecord[]): Promise<IngestResult> {
    return this.sink.post(records);
  }

  async rows(filter: RowFilter = {}, page: Page = {}): Promise<{ rows: WireRow[]; next_cursor: number | null }> {
    return (await this.get(`/rows?${rowFilterToParams(filter, page)}`)) as { rows: WireRow[]; next_cursor: number | null };
  }

  /** Every row matching the filter after `from`, page after page (at most `limit` rows when given). */
  async allRows(filter: RowFilter = {}, limit = Infinity, from = 0): Promise<WireRow[]> {
    const out: WireRow[] = [];
    let cursor = from;
    while (out.length < limit) {
      const page = await this.rows(filter, { cursor, limit: Math.min(1000, limit - out.length) });
      out.push(...page.rows);
      if (page.next_cursor === null) break;
      cursor = page.next_cursor;
    }
    return out;
  }

  async annotations(filter: AnnotationFilter = {}, page: Page = {}): Promise<{ annotations: Annotation[]; next_cursor: number | null }> {
    return (await this.get(`/annotations?${annotationFilterToParams(filter, page)}`)) as { annotations: Annotation[]; next_cursor: number | null };
  }

  async runs(): Promise<RunSummary[]> {
    return ((await this.get('/runs')) as { runs: RunSummary[] }).runs;
  }

  async stats(): Promise<StoreStats & { daemon: Record<string, number> }> {
    return (await this.get('/stats')) as StoreStats & { daemon: Record<string, number> };
  }

  /** The store's events after `cursor`, in cursor order, as they are committed; ends when `signal` aborts. */
  async *stream(options: { cursor?: number; runId?: string; signal?: AbortSignal } = {}): AsyncGenerator<StreamEvent> {
    const params = new URLSearchParams({ cursor: String(options.cursor ?? 0) });
    if (options.runId !== undefined) params.set('run_id', options.runId);
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}/stream?${params}`, { signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted) return;
      throw error;
    }
    if (!response.ok || response.body === null) throw new Error(`capture store answered ${response.status} to GET /stream: ${await response.text()}`);
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = parseSseBlock(block);
          if (event !== null) yield event;
        }
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      throw error;
    }
  }

  private async get(path: string): Promise<unknown> {
    const response = await fetch(`${this.baseUrl}${path}`);
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: string }).error ?? text;
      } catch {
        // not JSON: keep the raw text
      }
      throw new Error(`capture store: ${message}`);
    }
    return JSON.parse(text);
  }
}

function parseSseBlock(block: string): StreamEvent | null {
  let id: number | null = null;
  let type: string | null = null;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    if (line.startsWith('id: ')) id = Number(line.slice(4));
    else if (line.startsWith('event: ')) type = line.slice(7);
    else if (line.startsWith('data: ')) data.push(line.slice(6));
  }
  if (id === null || data.length === 0) return null;
  const payload = JSON.parse(data.join('\n'));
  if (type === 'wire_row') return { type: 'wire_row', cursor: id, row: payload as WireRow };
  if (type === 'annotation') return { type: 'annotation', cursor: id, annotation: payload as Annotation };
  return null;
}
