// The runs under one or more stores (the reference's `stores/registry.py`): a local folder and a
// bucket read alike through Storage. A run is a folder holding this project's run record
// (`.cookbook/run.json`) or, as the reference finds them, `config.json` with `metrics.jsonl` or
// `checkpoints.jsonl`. Sweeps, pipelines and scheduled evals put runs inside runs, so the walk goes
// on below a run, to a bounded depth and number of folders (each folder is one LIST on a bucket).
//
// For each run: its id, kind, model, last step and metrics row (the tail of metrics.jsonl only, by
// a range read), checkpoint count, and a status inferred from the files as the reference infers it:
// metrics written in the last two minutes → running; else a final checkpoint (or, for the kinds
// that end by writing one, their results file) → completed; else idle. Temporal's status, when
// Temporal is reachable, is the CLI's to merge (cli/runs-stores.ts): the files cannot tell a
// crashed run from a paused one.
import { stat } from 'node:fs/promises';
import { jsonText } from '../run-store-integrity.js';
import type { RunKind } from '../run-store.js';
import { EvalStore } from './eval-store.js';
import { S3Storage } from './s3.js';
import { isObjectStoreUri, joinKey, LocalStorage, StorageConfigError, type Storage } from './storage.js';

export type InferredStatus = 'running' | 'completed' | 'idle';

/** As the reference's `_ACTIVE_THRESHOLD_SECONDS`: metrics written this recently mean the run is going. */
export const ACTIVE_THRESHOLD_MS = 120_000;
/** Folders below a store's root the walk looks in (root → sweep → point → pipeline stage → evals → checkpoint → benchmark is 6). */
export const MAX_DEPTH = 8;
export const MAX_FOLDERS = 5_000;
const CONCURRENCY = 8;
const TAIL_BYTES = 16 * 1024;

export interface RunInfo {
  /** The workflow id from the run record; a reference-layout run: its folder's name. */
  id: string;
  kind: string | null;
  model: string | null;
  /** The store (as given) the run was found in, and the run's own URI in it. */
  store: string;
  uri: string;
  /** The run's folder under the store's root ('' for the root itself). */
  prefix: string;
  /** Whether the folder holds this project's run record (a Temporal workflow id), not only the reference's files. */
  hasRecord: boolean;
  lastStep: number | null;
  /** The last row of metrics.jsonl (an eval run: its results' aggregate metrics). */
  lastMetrics: Record<string, unknown> | null;
  checkpoints: number;
  status: InferredStatus;
  /** When metrics.jsonl was last written (ms since the epoch), or null without one. */
  lastUpdated: number | null;
}

export interface StoreScan {
  store: string;
  runs: RunInfo[];
  /** Why the store could not be read (one line naming it), when it could not. */
  error?: string;
  /** Set when the walk stopped at its bounds with folders left unvisited. */
  truncated?: string;
}

export interface RegistryOptions {
  maxDepth?: number;
  maxFolders?: number;
  now?: () => number;
}

/** The storage a store URI names, refusing a scheme this version does not read (`gs://`, `az://`, …). */
export function storeStorage(uri: string): Storage {
  if (isObjectStoreUri(uri)) return new S3Storage(uri);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri) && !/^file:\/\//i.test(uri)) {
    throw new StorageConfigError(`${uri}: not a store this version reads (an s3:// URI, or a local folder)`);
  }
  return new LocalStorage(uri);
}

/** A local store must already be a folder: listing one never creates it (Storage.check would). */
async function checkReadable(store: string, storage: Storage): Promise<void> {
  if (storage instanceof LocalStorage) {
    const s = await stat(storage.root).catch(() => undefined);
    if (!s) throw new StorageConfigError(`${store}: no such folder (${storage.root})`);
    if (!s.isDirectory()) throw new StorageConfigError(`${store}: not a folder (${storage.root})`);
    return;
  }
  await storage.check();
}

export class RunRegistry {
  /** A URI's storage is made when the walk starts, so a bad URI is that store's error, not the constructor's. */
  private readonly stores: Array<{ store: string; storage?: Storage }>;
  private scans: StoreScan[] | undefined;

  constructor(
    stores: ReadonlyArray<string | { store: string; storage: Storage }>,
    private readonly opts: RegistryOptions = {},
  ) {
    this.stores = stores.map((s) => (typeof s === 'string' ? { store: s } : { ...s }));
  }

  private open(s: { store: string; storage?: Storage }): Storage {
    return (s.storage ??= storeStorage(s.store));
  }

