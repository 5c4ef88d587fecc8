// The capture store daemon (the reference's store/daemon.py): one per data folder, the only writer of
// DIR/capture.sqlite, serving many readers over HTTP on 127.0.0.1.
// - One owner: it holds an exclusive SQLite lock on DIR/daemon.lock for its whole life (the kernel
//   drops it when the process dies, SIGKILL included); a second daemon on the same folder exits at once
//   with status 1, naming the owner.
// - Discovery: DIR/daemon.json ({port, pid, base_url, data_dir, instance_token}), written after the port
//   is bound (so --port 0 works), replaced atomically; clients check the token against /healthz, so a
//   stale file can never route rows to another daemon that took the port.
// - A store file it cannot use (corrupted, locked by another process) ends it with status 2 and one line
//   naming the file; the file is left as it was.
// - With an idle limit it exits after that long without requests (/healthz does not count).
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { createStoreApp } from './app.js';
import { CaptureDb, StoreFileError, type StoreLimits } from './db.js';

export const DAEMON_INFO_FILE = 'daemon.json';
export const LOCK_FILE = 'daemon.lock';
export const STORE_FILE = 'capture.sqlite';
export const LOG_FILE = 'daemon.log';
/** Exit statuses, so a spawner can tell a lost race (another daemon owns the folder) from a bad store file. */
export const EXIT_OWNED = 1;
export const EXIT_STORE_FILE = 2;
const SWEEP_MS = 60 * 60 * 1000;

export interface DaemonInfo {
  port: number;
  pid: number;
  base_url: string;
  data_dir: string;
  instance_token: string;
}

export interface DaemonOptions extends StoreLimits {
  dataDir: string;
  port?: number;
  idleShutdownMinutes?: number | null;
}

export function readDaemonInfo(dataDir: string): DaemonInfo | null {
  try {
    return JSON.parse(readFileSync(join(dataDir, DAEMON_INFO_FILE), 'utf8')) as DaemonInfo;
  } catch {
    return null;
  }
}

/** Takes the folder's owner lock; null when another process holds it. */
function takeOwnerLock(dataDir: string, again = true): Database.Database | null {
  const path = join(dataDir, LOCK_FILE);
  const lock = new Database(path, { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
    return lock;
  } catch (error) {
    lock.close();
    const code = (error as { code?: string }).code;
    if (code === 'SQLITE_BUSY') return null;
    // A lock file that is not a database holds nothing (an owner's lock would have answered BUSY
    // first): it only names the lock, so it is emptied and taken.
    if (again && (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT')) {
      writeFileSync(path, '');
      return takeOwnerLock(dataDir, false);
    }
    throw error;
  }
}

export interface RunningDaemon {
  info: DaemonInfo;
  /** Resolves when the daemon has stopped (a signal, the idle limit, or `stop()`). */
  stopped: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the daemon in this process. Throws `StoreFileError` for a store it cannot use, and an error
 * with `code: 'OWNED'` when another daemon owns the folder.
 */
export async function startDaemon(options: DaemonOptions): Promise<RunningDaemon> {
  const dataDir = resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const lock = takeOwnerLock(dataDir);
  if (lock === null) {
    const owner = readDaemonInfo(dataDir);
    throw Object.assign(new Error(`another capture store daemon owns ${dataDir}${owner ? ` (pid ${owner.pid}, ${owner.base_url})` : ''}; use it, or stop it first`), { code: 'OWNED' });
  }
  let db: CaptureDb;
  try {
    db = new CaptureDb(join(dataDir, STORE_FILE), { maxBytes: options.maxBytes, retentionDays: options.retentionDays });
    db.sweep();
  } catch (error) {
    lock.close();
    throw error;
  }
  const token = randomUUID().replace(/-/g, '');
  let lastActivity = Date.now();
  const app = createStoreApp(db, { identity: { data_dir: dataDir, instance_token: token }, onActivity: () => (lastActivity = Date.now()) });
  await new Promise<void>((ok, fail) => {
    app.server.once('error', fail);
    app.server.listen(options.port ?? 0, '127.0.0.1', () => ok());
  });
  const port = (app.server.address() as AddressInfo).port;
  const info: DaemonInfo = { port, pid: process.pid, base_url: `http://127.0.0.1:${port}`, data_dir: dataDir, instance_token: token };
  const infoPath = join(dataDir, DAEMON_INFO_FILE);
  writeFileSync(`${infoPath}.${process.pid}.tmp`, JSON.stringify(info));
  renameSync(`${infoPath}.${process.pid}.tmp`, infoPath);

  const sweeper = setInterval(() => {
    try {
      db.sweep();
    } catch (error) {
      process.stderr.write(`capture store: retention sweep failed: ${(error as Error).message}\n`);
    }
  }, SWEEP_MS);
  sweeper.unref();
  let idle: NodeJS.Timeout | null = null;
  if (options.idleShutdownMinutes != null) {
    const limitMs = options.idleShutdownMinutes * 60_000;
    idle = setInterval(() => {
      if (Date.now() - lastActivity > limitMs && app.streams() === 0) void stop();
    }, Math.min(Math.max(limitMs / 10, 50), 10_000));
  }

  let finished!: () => void;
  const stopped = new Promise<void>((ok) => (finished = ok));
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      clearInterval(sweeper);
      if (idle) clearInterval(idle);
      // The discovery file goes first, and only if it is still ours, so no client is sent to a closing daemon.
      if (readDaemonInfo(dataDir)?.instance_token === token) rmSync(infoPath, { force: true });
      app.endStreams();
      await new Promise<void>((ok) => {
        app.server.close(() => ok());
        app.server.closeAllConnections();
      });
      db.close();
      lock.close();
      finished();
    })());
  return { info, stopped, stop };
}

/** `cookbook capture serve`: runs the daemon until a signal or the idle limit; returns the exit status. */
export async function serveDaemon(options: DaemonOptions): Promise<number> {
  let daemon: RunningDaemon;
  try {
    daemon = await startDaemon(options);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    if (error instanceof StoreFileError) return EXIT_STORE_FILE;
    if ((error as { code?: string }).code === 'OWNED') return EXIT_OWNED;
    throw error;
  }
  const onSignal = () => void daemon.stop();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  process.stdout.write(`capture store daemon listening on ${daemon.info.base_url} (store ${join(daemon.info.data_dir, STORE_FILE)})\n`);
  await daemon.stopped;
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  return 0;
}
