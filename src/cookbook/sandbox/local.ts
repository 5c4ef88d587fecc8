// The local sandbox: runs untrusted code isolated as isolation.ts describes, answering in
// SandboxFusion's `run_code` shape, so code graders use it and a SandboxFusion server alike.
//
// A run's limits hold for the run as a whole (memory, processes, CPU seconds and cores): its
// processes share one cgroup (cgroup.ts), watched while it runs and killed together at the first
// limit it passes. Where no cgroup can be made (not root and nothing delegated), the sandbox says so
// once and falls back to per-process rlimits sized so that the run's total stays within its limits:
// a run gets at most memory ÷ 256 MiB processes, each with an equal share of the memory (address
// space) and of the CPU seconds. Wall time and output size are enforced here: past either, the run
// is killed. Requests are checked first (request.ts) and run a few at a time (run-queue.ts). Each
// run gets a fresh staging directory and cgroup, both removed afterwards.
import { spawn } from 'node:child_process';
import { chmodSync, lchownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, constants as osConstants, tmpdir } from 'node:os';
import { dirname, isAbsolute, join, normalize, resolve } from 'node:path';
import { RunCgroup, probeCgroups, type CgroupLayout, type CgroupLimit, type CgroupUsage } from './cgroup.js';
import { NAMESPACE_TASKS, SETUP_FAILED, isolatedArgv, missingTools, namespacesRefused, pythonInterpreter, type IsolationLimits } from './isolation.js';
import { checkRunRequest } from './request.js';
import { RunQueue, type RunQueueStats } from './run-queue.js';
import { ConfigurationError } from '../errors.js';
import { SandboxUnavailableError, type CodeRunner, type CommandRunResult, type RunCodeRequest, type RunCodeResponse } from './types.js';

export interface LocalSandboxOptions extends Partial<IsolationLimits> {
  /** Bytes kept of stdout and of stderr; past that the run is stopped. */
  maxOutputBytes?: number;
  /** Wall time when a request names none, in seconds. */
  defaultTimeoutSeconds?: number;
  /** The longest wall time (run_timeout, compile_timeout) a request may ask for, in seconds. */
  maxTimeoutSeconds?: number;
  /** Cores one run may keep busy at once (with a cgroup per run). */
  cpus?: number;
  /** Runs at once; more wait their turn. Default: this machine's cores. */
  maxConcurrentRuns?: number;
  /** Runs that may wait; past that a request is refused as busy. */
  maxQueuedRuns?: number;
  /** `auto`: a cgroup per run where this host allows one; `off`: per-process limits only. Default: COOKBOOK_SANDBOX_CGROUPS, else auto. */
  cgroups?: 'auto' | 'off';
  /** Where the one line about how runs are held to their limits goes. */
  log?: (line: string) => void;
}

const MiB = 1024 * 1024;
const DEFAULTS = {
  cpuSeconds: 10,
  memoryBytes: 1024 * MiB,
  maxProcesses: 64,
  maxFileBytes: 16 * MiB,
  maxOpenFiles: 256,
  scratchBytes: 64 * MiB,
  maxOutputBytes: 1 * MiB,
  defaultTimeoutSeconds: 10,
  maxTimeoutSeconds: 300,
  cpus: 1,
  maxQueuedRuns: 1024,
};

/** Without a cgroup, each process of a run gets at least this much address space (Python needs ~50 MiB to start). */
export const FALLBACK_PROCESS_BYTES = 256 * MiB;
/** How often a running run's cgroup is read for a limit it passed. */
const WATCH_MS = 50;

/** How a run is held to its limits on this host: one cgroup for all its processes, or rlimits per process. */
export type Containment = { kind: 'cgroup'; layout: CgroupLayout } | { kind: 'per-process'; reason: string };

let probed: CgroupLayout | { reason: string } | undefined;
export function containment(setting: 'auto' | 'off'): Containment {
  if (setting === 'off') return { kind: 'per-process', reason: 'cgroups are switched off (cgroups: off or COOKBOOK_SANDBOX_CGROUPS=off)' };
  probed ??= probeCgroups();
  return 'reason' in probed ? { kind: 'per-process', reason: probed.reason } : { kind: 'cgroup', layout: probed };
}

