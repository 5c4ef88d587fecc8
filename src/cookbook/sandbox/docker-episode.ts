// A stateful episode sandbox in a Docker container (what the reference's harbor_rl gets from a
// Modal sandbox built from the task's Dockerfile): the container starts from the task's image with
// no network, a memory, pids and CPU limit, and lives as long as the episode; each command is
// `docker exec … bash -lc command` in its workdir, one at a time, and what it writes is found by
// the next. The semantics are LocalEpisodeSandbox's (episode.ts): past its wall time a command's
// processes are killed and it exits 124 with the same note; `maxOutputBytes` of stdout and of
// stderr are kept and the rest drained, up to `stopOutputAfterBytes`, past which it is killed; a
// background process does not outlive its command; past `storageBytes` of changed files (the
// container's writable layer) the sandbox refuses more commands, as does one opened from a
// snapshot of such files.
//
// Killing "the command's processes" is `kill -9 -1` inside the container: every process but the
// container's first (a bash loop that holds the container open and reaps orphans), atomically with
// respect to fork, so a fork bomb cannot outrun it.
//
// `snapshot()` is the container's changes relative to its image, small and exact: the paths
// `docker diff` says were deleted, and a tar of those it says were added or changed (owners
// numeric, no recursion: every changed path is listed), behind a JSON header naming the image —
// gzipped into one Buffer. `create({ from })` starts a new container from the image and applies one:
// the deletions, then the tar.
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { posix } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { EPISODE_DEFAULTS, type EpisodeSandboxLimits } from './episode.js';
import { readFileCommand, writeFileCommand } from './file-commands.js';
import { SandboxError, SandboxTerminatedError, SandboxUnavailableError, type SandboxInterface, type SandboxResult } from './types.js';

const MiB = 1024 * 1024;
/** Every episode container carries it, valued `<host>/<pid>` of the process that started it. */
export const EPISODE_LABEL = 'durable-cookbook.episode';
const OWNER = `${hostname()}/${process.pid}`;
const SNAPSHOT_FORMAT = 'docker-episode/1';
/** Modal's default stream cap, as episode.ts keeps. */
const DEFAULT_KEEP_BYTES = 128 * 1024;
/** The container's own processes besides the commands' (its loop, its sleep, a command's wrapper, an exec of ours). */
const OWN_PROCESSES = 4;
/** How long a command's `docker exec` client may take to end after its processes were killed. */
const CLIENT_GRACE_MS = 10_000;
/** Paths Docker mounts into every container: never part of a snapshot. */
const RUNTIME_PATHS = new Set(['/etc/hostname', '/etc/hosts', '/etc/resolv.conf', '/.dockerenv']);

// The container's first process: bash, which the kernel shields from signals it has no handler
// for (it is the pid namespace's init), so `kill -9 -1` spares it; it waits on a sleep (restarting
// it when a kill takes it) and reaps every orphan, so killed commands leave no zombies to fill the
// pids limit. On SIGUSR1 (`docker kill -s USR1`, from the host) it kills every other process with
// its builtin kill: no new process is needed, so a fork bomb that holds every pid cannot stop it.
const KEEPER = "trap 'kill -9 -1' USR1; while :; do sleep 86400 & wait $!; done";
// Each command: its own login shell in its workdir (made when missing, as the local sandbox
// does; `docker exec -w` refuses a missing one), then every process it left behind killed; its
// status kept. The wrapper's own messages (a job "Killed") go nowhere: stderr is the command's.
const WRAPPER = 'exec 3>&2 2>/dev/null; mkdir -p -- "$2"; cd -- "$2" 2>&3 || exit 1; bash -lc "$1" 2>&3 3>&-; s=$?; kill -9 -1; exit $s';
/** The kernel's count of the container's OOM kills (cgroup v2, then v1). */
const OOM_KILLS = 'cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null; true';

export interface DockerOutcome {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** `docker args…`, its stdin given, to its end (or killed past `timeoutMs`). */
export function docker(args: string[], opts: { stdin?: string | Uint8Array; timeoutMs?: number } = {}): Promise<DockerOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn('docker', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let err = '';
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs) : null;
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', (e) => {
      if (timer) clearTimeout(timer);
      reject(new SandboxUnavailableError(`docker could not be run: ${e.message}`));
    });
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr: err });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.stdin ?? '');
  });
}

