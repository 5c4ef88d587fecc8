// Byte-level storage under the run store (the reference's `stores/storage.py`): a local folder or an
// S3-compatible bucket, chosen from a URI (`storageFromUri`). Paths are relative, '/'-separated keys
// under the storage's root. Every write is atomic per object; a write may be conditional on the
// object's current version (`ifMatch`: its etag, `ifNoneMatch: true`: that it does not exist), which
// is how two hosts writing one run find out about each other instead of losing a write.
import { createHash } from 'node:crypto';
import { mkdir, open, readFile, readdir, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';

export interface StoredObject {
  /** Key relative to the storage root ('/'-separated). */
  path: string;
  size: number;
  /** An opaque version of the content: S3's ETag, the sha256 of a local file. */
  etag: string;
}

export interface PutOptions {
  /** Write only if the object's current etag is this one. */
  ifMatch?: string;
  /** Write only if the object does not exist. */
  ifNoneMatch?: boolean;
}

/** A conditional write lost: the object was changed (or created) by someone else since it was read. */
export class StorageConflictError extends Error {
  constructor(readonly url: string) {
    super(`${url} was changed by another writer since this worker read it`);
    this.name = 'StorageConflictError';
  }
}

/** The store cannot be used as configured (credentials, bucket, endpoint): one line, said before a run starts. */
export class StorageConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StorageConfigError';
  }
}

export interface Storage {
  /** A URI for people and logs: `file:///…`, `s3://bucket/prefix/…`. */
  url(path?: string): string;
  /** The object's bytes and etag, or undefined when it does not exist. */
  get(path: string): Promise<{ data: Buffer; etag: string } | undefined>;
  /** Writes the whole object; returns its new etag. Throws StorageConflictError when a condition fails. */
  put(path: string, data: Uint8Array, opts?: PutOptions): Promise<string>;
  /** Every object under `prefix` (a folder: '' or ending in '/'), recursively. */
  list(prefix: string): Promise<StoredObject[]>;
  /** The immediate child folders and objects of `prefix` (names without the prefix). */
  listDir(prefix: string): Promise<{ dirs: string[]; files: string[] }>;
  /** Deletes the object; no error when it is missing. */
  delete(path: string): Promise<void>;
  /** Fails with one clear line when the store cannot be read and written as configured. */
  check(): Promise<void>;
  /** The object's size and last write time, or undefined when it does not exist. */
  stat?(path: string): Promise<ObjectStat | undefined>;
  /**
   * Replaces the object (still `base.etag`, of `base.size` bytes, at least APPEND_MIN_BYTES) by its
   * bytes followed by `tail`, sending only `tail`; StorageConflictError when it is no longer `base`.
   */
  append?(path: string, base: { etag: string; size: number }, tail: Uint8Array): Promise<string>;
  /**
   * Bytes `[start, end)` of the object (`end` omitted: to its end; `start` < 0: its last -start
   * bytes) and its whole size, or undefined when it does not exist: the tail of a long
   * metrics.jsonl without reading the file (an S3 Range GET). A backend without it is read whole.
   */
  getRange?(path: string, start: number, end?: number): Promise<{ data: Buffer; size: number } | undefined>;
}

export interface ObjectStat {
  size: number;
  /** Last write, ms since the epoch (a local file's mtime, an object's Last-Modified). */
  mtimeMs: number;
}

/** S3's smallest part but the last: an append by copy needs at least this much to copy. */
export const APPEND_MIN_BYTES = 5 * 1024 * 1024;

export const isObjectStoreUri = (uri: string): boolean => /^s3:\/\//i.test(uri);

/** `s3://bucket/some/prefix` → bucket and prefix (no leading or trailing '/'). */
export function parseS3Uri(uri: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(uri);
  if (!m || !m[1]) throw new StorageConfigError(`${uri}: not an s3:// URI (expected s3://bucket/prefix)`);
  return { bucket: m[1], prefix: m[2].replace(/\/+$/, '') };
}

/** `a/b` + `c` → `a/b/c`; empty parts dropped. */
export const joinKey = (...parts: string[]): string => parts.filter((p) => p !== '').map((p) => p.replace(/^\/+|\/+$/g, '')).filter((p) => p !== '').join('/');

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

