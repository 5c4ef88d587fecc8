// A stateful local sandbox for one episode (the reference's SandboxInterface, what a Modal
// container gives the harbor_rl recipe): a root folder that lives as long as the episode, each
// command run isolated in it as isolation.ts describes (no network, its own pids, the host's /usr
// read-only, rlimits and a cgroup per command), and what a command writes there found by the next.
// Commands run one at a time; a background process does not outlive its command.
//
// Limits: each command has a wall time (killed past it: exit code 124, as coreutils' timeout says)
// and keeps at most `maxOutputBytes` of stdout and of stderr (the rest is read and dropped, as
// Modal does, up to `stopOutputAfterBytes`, past which the command is killed); the root may hold
// `storageBytes` of files (each file at most `maxFileBytes`, the kernel's limit) — a command that
// leaves more behind ends the sandbox's use: later commands, the grader's too, are refused, and
// the episode earns what a failed test earns.
//
// `snapshot()` packs the root (a gzipped tar, owners numeric) and `restore()` unpacks one into a
// fresh root: what the durable layer (terminal-tasks/durable-sandbox.ts) records after each command
// so a rollout retried after a crash resumes from the state the last recorded command left.
import { spawn } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { availableParallelism, constants as osConstants } from 'node:os';
import { join, posix } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { RunCgroup, type CgroupUsage } from './cgroup.js';
import { NAMESPACE_TASKS, SETUP_FAILED, episodeIsolatedArgv, missingTools, namespacesRefused, pythonInterpreter, type IsolationLimits } from './isolation.js';
import { AS_NOBODY, chownTree, containment, execute, nextRunId, perProcessShare, stage, stagingRoot, type Containment } from './local.js';
import { readFileCommand, writeFileCommand } from './file-commands.js';
import { RunQueue } from './run-queue.js';
import { SandboxError, SandboxUnavailableError, type SandboxInterface, type SandboxResult } from './types.js';

const MiB = 1024 * 1024;

export interface EpisodeSandboxLimits extends IsolationLimits {
  /** Bytes the episode's root may hold (its files, not the host's bound /usr). */
  storageBytes: number;
  /** Past this many bytes of stdout or stderr a command is killed (what is kept is the caller's max_output_bytes). */
  stopOutputAfterBytes: number;
}

export const EPISODE_DEFAULTS: EpisodeSandboxLimits = {
  cpuSeconds: 600,
  memoryBytes: 1024 * MiB,
  maxProcesses: 64,
  maxFileBytes: 64 * MiB,
  maxOpenFiles: 256,
  scratchBytes: 64 * MiB,
  storageBytes: 256 * MiB,
  stopOutputAfterBytes: 16 * MiB,
};

/** What outputs are kept of when the caller names no cap (Modal's default stream cap). */
const DEFAULT_KEEP_BYTES = 128 * 1024;

/** The top-level names the isolation mounts on; no part of the episode's own files. */
const MOUNTPOINTS = ['usr', 'bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32', 'dev', 'proc', '.old'];

export interface EpisodeSandboxOptions {
  /** A snapshot (gzipped tar) to start from; none: an empty root. */
  from?: Buffer | null;
  /** The environment every command starts with (an image's ENV), over PATH, HOME and LANG. */
  env?: Record<string, string>;
  limits?: Partial<EpisodeSandboxLimits>;
  /** `auto`: a cgroup per command where the host allows it; `off`: rlimits only. */
  cgroups?: 'auto' | 'off';
}

// Commands of all episodes of this process, a few at a time (a group's episodes run side by side).
const queue = new RunQueue(availableParallelism(), 4096);

let checked: Promise<Containment> | null = null;
/** Whether this host can run episode sandboxes, and how commands are held to their limits. */
export function episodeSandboxAvailable(cgroups: 'auto' | 'off' = (process.env.COOKBOOK_SANDBOX_CGROUPS as 'auto' | 'off' | undefined) ?? 'auto'): Promise<Containment> {
  checked ??= (async () => {
    const missing = missingTools();
    if (missing) throw new SandboxUnavailableError(missing);
    const probe = await LocalEpisodeSandbox.create({ cgroups: 'off' });
    try {
      const r = await probe.runNow('true', '/', 20, 64 * 1024, '', { kind: 'per-process', reason: 'the probe' });
      if (r.exitCode !== 0) throw new SandboxUnavailableError(namespacesRefused(r.stderr + r.stdout));
    } finally {
      await probe.cleanup();
    }
    return containment(cgroups);
  })();
  return checked;
}