async function mustDocker(what: string, args: string[], opts: { stdin?: string | Uint8Array; timeoutMs?: number } = {}): Promise<string> {
  const r = await docker(args, opts);
  if (r.code !== 0) throw new SandboxError(`${what}: \`docker ${args.slice(0, 2).join(' ')} …\` failed (${r.code ?? 'killed'}): ${r.stderr.trim().slice(-1000)}`);
  return r.stdout.toString('utf8');
}

/** The Docker engine's version when `docker info` answers within `timeoutMs`; otherwise why not. */
export async function dockerEngine(timeoutMs = 5000): Promise<{ version: string } | { unavailable: string }> {
  try {
    const r = await docker(['info', '--format', '{{.ServerVersion}}'], { timeoutMs });
    const version = r.stdout.toString().trim();
    if (r.code === 0 && version) return { version };
    if (r.code === null) return { unavailable: `\`docker info\` did not answer within ${timeoutMs / 1000} s` };
    return { unavailable: `\`docker info\` failed: ${r.stderr.trim().split('\n').pop() || `exit ${r.code}`}` };
  } catch (e) {
    return { unavailable: (e as Error).message };
  }
}

interface SnapshotHeader {
  format: typeof SNAPSHOT_FORMAT;
  image: string;
  /** Paths of the image the episode deleted, sorted. */
  deleted: string[];
}

/** A snapshot: its header line, then the tar of added and changed paths (empty when none), gzipped. */
function packSnapshot(header: SnapshotHeader, tar: Buffer): Buffer {
  return gzipSync(Buffer.concat([Buffer.from(JSON.stringify(header) + '\n'), tar]), { level: 1 });
}

export function unpackSnapshot(snapshot: Buffer): { header: SnapshotHeader; tar: Buffer } {
  const raw = gunzipSync(snapshot);
  const nl = raw.indexOf(0x0a);
  let header: SnapshotHeader | null = null;
  try {
    header = nl > 0 ? (JSON.parse(raw.subarray(0, nl).toString('utf8')) as SnapshotHeader) : null;
  } catch {
    // not JSON: another sandbox's snapshot, refused below
  }
  if (header?.format !== SNAPSHOT_FORMAT) throw new SandboxError(`not a Docker episode snapshot (no ${SNAPSHOT_FORMAT} header)`);
  return { header, tar: raw.subarray(nl + 1) };
}

/** The files of a fresh container of `image`: no change. */
export function emptySnapshot(image: string): Buffer {
  return packSnapshot({ format: SNAPSHOT_FORMAT, image, deleted: [] }, Buffer.alloc(0));
}

export interface DockerEpisodeOptions {
  /** The image (a tag or id) every container of the episode starts from. */
  image: string;
  /** A snapshot of a container of the same image to start from; none: the image as it is. */
  from?: Buffer | null;
  limits?: Partial<EpisodeSandboxLimits>;
}

export class DockerEpisodeSandbox implements SandboxInterface {
  readonly limits: EpisodeSandboxLimits;
  private closed = false;
  private full = false;
  private oomKills = 0;

  private constructor(
    readonly sandboxId: string,
    readonly image: string,
    limits: EpisodeSandboxLimits,
  ) {
    this.limits = limits;
  }

  /** A new container of `image` (labelled with this process, so a later one can remove it), `from` applied. */
  static async create(opts: DockerEpisodeOptions): Promise<DockerEpisodeSandbox> {
    const limits: EpisodeSandboxLimits = { ...EPISODE_DEFAULTS, ...Object.fromEntries(Object.entries(opts.limits ?? {}).filter(([, v]) => v !== undefined)) };
    const snapshot = opts.from ? unpackSnapshot(opts.from) : null;
    if (snapshot && snapshot.header.image !== opts.image) throw new SandboxError(`a snapshot of image ${snapshot.header.image} cannot open in image ${opts.image}`);
    const memory = `${limits.memoryBytes}b`;
    const id = (
      await mustDocker('starting an episode container', [
        'run', '-d', '--network', 'none', '--label', `${EPISODE_LABEL}=${OWNER}`,
        '--memory', memory, '--memory-swap', memory, '--pids-limit', String(limits.maxProcesses + OWN_PROCESSES), '--cpus', '1',
        '--ulimit', `fsize=${limits.maxFileBytes}`, '--ulimit', `nofile=${limits.maxOpenFiles}:${limits.maxOpenFiles}`,
        '--entrypoint', 'bash', opts.image, '-c', KEEPER,
      ], { timeoutMs: 120_000 })
    ).trim();
    const sandbox = new DockerEpisodeSandbox(id, opts.image, limits);
    try {
      if (snapshot) {
        await sandbox.apply(snapshot.header.deleted, snapshot.tar);
        // Judged from the files alone: a sandbox opened from a snapshot of a full one refuses too.
        sandbox.full = (await sandbox.changedBytes()) > limits.storageBytes;
      }
    } catch (e) {
      await sandbox.cleanup();
      throw e;
    }
    return sandbox;
  }

