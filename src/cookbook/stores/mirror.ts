// A run whose `log_path` is an object-store URI (`s3://bucket/prefix/run`) is worked on in a local
// mirror folder: the run store (run-store.ts, with its checksums and crash-safe writes) runs
// unchanged on that folder, and the mirror keeps it in step with the bucket, one object per file at
// the file's own key (so the bucket reads as the reference's layout: `metrics.jsonl`, …).
//
// - `pull` brings the folder up to the bucket before an activity (one LIST when nothing changed,
//   then a GET per changed object). Objects are fetched in the order that keeps every state a
//   reader can see one the run store accepts (records of appends before the files, files before
//   records written ahead of a replace), and what was fetched is checked against its records: a
//   state caught half-pushed by another host is fetched again until it is whole.
// - `push` sends what the folder changed after an activity, before the activity reports success,
//   so a workflow never goes on past a write that is not in the bucket. The changed files are read
//   in one synchronous pass (a consistent state: the run store writes synchronously), then written
//   in the mirror image of the pull's order. Every write is conditional on the version this host
//   last saw (`If-Match`, `If-None-Match: *` for a new key): a write based on a stale copy (a
//   zombie attempt, two hosts at once) is refused instead of losing the other host's rows, and the
//   activity is retried on a fresh pull. Logs (`*.log`, appended by every host) are merged instead.
// - Requests per push: one PUT per changed file plus one DELETE per removed one, then one PUT of a
//   version marker (a file that only grew past 5 MiB sends just its new bytes: a multipart upload
//   that copies the stored part inside the store, four requests); per pull: one GET of that marker (a few bytes), and only when another host pushed since, one
//   LIST per 1,000 objects plus one GET per object it changed.
// - An unreachable or failing store (5xx, throttling, no connection) is waited out with backoff for
//   up to COOKBOOK_STORE_WAIT_S (default 600 s), calling `onWait` (an activity heartbeats).
//
// The mirror lives under COOKBOOK_STORE_CACHE (default ~/.cache/durable-cookbook/store-cache), in a
// slot this process holds alone (`slot-N`, claimed with a pid lock file): a worker that restarts on
// the same host takes over a dead process's slot and pushes what that process wrote and did not push.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync, ftruncateSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { CheckedFile, CheckedJsonl, RunStoreDamagedError, sumsPath } from '../run-store-integrity.js';
import { isTransientStoreError, S3Storage } from './s3.js';
import { APPEND_MIN_BYTES, isObjectStoreUri, parseS3Uri, StorageConflictError, type Storage } from './storage.js';

interface ManifestEntry {
  etag: string;
  sha256: string;
  size: number;
  /** The local file's mtime when it last matched the object (a cheap "unchanged since" test). */
  mtimeMs: number;
}

/** Thrown when this host's copy of a run was changed by another writer: the activity is retried on a fresh pull. */
export class StoreConflictError extends Error {
  constructor(readonly uri: string, readonly paths: string[]) {
    super(`${uri}: ${paths.slice(0, 3).join(', ')}${paths.length > 3 ? ` and ${paths.length - 3} more` : ''} changed in the store since this worker read ${paths.length === 1 ? 'it' : 'them'}; the work is retried on a fresh copy`);
    this.name = 'StoreConflictError';
  }
}

/** The store stayed unreachable (or failing) for longer than COOKBOOK_STORE_WAIT_S. */
export class StoreUnavailableError extends Error {
  constructor(readonly uri: string, waitedS: number, cause: unknown) {
    super(`${uri}: the store did not answer for ${Math.round(waitedS)} s (${(cause as Error)?.message ?? cause})`, { cause });
    this.name = 'StoreUnavailableError';
  }
}

export interface SyncOptions {
  /** Called while a failing store is waited out (an activity heartbeats here). */
  onWait?: (what: string, err: unknown) => void;
  /** How long a failing store is waited out (default COOKBOOK_STORE_WAIT_S, else 600 s). */
  waitS?: number;
}