let sandboxes = 0;

export class LocalEpisodeSandbox implements SandboxInterface {
  readonly sandboxId: string;
  readonly limits: EpisodeSandboxLimits;
  private readonly env: Record<string, string>;
  private readonly cgroups: 'auto' | 'off';
  private closed = false;
  /** Bytes of the root's files: measured at the start and after each command, the only writer. */
  private usedBytes: number;

  private constructor(
    readonly root: string,
    opts: EpisodeSandboxOptions,
  ) {
    this.sandboxId = `episode-${process.pid}-${++sandboxes}`;
    this.limits = { ...EPISODE_DEFAULTS, ...Object.fromEntries(Object.entries(opts.limits ?? {}).filter(([, v]) => v !== undefined)) };
    this.env = opts.env ?? {};
    this.cgroups = opts.cgroups ?? ((process.env.COOKBOOK_SANDBOX_CGROUPS as 'auto' | 'off' | undefined) ?? 'auto');
    this.usedBytes = diskBytes(root);
  }

  /** A fresh root (under the staging folder, named by this process so a later one can clear it), filled from `from`. */
  static async create(opts: EpisodeSandboxOptions = {}): Promise<LocalEpisodeSandbox> {
    const root = mkdtempSync(join(stagingRoot(), `cookbook-episode-${process.pid}-`));
    try {
      if (opts.from) await untar(opts.from, root);
      if (AS_NOBODY) chownTree(root, 65534);
      chmodSync(root, 0o755);
    } catch (e) {
      rmSync(root, { recursive: true, force: true });
      throw e;
    }
    return new LocalEpisodeSandbox(root, opts);
  }

  async sendHeartbeat(): Promise<void> {
    if (this.closed) throw new SandboxError(`sandbox ${this.sandboxId} was cleaned up`);
  }

  /** `bash -lc command` in `workdir` (default /), as Modal's exec runs it. */
  async runCommand(command: string, opts: { workdir?: string | null; timeout?: number; maxOutputBytes?: number | null; stdin?: string | Uint8Array } = {}): Promise<SandboxResult> {
    await this.sendHeartbeat();
    // Judged from the files alone, so a sandbox opened from a snapshot of a full one refuses too.
    const full = `sandbox: the episode's files passed its storage limit (${mib(this.limits.storageBytes)}); no more commands run`;
    if (this.usedBytes > this.limits.storageBytes) return { stdout: '', stderr: full, exitCode: -1, metrics: {} };
    const timeout = opts.timeout ?? 60;
    const keep = opts.maxOutputBytes ?? DEFAULT_KEEP_BYTES;
    const workdir = posix.resolve('/', opts.workdir ?? '/');
    const held = await episodeSandboxAvailable(this.cgroups);
    const r = await queue.run(() => this.runNow(command, workdir, timeout, keep, opts.stdin ?? '', held));
    this.usedBytes = diskBytes(this.root);
    if (this.usedBytes > this.limits.storageBytes) r.stderr += `${r.stderr && !r.stderr.endsWith('\n') ? '\n' : ''}${full}`;
    return r;
  }