  private async apply(deleted: string[], tar: Buffer): Promise<void> {
    if (deleted.length) await mustDocker('restoring a snapshot', ['exec', '-u', '0', this.sandboxId, 'rm', '-rf', '--', ...deleted], { timeoutMs: 120_000 });
    if (tar.length) await mustDocker('restoring a snapshot', ['exec', '-i', '-u', '0', this.sandboxId, 'tar', '-x', '-f', '-', '-C', '/', '--numeric-owner', '--same-owner', '-p'], { stdin: tar, timeoutMs: 120_000 });
  }

  async sendHeartbeat(): Promise<void> {
    if (this.closed) throw new SandboxError(`sandbox ${this.sandboxId.slice(0, 12)} was cleaned up`);
  }

  /** `bash -lc command` in `workdir` (default /), as Modal's exec runs it. */
  async runCommand(command: string, opts: { workdir?: string | null; timeout?: number; maxOutputBytes?: number | null; stdin?: string | Uint8Array } = {}): Promise<SandboxResult> {
    await this.sendHeartbeat();
    if (this.full) return { stdout: '', stderr: this.fullNote(), exitCode: -1, metrics: {} };
    const timeout = opts.timeout ?? 60;
    const keep = opts.maxOutputBytes ?? DEFAULT_KEEP_BYTES;
    const workdir = posix.resolve('/', opts.workdir ?? '/');
    const r = await this.exec([this.sandboxId, 'bash', '-c', WRAPPER, 'bash', command, workdir], opts.stdin ?? '', timeout, keep);
    if (r.exitCode === 137 && (await this.oomKilled())) r.stderr += `${r.stderr && !r.stderr.endsWith('\n') ? '\n' : ''}sandbox: the command passed its memory limit`;
    this.full = (await this.changedBytes()) > this.limits.storageBytes;
    if (this.full) {
      r.stderr += `${r.stderr && !r.stderr.endsWith('\n') ? '\n' : ''}${this.fullNote()}`;
    }
    return r;
  }

