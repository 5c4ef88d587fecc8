// The local sandbox against hostile programs, for real: each runs isolated in namespaces with
// rlimits, gets a clear result, and leaves the host as it was — no process left behind, nothing
// written outside its own tmpfs, no host file, secret or network reachable.
import { spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isolatedArgv, pythonInterpreter } from '../../src/cookbook/sandbox/isolation.js';
import { LocalSandbox, stagingRoot } from '../../src/cookbook/sandbox/local.js';
import { SandboxUnavailableError, type RunCodeResponse } from '../../src/cookbook/sandbox/types.js';
import { ownSandboxProcesses } from '../support/sandbox-runs.js';

// A host that cannot isolate (no user namespaces, e.g. a Docker container under the default seccomp
// profile) must say so by name; everything else here needs the isolation itself.
const unavailable = await new LocalSandbox().available().then(() => null, (e: Error) => e);

it.runIf(unavailable)('without namespaces the local sandbox refuses, naming what is missing', () => {
  expect(unavailable).toBeInstanceOf(SandboxUnavailableError);
  expect(unavailable!.message).toMatch(/^the local sandbox needs /);
});

const sandbox = new LocalSandbox({ cpuSeconds: 2, memoryBytes: 256 * 1024 * 1024, maxProcesses: 32, maxOutputBytes: 64 * 1024, scratchBytes: 8 * 1024 * 1024, maxFileBytes: 4 * 1024 * 1024 });
const run = (code: string, timeout = 5, files: Record<string, string> = {}) => sandbox.run(code, files, timeout);

/** Processes of this file's runs (sandboxed code or the namespace setup); other files' runs on the host are theirs. */
const sandboxProcesses = () => ownSandboxProcesses().map((p) => `${p.pid}: ${p.cmdline}`);

// This process's staging folders (named with its pid): other files' runs stage beside them.
const stagingDirs = () => readdirSync(stagingRoot()).filter((d) => d.startsWith(`cookbook-sandbox-${process.pid}-`));
let stagedBefore: string[];
let hostDir: string;
let listener: Server;
let listenerPort: number;
let connections = 0;