/** A folder on this host. Conditional writes are checked against the file's sha256 (one process writes a folder at a time). */
export class LocalStorage implements Storage {
  readonly root: string;
  constructor(root: string) {
    this.root = resolve(root.replace(/^file:\/\//, ''));
  }

  private resolvePath(path: string): string {
    const full = resolve(this.root, path);
    if (full !== this.root && !full.startsWith(this.root + sep)) throw new StorageConfigError(`${path}: escapes the store root ${this.root}`);
    return full;
  }

  url(path = ''): string {
    return `file://${path ? join(this.root, path) : this.root}`;
  }

  async get(path: string): Promise<{ data: Buffer; etag: string } | undefined> {
    try {
      const data = await readFile(this.resolvePath(path));
      return { data, etag: sha256(data) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR') return undefined;
      throw err;
    }
  }

  async put(path: string, data: Uint8Array, opts: PutOptions = {}): Promise<string> {
    const full = this.resolvePath(path);
    if (opts.ifMatch !== undefined || opts.ifNoneMatch) {
      const current = await this.get(path);
      if (opts.ifNoneMatch && current) throw new StorageConflictError(this.url(path));
      if (opts.ifMatch !== undefined && current?.etag !== opts.ifMatch) throw new StorageConflictError(this.url(path));
    }
    await mkdir(dirname(full), { recursive: true });
    const tmp = `${full}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    await writeFile(tmp, data);
    await rename(tmp, full);
    return sha256(data);
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    const walk = async (rel: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(this.resolvePath(rel), { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
        throw err;
      }
      for (const e of entries) {
        const child = joinKey(rel, e.name);
        if (e.isDirectory()) await walk(child);
        else if (e.isFile()) {
          const data = await readFile(this.resolvePath(child));
          out.push({ path: child, size: data.length, etag: sha256(data) });
        }
      }
    };
    await walk(prefix.replace(/\/+$/, ''));
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  async listDir(prefix: string): Promise<{ dirs: string[]; files: string[] }> {
    try {
      const entries = await readdir(this.resolvePath(prefix.replace(/\/+$/, '')), { withFileTypes: true });
      return { dirs: entries.filter((e) => e.isDirectory()).map((e) => e.name).sort(), files: entries.filter((e) => e.isFile()).map((e) => e.name).sort() };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return { dirs: [], files: [] };
      throw err;
    }
  }

  async delete(path: string): Promise<void> {
    await unlink(this.resolvePath(path)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  async check(): Promise<void> {
    try {
      await mkdir(this.root, { recursive: true });
      const s = await stat(this.root);
      if (!s.isDirectory()) throw new StorageConfigError(`${this.root}: not a folder`);
    } catch (err) {
      if (err instanceof StorageConfigError) throw err;
      throw new StorageConfigError(`${this.root}: cannot be used as a run store (${(err as Error).message})`);
    }
  }

  async stat(path: string): Promise<ObjectStat | undefined> {
    try {
      const s = await stat(this.resolvePath(path));
      return s.isFile() ? { size: s.size, mtimeMs: s.mtimeMs } : undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
      throw err;
    }
  }

  async getRange(path: string, start: number, end?: number): Promise<{ data: Buffer; size: number } | undefined> {
    let file;
    try {
      file = await open(this.resolvePath(path), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'EISDIR') return undefined;
      throw err;
    }
    try {
      const { size } = await file.stat();
      const from = start < 0 ? Math.max(0, size + start) : Math.min(start, size);
      const to = start < 0 || end === undefined ? size : Math.min(Math.max(end, from), size);
      const data = Buffer.alloc(to - from);
      for (let off = 0; off < data.length; ) {
        const { bytesRead } = await file.read(data, off, data.length - off, from + off);
        if (bytesRead === 0) return { data: data.subarray(0, off), size };
        off += bytesRead;
      }
      return { data, size };
    } finally {
      await file.close();
    }
  }

  /** Removes the folder `path` and everything in it (tests and clean-up). */
  async deleteTree(path: string): Promise<void> {
    await rm(this.resolvePath(path), { recursive: true, force: true });
  }
}