/**
 * Per-process rlimits whose sum stays within the run's limits, for hosts without a cgroup per run:
 * as many processes as the memory gives 256 MiB each (at least one, at most the process limit),
 * each with an equal share of the address space and of the CPU seconds (at least 1 s).
 */
export function perProcessShare(run: IsolationLimits): IsolationLimits {
  const processes = Math.max(1, Math.min(run.maxProcesses, Math.floor(run.memoryBytes / FALLBACK_PROCESS_BYTES)));
  return { ...run, maxProcesses: processes, memoryBytes: Math.floor(run.memoryBytes / processes), cpuSeconds: Math.max(1, Math.floor(run.cpuSeconds / processes)) };
}

export const AS_NOBODY = process.getuid?.() === 0;

export type StopReason = 'wall time' | 'output size' | CgroupLimit;

export interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  seconds: number;
  stoppedFor: StopReason | null;
}

/** Every folder from / down to `dir` lets others through (the namespace's nobody must reach its stage). */
function traversableByOthers(dir: string): boolean {
  for (let d = resolve(dir); ; d = dirname(d)) {
    try {
      if ((statSync(d).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (d === dirname(d)) return true;
  }
}

/** Where runs are staged: the temp dir, or when we are root and nobody cannot reach it, /tmp or /dev/shm. */
export function stagingRoot(): string {
  if (!AS_NOBODY) return tmpdir();
  const found = [tmpdir(), '/tmp', '/dev/shm'].find(traversableByOthers);
  if (!found) throw new SandboxUnavailableError(`the local sandbox (run as nobody, since we are root) cannot reach a staging folder: none of ${tmpdir()}, /tmp, /dev/shm is open to others`);
  return found;
}

export function stage(files: Record<string, Buffer>): string {
  const dir = mkdtempSync(join(stagingRoot(), `cookbook-sandbox-${process.pid}-`));
  mkdirSync(join(dir, 'files'));
  mkdirSync(join(dir, 'root'));
  for (const [name, content] of Object.entries(files)) {
    const rel = normalize(name);
    if (isAbsolute(rel) || rel.startsWith('..')) throw new Error(`file name ${JSON.stringify(name)} leaves the sandbox's directory`);
    const path = join(dir, 'files', rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
  // The namespace runs as nobody when we are root: it must read its files, no one else.
  if (AS_NOBODY) chownTree(dir, 65534);
  chmodSync(dir, 0o700);
  return dir;
}

/** `path` and everything under it owned by `uid`; links themselves, never what they point to. */
export function chownTree(path: string, uid: number): void {
  lchownSync(path, uid, uid);
  if (lstatSync(path).isDirectory()) for (const entry of readdirSync(path)) chownTree(join(path, entry), uid);
}

function signalName(n: number): NodeJS.Signals | null {
  return (Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] as NodeJS.Signals | undefined) ?? null;
}

/**
 * Each run's id, `<this process's pid>-<n>`: its cgroup's name and, in its environment as
 * COOKBOOK_SANDBOX_RUN, what tells one caller's runs from another's on a shared host.
 */
let runs = 0;
export const nextRunId = () => `${process.pid}-${++runs}`;

/**
 * How much output a run may make: `keep` bytes of stdout and of stderr are kept, and past
 * `stopAfter` bytes of either the run is stopped ('output size'). A number is both.
 */
export type OutputLimit = number | { keep: number; stopAfter: number };

/** Runs `argv` (an isolated command) to its end or its first limit. */
export function execute(argv: string[], stdin: string | Uint8Array, wallSeconds: number, output: OutputLimit, group: RunCgroup | null = null, runId = nextRunId()): Promise<Outcome> {
  const keep = typeof output === 'number' ? output : output.keep;
  const stopAfter = typeof output === 'number' ? output : output.stopAfter;
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    // Nothing of the host's environment (API keys, tokens) reaches the code: only a PATH to find the tools.
    const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', COOKBOOK_SANDBOX_RUN: runId } });
    let status = '';
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (c: Buffer) => (status += c.toString()));
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let stoppedFor: Outcome['stoppedFor'] = null;
    const stop = (why: StopReason) => {
      stoppedFor ??= why;
      // SIGKILL to unshare: its child (the namespace's first process) has it as death signal, and
      // the kernel then kills every process left in the pid namespace; the cgroup's are killed too.
      child.kill('SIGKILL');
      group?.kill();
    };
    const timer = setTimeout(() => stop('wall time'), wallSeconds * 1000);
    const watch = group
      ? setInterval(() => {
          const passed = group.exceeded();
          if (passed) stop(passed);
        }, WATCH_MS)
      : null;
    const done = () => {
      clearTimeout(timer);
      if (watch) clearInterval(watch);
    };
    const collect = (chunks: Buffer[], count: () => number, add: (n: number) => void) => (chunk: Buffer) => {
      const room = keep - count();
      if (room > 0) chunks.push(chunk.subarray(0, room));
      add(chunk.length);
      if (count() > stopAfter) stop('output size');
    };
    child.stdout.on('data', collect(out, () => outBytes, (n) => (outBytes += n)));
    child.stderr.on('data', collect(err, () => errBytes, (n) => (errBytes += n)));
    child.stdin.on('error', () => {}); // code that never reads its stdin closes the pipe early
    child.stdin.end(stdin);
    child.on('error', (e) => {
      done();
      reject(e);
    });
    child.on('close', (code, signal) => {
      done();
      // A limit passed just before the end counts as one the watch saw: the answer does not depend on when it last looked.
      if (group && !stoppedFor) stoppedFor = group.exceeded();
      // The code's own status as the namespace's shell saw it; none when the namespace was killed.
      const reported = /^\d+$/.test(status.trim()) ? Number(status.trim()) : null;
      // The shell reports a signal N as 128 + N; above that range it is the code's own status (exit(-1) is 255).
      const killedBy = reported !== null && reported > 128 ? signalName(reported - 128) : null;
      resolve({
        code: reported === null ? (stoppedFor ? null : code) : killedBy ? null : reported,
        signal: killedBy ?? signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        seconds: Number(process.hrtime.bigint() - started) / 1e9,
        stoppedFor,
      });
    });
  });
}


/** A run's answer, with what its cgroup measured (null without one). */
export interface MeasuredRun {
  response: RunCodeResponse;
  usage: CgroupUsage | null;
}

export class LocalSandbox implements CodeRunner {
  readonly limits: IsolationLimits;
  readonly maxOutputBytes: number;
  readonly defaultTimeoutSeconds: number;
  readonly maxTimeoutSeconds: number;
  readonly cpus: number;
  private readonly queue: RunQueue;
  private readonly cgroups: 'auto' | 'off';
  private readonly log: (line: string) => void;
  private checked: Promise<Containment> | null = null;

  constructor(opts: LocalSandboxOptions = {}) {
    const o = { ...DEFAULTS, ...Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) } as typeof DEFAULTS & LocalSandboxOptions;
    this.limits = { cpuSeconds: o.cpuSeconds, memoryBytes: o.memoryBytes, maxProcesses: o.maxProcesses, maxFileBytes: o.maxFileBytes, maxOpenFiles: o.maxOpenFiles, scratchBytes: o.scratchBytes };
    this.maxOutputBytes = o.maxOutputBytes;
    this.defaultTimeoutSeconds = o.defaultTimeoutSeconds;
    this.maxTimeoutSeconds = o.maxTimeoutSeconds;
    this.cpus = o.cpus;
    this.queue = new RunQueue(o.maxConcurrentRuns ?? availableParallelism(), o.maxQueuedRuns);
    const setting = o.cgroups ?? process.env.COOKBOOK_SANDBOX_CGROUPS ?? 'auto';
    if (setting !== 'auto' && setting !== 'off') throw new ConfigurationError(`COOKBOOK_SANDBOX_CGROUPS must be auto or off (got ${JSON.stringify(setting)})`);
    this.cgroups = setting;
    this.log = o.log ?? ((line) => console.error(line));
  }

  /**
   * Resolves with how runs are held to their limits when this host can isolate code; rejects with
   * SandboxUnavailableError naming what is missing. Without a cgroup per run it says so, once.
   */
  available(): Promise<Containment> {
    this.checked ??= (async () => {
      const missing = missingTools();
      if (missing) throw new SandboxUnavailableError(missing);
      const dir = stage({});
      try {
        const probe = await execute(isolatedArgv(dir, ['true'], this.limits, null, 20), '', 20, 64 * 1024);
        if (probe.code !== 0) throw new SandboxUnavailableError(namespacesRefused(probe.stderr + probe.stdout));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      const held = containment(this.cgroups);
      if (held.kind === 'per-process') {
        const share = perProcessShare(this.limits);
        this.log(
          `local sandbox: no cgroup per run (${held.reason}); each run's limits are split over its processes instead: ` +
            `at most ${share.maxProcesses} process${share.maxProcesses > 1 ? 'es' : ''}, each with ${mib(share.memoryBytes)} of address space and ${share.cpuSeconds} CPU s`,
        );
      }
      return held;
    })();
    return this.checked;
  }

  /** Runs now, running and waiting, and the most there have been. */
  queueStats(): RunQueueStats {
    return this.queue.stats();
  }

  /** One `run_code` request, answered as SandboxFusion answers it; a request out of range throws SandboxRequestError. */
  async runCode(request: RunCodeRequest, onQueued?: (depth: number) => void): Promise<RunCodeResponse> {
    return (await this.runMeasured(request, onQueued)).response;
  }

  /** runCode, with what the run's cgroup measured (its peak memory and processes, CPU seconds). */
  async runMeasured(request: RunCodeRequest, onQueued?: (depth: number) => void): Promise<MeasuredRun> {
    checkRunRequest(request, { maxTimeoutSeconds: this.maxTimeoutSeconds, maxMemoryMB: Math.floor(this.limits.memoryBytes / MiB) });
    const held = await this.available();
    return this.queue.run(() => this.runNow(request, held), onQueued);
  }

  private async runNow(request: RunCodeRequest, held: Containment): Promise<MeasuredRun> {
    const language = request.language ?? 'python';
    let command: string[];
    let extra: string | null = null;
    let entry: string;
    if (language === 'python') {
      const py = pythonInterpreter();
      extra = py.extraReadOnly;
      entry = 'main.py';
      // -E -s, not -I: isolated mode also leaves the script's folder off sys.path, and code sent with
      // its files imports them (LiveCodeBench's harness imports testing_util.py), as on SandboxFusion.
      command = [py.path, '-E', '-s', entry];
    } else if (language === 'bash') {
      entry = 'main.sh';
      command = ['/bin/bash', entry];
    } else {
      return { response: sandboxError(`language ${JSON.stringify(language)} is not supported by the local sandbox (python, bash)`), usage: null };
    }
    const files: Record<string, Buffer> = {};
    for (const [name, b64] of Object.entries(request.files ?? {})) files[name] = Buffer.from(b64, 'base64');
    files[entry] = Buffer.from(request.code, 'utf8');
    const wall = request.run_timeout ?? this.defaultTimeoutSeconds;
    const run: IsolationLimits = { ...this.limits, cpuSeconds: Math.min(this.limits.cpuSeconds, Math.max(1, Math.ceil(wall))) };
    if (request.memory_limit_MB && request.memory_limit_MB > 0) run.memoryBytes = Math.min(run.memoryBytes, request.memory_limit_MB * MiB);
    const runId = nextRunId();
    let group: RunCgroup | null = null;
    let dir: string | null = null;
    try {
      dir = stage(files);
      if (held.kind === 'cgroup') group = RunCgroup.create(held.layout, `run-${runId}`, { memoryBytes: run.memoryBytes, maxTasks: run.maxProcesses + NAMESPACE_TASKS, cpus: this.cpus, cpuSeconds: run.cpuSeconds });
    } catch (e) {
      if (dir) rmSync(dir, { recursive: true, force: true });
      return { response: sandboxError((e as Error).message), usage: null };
    }
    // With a cgroup the run's own limits are the cgroup's; the rlimits stay as a backstop each process alone cannot pass first.
    const rlimits = group ? { ...run, cpuSeconds: run.cpuSeconds + 1, maxProcesses: run.maxProcesses + 1 } : perProcessShare(run);
    try {
      const argv = isolatedArgv(dir, command, rlimits, extra, wall);
      const o = await execute(group ? group.joinArgv(argv) : argv, request.stdin ?? '', wall, this.maxOutputBytes, group, runId);
      const usage = group?.usage() ?? null;
      if (o.stderr.includes(SETUP_FAILED)) {
        return { response: sandboxError(`the sandbox could not be set up: ${o.stderr.trim()}`), usage };
      }
      return { response: respond(o, wall, group ? run : rlimits), usage };
    } finally {
      try {
        await group?.remove();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }

  async run(code: string, files: Record<string, string>, timeout: number, language = 'python'): Promise<[boolean, RunCodeResponse]> {
    const encoded = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
    try {
      const response = await this.runCode({ code, language, run_timeout: timeout, files: encoded });
      return [response.status === 'Success', response];
    } catch (e) {
      return [false, { ...sandboxError((e as Error).message), error: (e as Error).message } as RunCodeResponse];
    }
  }

  async close(): Promise<void> {}
}

const mib = (bytes: number) => `${+(bytes / MiB).toFixed(1)} MiB`;

function sandboxError(message: string): RunCodeResponse {
  return { status: 'SandboxError', message, compile_result: null, run_result: null, files: {} };
}

/** What each limit says when a run passed it (with a cgroup: the run's limits; without: each process's share). */
const LIMIT_MESSAGES: Record<CgroupLimit, (l: IsolationLimits) => string> = {
  memory: (l) => `memory limit exceeded (${mib(l.memoryBytes)})`,
  processes: (l) => `process limit exceeded (${l.maxProcesses} processes)`,
  'cpu time': (l) => `CPU time limit exceeded (${l.cpuSeconds} s)`,
};

const SIGNAL_LIMITS: Partial<Record<NodeJS.Signals, (l: IsolationLimits) => string>> = {
  SIGXCPU: LIMIT_MESSAGES['cpu time'],
  SIGXFSZ: (l) => `file size limit exceeded (${l.maxFileBytes} bytes)`,
};

function respond(o: Outcome, wall: number, limits: IsolationLimits): RunCodeResponse {
  const killedAtLimit = o.stoppedFor === 'memory' || o.stoppedFor === 'processes' || o.stoppedFor === 'cpu time';
  const run: CommandRunResult = {
    // A run killed at a limit ended as one the kernel killed at its rlimit would: Finished, no exit code.
    status: o.stoppedFor === 'wall time' ? 'TimeLimitExceeded' : o.stoppedFor && !killedAtLimit ? 'Error' : 'Finished',
    execution_time: Math.round(o.seconds * 1000) / 1000,
    return_code: o.code,
    stdout: o.stdout,
    stderr: o.stderr,
  };
  let message = '';
  if (o.stoppedFor === 'wall time') message = `wall time limit exceeded (${wall} s)`;
  else if (o.stoppedFor === 'output size') message = 'output size limit exceeded';
  else if (killedAtLimit) message = LIMIT_MESSAGES[o.stoppedFor as CgroupLimit](limits);
  else if (o.signal) message = SIGNAL_LIMITS[o.signal]?.(limits) ?? `killed by ${o.signal}`;
  const ok = !o.stoppedFor && o.code === 0;
  return { status: ok ? 'Success' : 'Failed', message, compile_result: null, run_result: run, executor_pod_name: null, files: {} };
}