export interface SyncStats {
  requests: number;
  bytes: number;
  files: number;
}

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isTemp = (name: string) => /\.tmp-\d+-[a-z0-9]+$/.test(name);
const isLog = (rel: string) => rel.endsWith('.log');
const CONCURRENCY = 8;
/**
 * Changed (to a new random value) by every push that sent something, after it: a pull that finds
 * the value it saw last knows nothing was pushed since, and skips the LIST, whose cost grows with
 * the run. Never a file of the run: left out of lists, walks and manifests.
 */
const VERSION_KEY = '.cookbook/mirror-version';

export function storeCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.COOKBOOK_STORE_CACHE || join(homedir(), '.cache', 'durable-cookbook', 'store-cache');
}

const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

let slot: { root: string; dir: string } | undefined;
const heldLocks = new Set<string>();

function releaseLocks(): void {
  for (const lock of heldLocks) {
    try {
      if (readFileSync(lock, 'utf8') === String(process.pid)) unlinkSync(lock);
    } catch {
      // already gone
    }
  }
}

/** This process's slot under the cache root: the first one whose lock is free or held by a dead process. */
function slotDir(): string {
  const root = storeCacheRoot();
  if (slot?.root === root) return slot.dir;
  mkdirSync(root, { recursive: true });
  for (let n = 0; ; n++) {
    const lock = join(root, `slot-${n}.lock`);
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(lock, 'utf8'));
      if (owner === process.pid) {
        // ours (a test that changed the cache root back)
      } else if (Number.isInteger(owner) && owner > 0 && pidAlive(owner)) continue;
      else writeFileSync(lock, String(process.pid));
    }
    slot = { root, dir: join(root, `slot-${n}`) };
    if (heldLocks.size === 0) process.once('exit', releaseLocks);
    heldLocks.add(lock);
    return slot.dir;
  }
}

/** The local folder a run's files are read and written in: `logPath` itself, or this process's mirror of an object-store run. */
export function runDir(logPath: string): string {
  if (!isObjectStoreUri(logPath)) return logPath;
  const { bucket, prefix } = parseS3Uri(logPath);
  return join(slotDir(), 's3', bucket, ...prefix.split('/').filter((p) => p !== ''));
}

/** Groups in the order a pull fetches them; a push writes them in reverse (deletes last). */
function pullRank(rel: string): number {
  if (!rel.startsWith('.cookbook/sums/')) return rel === '.cookbook/run.json' ? 0 : 1;
  if (rel.endsWith('.sums')) return -1; // records of appends: before the files they describe
  return 2; // `.sha256` and `.sums.next`: written ahead of the replace they describe
}

async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += CONCURRENCY) await Promise.all(items.slice(i, i + CONCURRENCY).map(fn));
}