  /** Walks every store again (in parallel); a store that cannot be read is reported in its scan, the others still listed. */
  async refresh(): Promise<StoreScan[]> {
    this.scans = await Promise.all(
      this.stores.map(async (s): Promise<StoreScan> => {
        const { store } = s;
        try {
          const storage = this.open(s);
          await checkReadable(store, storage);
          const { runs, truncated } = await discoverRuns(store, storage, this.opts);
          return { store, runs, ...(truncated ? { truncated } : {}) };
        } catch (err) {
          const msg = (err as Error)?.message ?? String(err);
          return { store, runs: [], error: msg.includes(store) || msg.startsWith('s3://') || msg.startsWith('file://') ? msg : `${store}: ${msg}` };
        }
      }),
    );
    return this.scans;
  }

  /** Every run found, store by store (walked on first use). */
  async runs(): Promise<RunInfo[]> {
    this.scans ??= await this.refresh();
    return this.scans.flatMap((s) => s.runs);
  }

  /** The run with this id (the first store's, when two stores hold one id), or undefined. */
  async run(id: string): Promise<RunInfo | undefined> {
    return (await this.runs()).find((r) => r.id === id);
  }

  /** The storage that holds a run, for reading more of it. */
  storageFor(run: RunInfo): Storage {
    const s = this.stores.find((x) => x.store === run.store);
    if (!s) throw new Error(`${run.uri}: not a run of this registry`);
    return this.open(s);
  }