  /** One command, now; runCommand queues it (and the availability probe calls it directly). */
  async runNow(command: string, workdir: string, timeout: number, keep: number, stdin: string | Uint8Array, held: Containment): Promise<SandboxResult> {
    const py = pythonInterpreter();
    const run: IsolationLimits = { ...this.limits, cpuSeconds: Math.min(this.limits.cpuSeconds, Math.max(1, Math.ceil(timeout))) };
    const runId = nextRunId();
    const group = held.kind === 'cgroup' ? RunCgroup.create(held.layout, `episode-${runId}`, { memoryBytes: run.memoryBytes, maxTasks: run.maxProcesses + NAMESPACE_TASKS, cpus: 1, cpuSeconds: run.cpuSeconds }) : null;
    const rlimits = group ? { ...run, cpuSeconds: run.cpuSeconds + 1, maxProcesses: run.maxProcesses + 1 } : perProcessShare(run);
    const dir = stage({});
    const environment = { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', LANG: 'C.UTF-8', ...this.env };
    const argv = episodeIsolatedArgv(dir, this.root, workdir, ['/usr/bin/env', '-i', ...Object.entries(environment).map(([k, v]) => `${k}=${v}`), '/bin/bash', '-lc', command], rlimits, py.extraReadOnly, timeout);
    try {
      const o = await execute(group ? group.joinArgv(argv) : argv, stdin, timeout, { keep, stopAfter: this.limits.stopOutputAfterBytes }, group, runId);
      const usage: CgroupUsage | null = group?.usage() ?? null;
      if (o.stderr.includes(SETUP_FAILED)) throw new SandboxError(`the episode sandbox could not be set up: ${o.stderr.trim()}`);
      const notes: string[] = [];
      let exitCode = o.code ?? (o.signal ? 128 + signalNumber(o.signal) : -1);
      if (o.stoppedFor === 'wall time') {
        exitCode = 124;
        notes.push(`sandbox: the command timed out after ${timeout} s`);
      } else if (o.stoppedFor === 'output size') notes.push(`sandbox: the command was stopped past ${mib(this.limits.stopOutputAfterBytes)} of output`);
      else if (o.stoppedFor) notes.push(`sandbox: the command passed its ${o.stoppedFor} limit`);
      const stderr = notes.length ? `${o.stderr}${o.stderr && !o.stderr.endsWith('\n') ? '\n' : ''}${notes.join('\n')}` : o.stderr;
      return { stdout: o.stdout, stderr, exitCode, metrics: { seconds: Math.round(o.seconds * 1000) / 1000, ...(usage?.memoryPeakBytes != null ? { peak_memory_bytes: usage.memoryPeakBytes } : {}) } };
    } finally {
      try {
        await group?.remove();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }

  /** The reference's read_file. */
  readFile(path: string, opts: { maxBytes?: number | null; timeout?: number } = {}): Promise<SandboxResult> {
    return this.runCommand(readFileCommand(path, opts.maxBytes), { timeout: opts.timeout });
  }

  /** The reference's write_file. */
  writeFile(path: string, content: string | Uint8Array, opts: { executable?: boolean; timeout?: number } = {}): Promise<SandboxResult> {
    return this.runCommand(writeFileCommand(path, opts.executable), { timeout: opts.timeout, stdin: content });
  }

  /**
   * The root's files as a gzipped tar (owners numeric; the isolation's mountpoints left out).
   * `zeroTimes`: every mtime 0, so that an image built twice packs to the same bytes.
   */
  async snapshot(opts: { zeroTimes?: boolean } = {}): Promise<Buffer> {
    await this.sendHeartbeat();
    const tar = await tarOf(this.root, opts.zeroTimes ?? false);
    return gzipSync(tar, { level: 1 });
  }

  async cleanup(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Episode roots whose process is gone (a killed worker's), removed; returns how many. */
export function clearStaleEpisodeRoots(): number {
  let cleared = 0;
  const base = stagingRoot();
  for (const name of readdirSync(base)) {
    const m = /^cookbook-episode-(\d+)-/.exec(name);
    if (!m || Number(m[1]) === process.pid || alive(Number(m[1]))) continue;
    rmSync(join(base, name), { recursive: true, force: true });
    cleared++;
  }
  return cleared;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const mib = (bytes: number) => `${+(bytes / MiB).toFixed(1)} MiB`;

const signalNumber = (signal: NodeJS.Signals): number => (osConstants.signals as Record<string, number>)[signal] ?? 0;

/** Bytes of the episode's own files (lstat sizes; the mountpoints left out). */
export function diskBytes(root: string): number {
  let total = 0;
  const walk = (dir: string, top: boolean) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (top && MOUNTPOINTS.includes(entry.name)) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path, false);
      else total += lstatSync(path).size;
    }
  };
  walk(root, true);
  return total;
}

function runTar(args: string[], input: Buffer | null): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('tar', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new SandboxError(`tar ${args[0]} failed (${code}): ${err.trim()}`))));
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? undefined);
  });
}

/** An empty tar: two zero blocks, padded to tar's record size. */
const EMPTY_TAR = Buffer.alloc(10240);

// The root's entries one by one, not "." itself: the isolation touches the root folder's mtime on
// every command, which would make every snapshot differ from the last.
async function tarOf(root: string, zeroTimes: boolean): Promise<Buffer> {
  const entries = readdirSync(root).filter((name) => !MOUNTPOINTS.includes(name)).sort();
  if (!entries.length) return EMPTY_TAR;
  return runTar(['-c', '-f', '-', '-C', root, '--numeric-owner', '--sort=name', ...(zeroTimes ? ['--mtime=@0'] : []), '--', ...entries], null);
}

async function untar(gz: Buffer, root: string): Promise<void> {
  mkdirSync(root, { recursive: true });
  await runTar(['-x', '-f', '-', '-C', root, '--numeric-owner', ...(AS_NOBODY ? ['--same-owner'] : [])], gunzipSync(gz));
}