/** Writes `data` over `file` in place (a `*.log` keeps its inode: the run's logger holds it open for appends). */
function overwriteInPlace(file: string, data: Buffer): void {
  mkdirSync(dirname(file), { recursive: true });
  const fd = openSync(file, existsSync(file) ? 'r+' : 'w');
  try {
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off, off);
    ftruncateSync(fd, data.length);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function writeLocal(file: string, data: Buffer, rel: string): void {
  if (isLog(rel)) return overwriteInPlace(file, data);
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

export class RunMirror {
  readonly dir: string;
  private readonly manifestFile: string;
  private manifest: Map<string, ManifestEntry> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  /** Activities of this run working in the folder now: while any is, its unpushed files are never replaced by a pull. */
  active = 0;
  readonly stats: SyncStats = { requests: 0, bytes: 0, files: 0 };
  /** Prefixes of the runs nested in this one, as the last pull that listed found them. */
  nested: string[] = [];
  /** The store's VERSION_KEY etag when this folder last matched the store (undefined: list on the next pull). */
  private seenVersion: string | undefined;

  constructor(
    readonly uri: string,
    readonly storage: Storage = new S3Storage(uri),
  ) {
    this.dir = runDir(uri);
    this.manifestFile = join(slotDir(), 'manifests', `${sha256(Buffer.from(uri)).slice(0, 32)}.json`);
  }

  private load(): Map<string, ManifestEntry> {
    if (!this.manifest) {
      this.manifest = new Map();
      if (existsSync(this.manifestFile)) {
        try {
          const saved = JSON.parse(readFileSync(this.manifestFile, 'utf8')) as { files?: Record<string, ManifestEntry>; version?: string };
          for (const [k, v] of Object.entries(saved.files ?? {})) this.manifest.set(k, v);
          this.seenVersion = saved.version;
        } catch {
          // a damaged manifest only costs a full fetch: every file is compared again
        }
      }
    }
    return this.manifest;
  }

  private save(): void {
    mkdirSync(dirname(this.manifestFile), { recursive: true });
    const tmp = `${this.manifestFile}.tmp-${process.pid}`;
    writeFileSync(tmp, JSON.stringify({ files: Object.fromEntries(this.load()), version: this.seenVersion }));
    renameSync(tmp, this.manifestFile);
  }

  /** One pull or push at a time per run in this process. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Runs a store request, waiting out an unreachable or failing store with backoff. */
  private async request<T>(what: string, fn: () => Promise<T>, opts: SyncOptions): Promise<T> {
    const waitS = opts.waitS ?? Number(process.env.COOKBOOK_STORE_WAIT_S ?? 600);
    const start = Date.now();
    for (let delay = 200; ; delay = Math.min(delay * 2, 5_000)) {
      try {
        this.stats.requests++;
        return await fn();
      } catch (err) {
        if (!isTransientStoreError(err)) throw err;
        if ((Date.now() - start) / 1000 >= waitS) throw new StoreUnavailableError(this.uri, (Date.now() - start) / 1000, err);
        opts.onWait?.(what, err);
        await sleep(delay);
      }
    }
  }

  /** Files under the folder with their stat (temp files of writes in progress left out). */
  private walk(): Map<string, { size: number; mtimeMs: number }> {
    const out = new Map<string, { size: number; mtimeMs: number }>();
    const visit = (abs: string) => {
      let names: string[];
      try {
        names = readdirSync(abs);
      } catch {
        return;
      }
      for (const name of names) {
        const child = join(abs, name);
        const st = lstatSync(child, { throwIfNoEntry: false });
        if (!st) continue;
        // A run nested in this one (a sweep's point, a pipeline's stage, a scheduled eval) has a mirror of its own.
        if (st.isDirectory()) {
          if (!existsSync(join(child, '.cookbook', 'run.json'))) visit(child);
        }
        else if (st.isFile() && !isTemp(name)) out.set(relative(this.dir, child).split(sep).join('/'), { size: st.size, mtimeMs: st.mtimeMs });
      }
    };
    visit(this.dir);
    return out;
  }

  /** Whether `rel` lies in a folder here that is a nested run (one this host created since its last pull). */
  private nestedHere(rel: string): boolean {
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) if (existsSync(join(this.dir, ...parts.slice(0, i), '.cookbook', 'run.json'))) return true;
    return false;
  }

  /** Whether the local file differs from what the store had when this host last synced it. */
  private dirty(rel: string, st: { size: number; mtimeMs: number } | undefined): boolean {
    const entry = this.load().get(rel);
    if (!st) return entry !== undefined; // removed here
    if (!entry) return true;
    if (entry.size === st.size && entry.mtimeMs === st.mtimeMs) return false;
    const same = sha256(readFileSync(join(this.dir, rel))) === entry.sha256;
    if (same) entry.mtimeMs = st.mtimeMs;
    return !same;
  }

  private record(rel: string, etag: string, data: Buffer): void {
    const st = statSync(join(this.dir, rel));
    this.load().set(rel, { etag, sha256: sha256(data), size: data.length, mtimeMs: st.mtimeMs });
  }

  /** Brings the folder up to the store (`listing`: list it even if no push changed it, to find new nested runs). */
  pull(opts: SyncOptions & { listing?: boolean } = {}): Promise<string> {
    return this.serial(() => this.pullNow(opts));
  }

  private async pullNow(opts: SyncOptions & { listing?: boolean }): Promise<string> {
    mkdirSync(this.dir, { recursive: true });
    const manifest = this.load();
    // Read before the list: a push that lands during the list changes it, and the next pull lists again.
    const version = (await this.request('get', () => this.storage.get(VERSION_KEY), opts))?.etag;
    if (!opts.listing && version !== undefined && version === this.seenVersion) return this.dir;
    const settleS = Number(process.env.COOKBOOK_STORE_SETTLE_S ?? 30);
    const start = Date.now();
    for (let delay = 50; ; delay = Math.min(delay * 2, 2_000)) {
      const listed = (await this.request('list', () => this.storage.list(''), opts)).filter((o) => o.path !== VERSION_KEY);
      this.nested = nestedRuns(listed.map((o) => o.path));
      const remote = listed.filter((o) => !isUnder(o.path, this.nested));
      const local = this.walk();
      const fetched: string[] = [];
      const changed = remote.filter((o) => manifest.get(o.path)?.etag !== o.etag).sort((a, b) => pullRank(a.path) - pullRank(b.path));
      for (const rank of [...new Set(changed.map((o) => pullRank(o.path)))]) {
        await inBatches(
          changed.filter((o) => pullRank(o.path) === rank),
          async (o) => {
            const got = await this.request('get', () => this.storage.get(o.path), opts);
            if (!got) return; // deleted since the list: the next pull sees it gone
            this.stats.bytes += got.data.length;
            const file = join(this.dir, o.path);
            const base = manifest.get(o.path);
            if (isLog(o.path) && this.dirty(o.path, local.get(o.path)) && local.has(o.path)) {
              // lines this host logged and did not push yet stay after the store's
              const mine = readFileSync(file).subarray(base?.size ?? 0);
              overwriteInPlace(file, Buffer.concat([got.data, mine]));
              this.load().set(o.path, { etag: got.etag, sha256: sha256(got.data), size: got.data.length, mtimeMs: -1 });
              return;
            }
            if (this.active > 0 && this.dirty(o.path, local.get(o.path))) return; // a running activity's write wins here; its push finds the conflict
            writeLocal(file, got.data, o.path);
            this.record(o.path, got.etag, got.data);
            fetched.push(o.path);
          },
        );
      }
      const inStore = new Set(remote.map((o) => o.path));
      for (const rel of [...manifest.keys()]) {
        if (inStore.has(rel)) continue;
        if (isUnder(rel, this.nested)) {
          manifest.delete(rel); // became a nested run's (fetched before its run record was there): its own mirror's now
          continue;
        }
        if (this.active > 0 && this.dirty(rel, local.get(rel))) continue;
        if (existsSync(join(this.dir, rel))) unlinkSync(join(this.dir, rel));
        manifest.delete(rel);
      }
      this.stats.files += fetched.length;
      this.save();
      const damaged = this.damaged(fetched);
      if (damaged.length === 0) {
        this.seenVersion = version;
        this.save();
        return this.dir;
      }
      if ((Date.now() - start) / 1000 >= settleS) return this.dir; // left as it is: the run store names the damage when it is read
      // Caught between another host's writes of a file and its records: fetch again.
      for (const rel of damaged) manifest.delete(rel);
      await sleep(delay);
    }
  }

  /** Of the files just fetched, those that do not read back against their records. */
  private damaged(fetched: string[]): string[] {
    const out: string[] = [];
    const files = new Set<string>();
    for (const rel of fetched) {
      if (!rel.startsWith('.cookbook/sums/')) files.add(rel);
      else {
        const m = /^\.cookbook\/sums\/(.*)\.(sums|sha256|sums\.next)$/.exec(rel);
        if (m) for (const cand of [m[1], `.cookbook/${m[1]}`]) if (existsSync(join(this.dir, cand))) files.add(cand);
      }
    }
    for (const rel of files) {
      const file = join(this.dir, rel);
      try {
        if (existsSync(sumsPath(this.dir, file, '.sums'))) new CheckedJsonl(this.dir, file).readLines();
        else if (existsSync(sumsPath(this.dir, file, '.sha256'))) new CheckedFile(this.dir, file).read();
      } catch (err) {
        if (!(err instanceof RunStoreDamagedError)) throw err;
        out.push(rel, relative(this.dir, sumsPath(this.dir, file, '.sums')).split(sep).join('/'), relative(this.dir, sumsPath(this.dir, file, '.sha256')).split(sep).join('/'));
      }
    }
    return out;
  }

  /** Sends what the folder changed to the store; returns the number of requests it took. */
  push(opts: SyncOptions = {}): Promise<number> {
    return this.serial(() => this.pushNow(opts));
  }

  private async pushNow(opts: SyncOptions): Promise<number> {
    const before = this.stats.requests;
    const manifest = this.load();
    const local = this.walk();
    // One synchronous pass: the run store writes synchronously, so this is a state it left whole.
    const changed: Array<{ rel: string; data: Buffer; mtimeMs: number }> = [];
    for (const [rel, st] of local) if (this.dirty(rel, st)) changed.push({ rel, data: readFileSync(join(this.dir, rel)), mtimeMs: st.mtimeMs });
    const removed = [...manifest.keys()].filter((rel) => !local.has(rel) && !isUnder(rel, this.nested) && !this.nestedHere(rel));
    const conflicts: string[] = [];
    const ranks = [...new Set(changed.map((c) => pullRank(c.rel)))].sort((a, b) => b - a);
    for (const rank of ranks) {
      await inBatches(
        changed.filter((c) => pullRank(c.rel) === rank),
        async (c) => {
          const ok = await this.put(c.rel, c.data, c.mtimeMs, opts);
          if (!ok) conflicts.push(c.rel);
        },
      );
    }
    if (conflicts.length === 0) {
      await inBatches(removed, async (rel) => {
        await this.request('delete', () => this.storage.delete(rel), opts);
        manifest.delete(rel);
      });
    }
    this.stats.files += changed.length;
    if (conflicts.length) {
      this.seenVersion = undefined;
      this.save();
      throw new StoreConflictError(this.uri, conflicts);
    }
    if (changed.length || removed.length) await this.bumpVersion(opts);
    this.save();
    return this.stats.requests - before;
  }

  /**
   * Tells other hosts' pulls that this push changed the run. When nobody else pushed since this
   * folder last matched the store (the version is the one it saw), the folder still matches it.
   */
  private async bumpVersion(opts: SyncOptions): Promise<void> {
    const nonce = Buffer.from(`${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}\n`);
    const seen = this.seenVersion;
    this.seenVersion = undefined;
    try {
      if (seen === undefined) throw new StorageConflictError(VERSION_KEY);
      this.seenVersion = await this.request('put', () => this.storage.put(VERSION_KEY, nonce, { ifMatch: seen }), opts);
    } catch (err) {
      if (!(err instanceof StorageConflictError)) throw err;
      // Another host pushed too: say this push happened, and list on the next pull.
      await this.request('put', () => this.storage.put(VERSION_KEY, nonce), opts);
    }
  }

  /**
   * Whether `data` is the stored object plus new bytes and big enough to send just those: a long
   * metrics.jsonl or logs.log costs its new lines, not its whole length, on every push.
   */
  private appends(base: ManifestEntry | undefined, data: Buffer): boolean {
    return this.storage.append !== undefined && base !== undefined && base.size >= APPEND_MIN_BYTES && data.length > base.size && sha256(data.subarray(0, base.size)) === base.sha256;
  }

  /** A conditional write of one file; false when another writer changed it (a log is merged instead). */
  private async put(rel: string, data: Buffer, mtimeMs: number, opts: SyncOptions): Promise<boolean> {
    const manifest = this.load();
    for (;;) {
      const base = manifest.get(rel);
      try {
        const appending = this.appends(base, data);
        const etag = appending
          ? await this.request('append', () => this.storage.append!(rel, base!, data.subarray(base!.size)), opts)
          : await this.request('put', () => this.storage.put(rel, data, base ? { ifMatch: base.etag } : { ifNoneMatch: true }), opts);
        this.stats.bytes += appending ? data.length - base!.size : data.length;
        manifest.set(rel, { etag, sha256: sha256(data), size: data.length, mtimeMs });
        return true;
      } catch (err) {
        if (!(err instanceof StorageConflictError)) throw err;
      }
      const current = await this.request('get', () => this.storage.get(rel), opts);
      if (current && sha256(current.data) === sha256(data)) {
        // the same bytes (a retried write on another host): nothing to merge
        manifest.set(rel, { etag: current.etag, sha256: sha256(data), size: data.length, mtimeMs });
        return true;
      }
      if (!isLog(rel) || !current) return false;
      // Logs only grow: the store's lines, then what this host added since it last synced.
      const merged = Buffer.concat([current.data, data.subarray(base?.size ?? 0)]);
      overwriteInPlace(join(this.dir, rel), merged);
      manifest.set(rel, { etag: current.etag, sha256: sha256(current.data), size: current.data.length, mtimeMs: -1 });
      data = merged;
      mtimeMs = statSync(join(this.dir, rel)).mtimeMs;
    }
  }
}

/** Prefixes P (not the root) with a `P/.cookbook/run.json`: runs of their own inside a run's prefix. */
export function nestedRuns(paths: string[]): string[] {
  const out: string[] = [];
  for (const p of paths) if (p.endsWith('/.cookbook/run.json')) out.push(p.slice(0, -'/.cookbook/run.json'.length));
  return out.sort();
}

const isUnder = (rel: string, prefixes: string[]) => prefixes.some((p) => rel.startsWith(`${p}/`));

const mirrors = new Map<string, RunMirror>();

/** This process's mirror of an object-store run (one per URI). */
export function mirrorOf(uri: string): RunMirror {
  const key = `${storeCacheRoot()}|${uri.replace(/\/+$/, '')}`;
  let m = mirrors.get(key);
  if (!m) {
    m = new RunMirror(uri.replace(/\/+$/, ''));
    mirrors.set(key, m);
  }
  return m;
}

/** The local folder of a run, brought up to its store first when the run lives in one. */
export async function mountRun(logPath: string, opts: SyncOptions & { nested?: boolean } = {}): Promise<string> {
  if (!isObjectStoreUri(logPath)) return logPath;
  const mirror = mirrorOf(logPath);
  const dir = await mirror.pull({ ...opts, listing: opts.nested });
  // A report of a sweep or a pipeline reads its points' and stages' runs too.
  if (opts.nested) for (const p of mirror.nested.filter((p) => !isUnder(p, mirror.nested))) await mountRun(`${mirror.uri}/${p}`, opts);
  return dir;
}

/** Sends a run's local changes to its store (nothing to do for a local run). */
export async function syncRun(logPath: string, opts: SyncOptions = {}): Promise<void> {
  if (!isObjectStoreUri(logPath)) return;
  await mirrorOf(logPath).push(opts);
}

/**
 * Brings the runs nested in a run (a training run's scheduled evals, a sweep's points) into this
 * host's mirror too; `logPath` may be the run's URI or its mirror's folder (what an activity sees).
 */
export async function mountNestedRuns(logPath: string, opts: SyncOptions = {}): Promise<void> {
  if (isObjectStoreUri(logPath)) {
    await mountRun(logPath, { ...opts, nested: true });
    return;
  }
  const mirror = [...mirrors.values()].find((m) => m.dir === logPath);
  if (mirror) await mountRun(mirror.uri, { ...opts, nested: true });
}
