// The local sandbox: runs untrusted code isolated as isolation.ts describes, answering in
// SandboxFusion's `run_code` shape, so code graders use it and a SandboxFusion server alike. Wall
// time and output size are enforced here: past either, the namespace is killed (and every process
// in it with it). Each run gets a fresh staging directory, removed afterwards.
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { dirname, isAbsolute, join, normalize, resolve } from 'node:path';
import { SETUP_FAILED, isolatedArgv, missingTools, namespacesRefused, pythonInterpreter, type IsolationLimits } from './isolation.js';
import { SandboxUnavailableError, type CodeRunner, type CommandRunResult, type RunCodeRequest, type RunCodeResponse } from './types.js';

export interface LocalSandboxOptions extends Partial<IsolationLimits> {
  /** Bytes kept of stdout and of stderr; past that the run is stopped. */
  maxOutputBytes?: number;
  /** Wall time when a request names none, in seconds. */
  defaultTimeoutSeconds?: number;
}

const MiB = 1024 * 1024;
const DEFAULTS: IsolationLimits & { maxOutputBytes: number; defaultTimeoutSeconds: number } = {
  cpuSeconds: 10,
  memoryBytes: 1024 * MiB,
  maxProcesses: 64,
  maxFileBytes: 16 * MiB,
  maxOpenFiles: 256,
  scratchBytes: 64 * MiB,
  maxOutputBytes: 1 * MiB,
  defaultTimeoutSeconds: 10,
};

const AS_NOBODY = process.getuid?.() === 0;

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  seconds: number;
  stoppedFor: 'wall time' | 'output size' | null;
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

function stage(files: Record<string, Buffer>): string {
  const dir = mkdtempSync(join(stagingRoot(), 'cookbook-sandbox-'));
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

function chownTree(path: string, uid: number): void {
  chownSync(path, uid, uid);
  if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) chownTree(join(path, entry), uid);
}

function signalName(n: number): NodeJS.Signals | null {
  return (Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] as NodeJS.Signals | undefined) ?? null;
}

function execute(argv: string[], stdin: string, wallSeconds: number, maxOutputBytes: number): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    // Nothing of the host's environment (API keys, tokens) reaches the code: only a PATH to find the tools.
    const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' } });
    let status = '';
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (c: Buffer) => (status += c.toString()));
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let stoppedFor: Outcome['stoppedFor'] = null;
    const stop = (why: NonNullable<Outcome['stoppedFor']>) => {
      stoppedFor ??= why;
      // SIGKILL to unshare: its child (the namespace's first process) has it as death signal, and
      // the kernel then kills every process left in the pid namespace.
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop('wall time'), wallSeconds * 1000);
    const collect = (chunks: Buffer[], count: () => number, add: (n: number) => void) => (chunk: Buffer) => {
      const room = maxOutputBytes - count();
      if (room > 0) chunks.push(chunk.subarray(0, room));
      add(chunk.length);
      if (count() > maxOutputBytes) stop('output size');
    };
    child.stdout.on('data', collect(out, () => outBytes, (n) => (outBytes += n)));
    child.stderr.on('data', collect(err, () => errBytes, (n) => (errBytes += n)));
    child.stdin.on('error', () => {}); // code that never reads its stdin closes the pipe early
    child.stdin.end(stdin);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
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


export class LocalSandbox implements CodeRunner {
  readonly limits: IsolationLimits;
  readonly maxOutputBytes: number;
  readonly defaultTimeoutSeconds: number;
  private checked: Promise<void> | null = null;

  constructor(opts: LocalSandboxOptions = {}) {
    const o = { ...DEFAULTS, ...Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) };
    this.limits = { cpuSeconds: o.cpuSeconds, memoryBytes: o.memoryBytes, maxProcesses: o.maxProcesses, maxFileBytes: o.maxFileBytes, maxOpenFiles: o.maxOpenFiles, scratchBytes: o.scratchBytes };
    this.maxOutputBytes = o.maxOutputBytes;
    this.defaultTimeoutSeconds = o.defaultTimeoutSeconds;
  }

  /** Resolves when this host can isolate code; rejects with SandboxUnavailableError naming what is missing. */
  available(): Promise<void> {
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
    })();
    return this.checked;
  }

  /** One `run_code` request, answered as SandboxFusion answers it. */
  async runCode(request: RunCodeRequest): Promise<RunCodeResponse> {
    await this.available();
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
      return sandboxError(`language ${JSON.stringify(language)} is not supported by the local sandbox (python, bash)`);
    }
    const files: Record<string, Buffer> = {};
    for (const [name, b64] of Object.entries(request.files ?? {})) files[name] = Buffer.from(b64, 'base64');
    files[entry] = Buffer.from(request.code, 'utf8');
    let dir: string;
    try {
      dir = stage(files);
    } catch (e) {
      return sandboxError((e as Error).message);
    }
    const wall = request.run_timeout ?? this.defaultTimeoutSeconds;
    const limits = { ...this.limits, cpuSeconds: Math.min(this.limits.cpuSeconds, Math.max(1, Math.ceil(wall))) };
    if (request.memory_limit_MB && request.memory_limit_MB > 0) limits.memoryBytes = Math.min(limits.memoryBytes, request.memory_limit_MB * MiB);
    try {
      const o = await execute(isolatedArgv(dir, command, limits, extra, wall), request.stdin ?? '', wall, this.maxOutputBytes);
      if (o.stderr.includes(SETUP_FAILED)) {
        return sandboxError(`the sandbox could not be set up: ${o.stderr.trim()}`);
      }
      return respond(o, wall, limits);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  async run(code: string, files: Record<string, string>, timeout: number, language = 'python'): Promise<[boolean, RunCodeResponse]> {
    const encoded = Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
    try {
      const response = await this.runCode({ code, language, run_timeout: Math.trunc(timeout), files: encoded });
      return [response.status === 'Success', response];
    } catch (e) {
      return [false, { ...sandboxError((e as Error).message), error: (e as Error).message } as RunCodeResponse];
    }
  }

  async close(): Promise<void> {}
}

function sandboxError(message: string): RunCodeResponse {
  return { status: 'SandboxError', message, compile_result: null, run_result: null, files: {} };
}

const SIGNAL_LIMITS: Partial<Record<NodeJS.Signals, (l: IsolationLimits) => string>> = {
  SIGXCPU: (l) => `CPU time limit exceeded (${l.cpuSeconds} s)`,
  SIGXFSZ: (l) => `file size limit exceeded (${l.maxFileBytes} bytes)`,
};

function respond(o: Outcome, wall: number, limits: IsolationLimits): RunCodeResponse {
  const run: CommandRunResult = {
    status: o.stoppedFor === 'wall time' ? 'TimeLimitExceeded' : o.stoppedFor ? 'Error' : 'Finished',
    execution_time: Math.round(o.seconds * 1000) / 1000,
    return_code: o.code,
    stdout: o.stdout,
    stderr: o.stderr,
  };
  let message = '';
  if (o.stoppedFor === 'wall time') message = `wall time limit exceeded (${wall} s)`;
  else if (o.stoppedFor === 'output size') message = 'output size limit exceeded';
  else if (o.signal) message = SIGNAL_LIMITS[o.signal]?.(limits) ?? `killed by ${o.signal}`;
  const ok = !o.stoppedFor && o.code === 0;
  return { status: ok ? 'Success' : 'Failed', message, compile_result: null, run_result: run, executor_pod_name: null, files: {} };
}