  /** Whether the kernel killed a process for memory since the last time this was asked. */
  private async oomKilled(): Promise<boolean> {
    const text = (await docker(['exec', '-u', '0', this.sandboxId, 'bash', '-c', OOM_KILLS], { timeoutMs: 60_000 })).stdout.toString();
    const count = Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? 0);
    const killed = count > this.oomKills;
    this.oomKills = count;
    return killed;
  }

  private fullNote(): string {
    return `sandbox: the episode's files passed its storage limit (${+(this.limits.storageBytes / MiB).toFixed(1)} MiB); no more commands run`;
  }

  /** Bytes of the container's writable layer (what the episode added or changed). */
  private async changedBytes(): Promise<number> {
    return Number((await mustDocker('measuring the episode\'s files', ['container', 'inspect', '--size', '--format', '{{.SizeRw}}', this.sandboxId])).trim());
  }

  private killAll(): Promise<DockerOutcome> {
    return docker(['kill', '--signal', 'USR1', this.sandboxId], { timeoutMs: 60_000 });
  }

  private exec(args: string[], stdin: string | Uint8Array, timeout: number, keep: number): Promise<SandboxResult> {
    const stopAfter = this.limits.stopOutputAfterBytes;
    return new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      const child = spawn('docker', ['exec', '-i', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let outBytes = 0;
      let errBytes = 0;
      let stoppedFor: 'wall time' | 'output size' | null = null;
      let killed: Promise<unknown> = Promise.resolve();
      let grace: NodeJS.Timeout | null = null;
      const stop = (why: 'wall time' | 'output size') => {
        if (stoppedFor) return;
        stoppedFor = why;
        // The processes are in the container: killing the client would leave them running. Once
        // they are killed the client ends by itself; it is killed only if it does not.
        killed = this.killAll().finally(() => (grace = setTimeout(() => child.kill('SIGKILL'), CLIENT_GRACE_MS)));
      };
      const timer = setTimeout(() => stop('wall time'), timeout * 1000);
      const collect = (chunks: Buffer[], count: () => number, add: (n: number) => void) => (chunk: Buffer) => {
        const room = keep - count();
        if (room > 0) chunks.push(chunk.subarray(0, room));
        add(chunk.length);
        if (count() > stopAfter) stop('output size');
      };
      child.stdout.on('data', collect(out, () => outBytes, (n) => (outBytes += n)));
      child.stderr.on('data', collect(err, () => errBytes, (n) => (errBytes += n)));
      child.stdin.on('error', () => {});
      child.stdin.end(stdin);
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(new SandboxUnavailableError(`docker could not be run: ${e.message}`));
      });
      child.on('close', async (code) => {
        clearTimeout(timer);
        // The kill delivered before the answer: it must not reach the sandbox's next command.
        await killed.catch(() => {});
        if (grace) clearTimeout(grace);
        const stdout = Buffer.concat(out).toString('utf8');
        let stderr = Buffer.concat(err).toString('utf8');
        // The engine's own refusal (the container gone), not the command's answer.
        if (!stoppedFor && !stdout && /^(Error response from daemon|Error: No such container|OCI runtime exec failed)/.test(stderr)) {
          reject(new SandboxTerminatedError(`sandbox ${this.sandboxId.slice(0, 12)}: ${stderr.trim()}`));
          return;
        }
        let exitCode = code ?? -1;
        const note = stoppedFor === 'wall time' ? `sandbox: the command timed out after ${timeout} s` : stoppedFor === 'output size' ? `sandbox: the command was stopped past ${+(stopAfter / MiB).toFixed(1)} MiB of output` : null;
        if (stoppedFor === 'wall time') exitCode = 124;
        if (note) stderr = `${stderr}${stderr && !stderr.endsWith('\n') ? '\n' : ''}${note}`;
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        resolve({ stdout, stderr, exitCode, metrics: { seconds: Math.round(seconds * 1000) / 1000 } });
      });
    });
  }

  /** The reference's read_file. */
  readFile(path: string, opts: { maxBytes?: number | null; timeout?: number } = {}): Promise<SandboxResult> {
    return this.runCommand(readFileCommand(path, opts.maxBytes), { timeout: opts.timeout });
  }

  /** The reference's write_file. */
  writeFile(path: string, content: string | Uint8Array, opts: { executable?: boolean; timeout?: number } = {}): Promise<SandboxResult> {
    return this.runCommand(writeFileCommand(path, opts.executable), { timeout: opts.timeout, stdin: content });
  }

  /** The container's changes relative to its image (see the top of this file). */
  async snapshot(): Promise<Buffer> {
    await this.sendHeartbeat();
    const deleted: string[] = [];
    const kept: string[] = [];
    for (const line of (await mustDocker('listing the episode\'s changes', ['diff', this.sandboxId])).split('\n')) {
      const m = /^([ACD]) (\/.*)$/.exec(line);
      if (!m || RUNTIME_PATHS.has(m[2])) continue;
      (m[1] === 'D' ? deleted : kept).push(m[2]);
    }
    deleted.sort();
    kept.sort();
    let tar: Buffer = Buffer.alloc(0);
    if (kept.length) {
      const list = kept.map((p) => p.slice(1)).join('\0');
      const r = await docker(['exec', '-i', '-u', '0', this.sandboxId, 'tar', '-c', '-f', '-', '-C', '/', '--numeric-owner', '--no-recursion', '--null', '-T', '-'], { stdin: list, timeoutMs: 300_000 });
      if (r.code !== 0) throw new SandboxError(`packing the episode's changes: tar failed (${r.code ?? 'killed'}): ${r.stderr.trim().slice(-1000)}`);
      tar = r.stdout;
    }
    return packSnapshot({ format: SNAPSHOT_FORMAT, image: this.image, deleted }, tar);
  }

  async cleanup(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await docker(['rm', '-f', this.sandboxId], { timeoutMs: 60_000 }).catch(() => {});
  }
}


/** Episode containers of this host whose process is gone (a killed worker's), removed; returns how many. */
export async function clearStaleEpisodeContainers(): Promise<number> {
  const r = await docker(['ps', '-a', '--filter', `label=${EPISODE_LABEL}`, '--format', `{{.ID}} {{.Label "${EPISODE_LABEL}"}}`], { timeoutMs: 30_000 });
  if (r.code !== 0) return 0;
  const stale: string[] = [];
  for (const line of r.stdout.toString().split('\n')) {
    const [id, owner] = line.trim().split(' ');
    const m = /^(.*)\/(\d+)$/.exec(owner ?? '');
    if (!id || !m || m[1] !== hostname() || Number(m[2]) === process.pid || alive(Number(m[2]))) continue;
    stale.push(id);
  }
  if (stale.length) await docker(['rm', '-f', ...stale], { timeoutMs: 120_000 });
  return stale.length;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