  /** An eval store over a run's folder (its results.json, its scheduled evals). */
  evalStore(run: RunInfo): EvalStore {
    return new EvalStore(this.storageFor(run), run.prefix);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Folders never holding a run: the run store's own, and the reference's per-iteration ones. */
const skipped = (name: string) => name.startsWith('.') || /^iteration_\d+$/.test(name);

/** The runs under `storage`'s root, breadth first, within the bounds. */
export async function discoverRuns(store: string, storage: Storage, opts: RegistryOptions = {}): Promise<{ runs: RunInfo[]; truncated?: string }> {
  const maxDepth = opts.maxDepth ?? MAX_DEPTH;
  const maxFolders = opts.maxFolders ?? MAX_FOLDERS;
  const now = opts.now ?? Date.now;
  const runs: RunInfo[] = [];
  let queue: Array<{ prefix: string; depth: number }> = [{ prefix: '', depth: 0 }];
  let visited = 0;
  let deeper = false;
  while (queue.length > 0 && visited < maxFolders) {
    const batch = queue.slice(0, Math.min(CONCURRENCY, maxFolders - visited));
    queue = queue.slice(batch.length);
    visited += batch.length;
    const found = await Promise.all(
      batch.map(async ({ prefix, depth }) => {
        const { dirs, files } = await storage.listDir(prefix);
        const run = await runAt(store, storage, prefix, dirs, files, now);
        const children = dirs.filter((d) => !skipped(d));
        if (depth >= maxDepth) {
          if (children.length) deeper = true;
          return { run, children: [] };
        }
        return { run, children: children.map((d) => ({ prefix: joinKey(prefix, d), depth: depth + 1 })) };
      }),
    );
    for (const f of found) {
      if (f.run) runs.push(f.run);
      queue.push(...f.children);
    }
  }
  const truncated =
    queue.length > 0
      ? `the walk stopped after ${maxFolders} folders (${queue.length} more not looked in): give a store URI closer to the runs`
      : deeper
        ? `folders deeper than ${maxDepth} levels were not looked in: give a store URI closer to the runs`
        : undefined;
  return { runs, ...(truncated ? { truncated } : {}) };
}

/** The run in this folder, or undefined when the folder is not one. */
async function runAt(store: string, storage: Storage, prefix: string, dirs: string[], files: string[], now: () => number): Promise<RunInfo | undefined> {
  const has = (f: string) => files.includes(f);
  let record: { workflowId: string; kind: string; config: Record<string, unknown> } | undefined;
  if (dirs.includes('.cookbook')) {
    const raw = await readJson(storage, joinKey(prefix, '.cookbook/run.json'));
    if (isRecord(raw) && typeof raw.workflowId === 'string' && typeof raw.kind === 'string') {
      record = { workflowId: raw.workflowId, kind: raw.kind, config: isRecord(raw.config) ? raw.config : {} };
    }
  }
  if (!record && !(has('config.json') && (has('metrics.jsonl') || has('checkpoints.jsonl')))) return undefined;
  const config = record?.config ?? (has('config.json') ? await readJson(storage, joinKey(prefix, 'config.json')) : undefined);
  const cfg = isRecord(config) ? config : {};
  const kind = record?.kind ?? inferKind(cfg);

  let lastMetrics: Record<string, unknown> | null = null;
  let lastUpdated: number | null = null;
  if (has('metrics.jsonl')) {
    const path = joinKey(prefix, 'metrics.jsonl');
    const [row, stat] = await Promise.all([lastJsonLine(storage, path), storage.stat?.(path)]);
    lastMetrics = isRecord(row) ? row : null;
    lastUpdated = stat?.mtimeMs ?? null;
  }
  const checkpoints = has('checkpoints.jsonl') ? jsonLines(await storage.get(joinKey(prefix, 'checkpoints.jsonl'))) : [];
  if (kind === 'eval' && has('results.json')) lastMetrics = (await new EvalStore(storage, prefix).readHead())?.metrics ?? lastMetrics;

  const hasFinal = checkpoints.some((c) => c.final === true || c.name === 'final');
  const status: InferredStatus =
    lastUpdated !== null && now() - lastUpdated < ACTIVE_THRESHOLD_MS ? 'running' : hasFinal || finishedByResults(kind, files) ? 'completed' : 'idle';
  const step = lastMetrics?.step;
  return {
    id: record?.workflowId ?? (prefix === '' ? 'root' : prefix.slice(prefix.lastIndexOf('/') + 1)),
    kind,
    model: modelOf(cfg),
    store,
    uri: storage.url(prefix),
    prefix,
    hasRecord: record !== undefined,
    lastStep: typeof step === 'number' ? step : null,
    lastMetrics,
    checkpoints: checkpoints.length,
    status,
    lastUpdated,
  };
}

/** Kinds that save no final checkpoint and end by writing their results (an eval's results.json, a sweep's results.jsonl). */
function finishedByResults(kind: string | null, files: string[]): boolean {
  const ends: Partial<Record<RunKind, string>> = { eval: 'results.json', sweep: 'results.jsonl' };
  const file = kind ? ends[kind as RunKind] : undefined;
  return file !== undefined && files.includes(file);
}

/** The model a config trains or evaluates: `model_name` (training kinds, sweeps, pipelines), `model` (eval, tts), else `base_model`. */
export function modelOf(cfg: Record<string, unknown>): string | null {
  for (const key of ['model_name', 'model', 'base_model']) if (typeof cfg[key] === 'string' && cfg[key] !== '') return cfg[key] as string;
  return null;
}

/** As the reference's `_infer_training_type`: a config without a run record says its kind by its keys. */
export function inferKind(cfg: Record<string, unknown>): string | null {
  if ('dpo_beta' in cfg) return 'dpo';
  if ('loss_fn' in cfg) return 'rl';
  if ('num_epochs' in cfg) return 'sl';
  const db = cfg.dataset_builder;
  if (isRecord(db)) {
    const t = typeof db.__type__ === 'string' ? db.__type__ : '';
    if (t.includes('RL')) return 'rl';
    if (t.includes('Supervised') || t.includes('SL')) return 'sl';
  }
  return null;
}

async function readJson(storage: Storage, path: string): Promise<unknown> {
  const got = await storage.get(path);
  if (!got) return undefined;
  try {
    return JSON.parse(jsonText(got.data.toString('utf8')));
  } catch {
    return undefined; // a damaged file: the run is listed with what else can be read
  }
}

function jsonLines(got: { data: Buffer } | undefined): Array<Record<string, unknown>> {
  if (!got) return [];
  const out: Array<Record<string, unknown>> = [];
  for (const line of got.data.toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      const row = JSON.parse(jsonText(line));
      if (isRecord(row)) out.push(row);
    } catch {
      // a damaged line is not a checkpoint
    }
  }
  return out;
}

/**
 * The last whole line of a JSONL file, parsed (Python's NaN/Infinity read as null), reading only
 * its tail where the backend allows a range read: 16 KiB, then four times more until a whole line
 * is in it. A last line without its newline is a write in progress and is not read, as the
 * reference's IncrementalReader does not.
 */
export async function lastJsonLine(storage: Storage, path: string): Promise<unknown> {
  for (let n = TAIL_BYTES; ; n *= 4) {
    const got = storage.getRange ? await storage.getRange(path, -n) : await storage.get(path).then((g) => g && { data: g.data, size: g.data.length });
    if (!got) return undefined;
    const whole = got.data.length >= got.size;
    const end = got.data.lastIndexOf(0x0a);
    const lines = (end === -1 ? '' : got.data.subarray(0, end).toString('utf8')).split('\n');
    if (!whole) lines.shift(); // the first line of a tail may be cut
    for (let i = lines.length - 1; i >= 0; i--) {
      if (lines[i].trim() === '') continue;
      try {
        return JSON.parse(jsonText(lines[i]));
      } catch {
        return undefined;
      }
    }
    if (whole) return undefined;
  }
}