beforeAll(async () => {
  if (unavailable) return;
  stagedBefore = stagingDirs();
  hostDir = mkdtempSync(join(tmpdir(), 'sandbox-host-'));
  writeFileSync(join(hostDir, 'secret.txt'), 'host secret');
  process.env.COOKBOOK_SANDBOX_TEST_SECRET = 'env secret';
  listener = createServer((s) => {
    connections++;
    s.end();
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  listenerPort = (listener.address() as { port: number }).port;
});

afterAll(async () => {
  delete process.env.COOKBOOK_SANDBOX_TEST_SECRET;
  if (hostDir) rmSync(hostDir, { recursive: true, force: true });
  await new Promise<void>((r) => (listener ? listener.close(() => r()) : r()));
});

afterEach(() => {
  if (unavailable) return;
  // After every run: nothing of it still runs, and its staging folder is gone.
  expect(sandboxProcesses()).toEqual([]);
  expect(stagingDirs()).toEqual(stagedBefore);
});

const result = (r: [boolean, RunCodeResponse]) => r[1].run_result!;

describe.skipIf(unavailable)('local sandbox: ordinary code', () => {
  it('runs Python with its files in its working directory and answers in SandboxFusion shape', async () => {
    const [ok, response] = await run('import os\nprint(open("data/in.txt").read().upper(), os.getcwd())', 5, { 'data/in.txt': 'hello' });
    expect(ok).toBe(true);
    expect(response).toMatchObject({ status: 'Success', message: '', compile_result: null, run_result: { status: 'Finished', return_code: 0, stdout: 'HELLO /sandbox\n', stderr: '' }, files: {} });
  });

  it('a failing program is Failed with its exit code and stderr', async () => {
    const [ok, response] = await run('raise SystemExit(3)');
    expect(ok).toBe(false);
    expect(response).toMatchObject({ status: 'Failed', run_result: { status: 'Finished', return_code: 3 } });
  });
});

describe.skipIf(unavailable)('local sandbox: hostile programs', () => {
  it('a fork bomb is bounded by the process limit and the wall time, and every process dies with the run', async () => {
    const r = await run('import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass', 3);
    expect(r[0]).toBe(false);
    // With a cgroup per run the first refused fork ends the run; per process, the wall time or CPU limit does.
    if ((await sandbox.available()).kind === 'cgroup') expect(r[1].message).toBe('process limit exceeded (32 processes)');
    else expect(r[1].message).toMatch(/wall time limit exceeded \(3 s\)|CPU time limit exceeded/);
  });

  it('an infinite loop is stopped at the wall time; a CPU-bound one by the CPU limit', async () => {
    const wall = await run('import time\nwhile True: time.sleep(1)', 1);
    expect(wall[1]).toMatchObject({ status: 'Failed', message: 'wall time limit exceeded (1 s)', run_result: { status: 'TimeLimitExceeded' } });
    // A wall time far beyond the CPU limit, so only the CPU limit can end it on a busy machine.
    const cpu = await new LocalSandbox({ cpuSeconds: 1 }).run('while True: pass', {}, 60);
    expect(cpu[1]).toMatchObject({ status: 'Failed', message: 'CPU time limit exceeded (1 s)', run_result: { status: 'Finished', return_code: null } });
  });

  it('memory exhaustion fails inside the program (MemoryError), not on the host', async () => {
    const r = await run('x = []\nwhile True: x.append(bytearray(50 * 1024 * 1024))');
    expect(r[1].status).toBe('Failed');
    expect(result(r).stderr).toContain('MemoryError');
  });

  it('writing outside its directory fails; a huge file is cut by the size limits; nothing reaches the host', async () => {
    const target = join(hostDir, 'escaped.txt');
    const code = [
      'import os',
      'def attempt(path):',
      '    try:',
      '        open(path, "w").write("pwned")',
      '        return "wrote"',
      '    except OSError as e:',
      '        return type(e).__name__ + ":" + str(e.errno)',
      `for p in ["/usr/pwned", "/pwned", "/root/pwned", "/etc/pwned", ${JSON.stringify(target)}]:`,
      '    print(p, attempt(p))',
      'try:',
      '    open("big", "wb").write(b"x" * (32 * 1024 * 1024))',
      '    print("big wrote")',
      'except OSError as e:',
      '    print("big", e.errno)',
    ].join('\n');
    const r = await run(code);
    const lines = result(r).stdout.trim().split('\n');
    expect(lines.slice(0, 5).every((l) => !l.endsWith('wrote')), lines.join('\n')).toBe(true);
    expect(lines[5]).not.toBe('big wrote');
    expect(existsSync(target)).toBe(false);
    expect(existsSync('/usr/pwned')).toBe(false);
    expect(existsSync('/pwned')).toBe(false);
  });

  it('host secrets are out of sight: files, home folders, /etc/shadow, the environment', async () => {
    const code = [
      'import os',
      `for p in ["/etc/shadow", "/etc/passwd", "/root/.ssh", "/home", ${JSON.stringify(join(hostDir, 'secret.txt'))}]:`,
      '    print(p, os.path.exists(p))',
      'print("env", os.environ.get("COOKBOOK_SANDBOX_TEST_SECRET"))',
      'print("root", sorted(os.listdir("/")))',
      'print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))',
    ].join('\n');
    const r = await run(code);
    const out = result(r).stdout;
    expect(out).toContain('/etc/shadow False');
    expect(out).toContain('/etc/passwd False');
    expect(out).toContain('/root/.ssh False');
    expect(out).toContain('/home False');
    expect(out).toContain('secret.txt False');
    expect(out).toContain('env None');
    expect(out).toContain("root ['bin', 'dev', 'lib', 'lib64', 'proc', 'sandbox', 'sbin', 'tmp', 'usr']".replace("'lib', 'lib64', ", existsSync('/lib64') ? "'lib', 'lib64', " : "'lib', "));
    // Its own pid namespace: the namespace's shell (1), the wall-time backstop and itself, no host process.
    expect(out).toMatch(/^pids \[1, \d+, \d+\]$/m);
  });

  it('no network: neither the internet nor a server on the host loopback', async () => {
    const code = [
      'import socket',
      `for host, port in [("127.0.0.1", ${listenerPort}), ("1.1.1.1", 80)]:`,
      '    s = socket.socket(); s.settimeout(2)',
      '    try:',
      '        s.connect((host, port)); print(host, "connected")',
      '    except OSError as e:',
      '        print(host, "refused", e.errno)',
    ].join('\n');
    const r = await run(code);
    expect(result(r).stdout).not.toContain('connected');
    expect(result(r).stdout.trim().split('\n')).toHaveLength(2);
    expect(connections).toBe(0);
  });

  it('a huge stdout is cut at the output limit and the run stopped', async () => {
    const r = await run('while True: print("x" * 4096)', 10);
    expect(r[1]).toMatchObject({ status: 'Failed', message: 'output size limit exceeded', run_result: { status: 'Error' } });
    expect(result(r).stdout.length).toBe(64 * 1024);
  });
});

describe.skipIf(unavailable)('local sandbox: a caller that dies', () => {
  it('the namespace ends itself shortly after the wall time even when nobody kills it', async () => {
    // What LocalSandbox stages, by hand, then started and left alone as if the worker had died.
    const dir = mkdtempSync(join(stagingRoot(), 'cookbook-sandbox-'));
    try {
      mkdirSync(join(dir, 'files'));
      mkdirSync(join(dir, 'root'));
      writeFileSync(join(dir, 'files', 'main.py'), 'import time\nwhile True: time.sleep(1)');
      if (process.getuid?.() === 0) for (const p of [dir, join(dir, 'files'), join(dir, 'root'), join(dir, 'files', 'main.py')]) chownSync(p, 65534, 65534);
      const py = pythonInterpreter();
      const [cmd, ...args] = isolatedArgv(dir, [py.path, '-E', '-s', 'main.py'], sandbox.limits, py.extraReadOnly, 1);
      const child = spawn(cmd, args, {
        stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      });
      let status = '';
      child.stdio[3]!.on('data', (c: Buffer) => (status += c.toString()));
      await new Promise((r) => child.on('close', r));
      expect(status.trim()).toBe('137'); // SIGKILL from the backstop, 1 s + 2 s after the start
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
