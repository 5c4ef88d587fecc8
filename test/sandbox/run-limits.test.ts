// A run's limits hold for the run as a whole: its processes share one cgroup, so children together
// cannot pass the memory, process or CPU limit that each alone stays under; where no cgroup can be
// made the limits are split over a few processes instead. Requests out of range are refused by
// name, and runs past the sandbox's concurrency wait in its queue instead of starting.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { repoRoot } from '../../src/cli/services.js';
import { cgroupLayout, probeCgroups } from '../../src/cookbook/sandbox/cgroup.js';
import { FALLBACK_PROCESS_BYTES, LocalSandbox, perProcessShare } from '../../src/cookbook/sandbox/local.js';
import { RunQueue } from '../../src/cookbook/sandbox/run-queue.js';
import { startSandboxServer } from '../../src/cookbook/sandbox/server.js';
import { SandboxBusyError, SandboxRequestError, type RunCodeResponse } from '../../src/cookbook/sandbox/types.js';
import { ownSandboxProcesses } from '../support/sandbox-runs.js';

const MiB = 1024 * 1024;
const unavailable = await new LocalSandbox().available().then(() => false, () => true);
const withCgroups = !unavailable && (await new LocalSandbox().available()).kind === 'cgroup';

afterEach(() => {
  // Whatever a run started is gone with it.
  if (!unavailable) expect(ownSandboxProcesses()).toEqual([]);
});

/** Eight children that each touch 700 MiB (bytes filled, so resident) and hold it; prints what each managed. */
const EIGHT_BIG_CHILDREN = `import os, sys, time
forked = 0
for i in range(8):
    try:
        pid = os.fork()
    except OSError as e:
        print("fork refused", e.errno, flush=True)
        break
    if pid == 0:
        try:
            block = b"x" * (700 << 20)
            print("child holds 700 MiB", flush=True)
            time.sleep(5)
        except MemoryError:
            print("child MemoryError", flush=True)
        os._exit(0)
    forked += 1
for _ in range(forked):
    os.wait()
print("forked", forked)
`;

function memAvailable(): number {
  return Number(readFileSync('/proc/meminfo', 'utf8').match(/^MemAvailable:\s+(\d+) kB$/m)![1]) * 1024;
}

describe.runIf(withCgroups)('a cgroup per run', () => {
  it('eight children of 700 MiB under a 1 GiB limit: the run is stopped with the memory message, and never held more than 1 GiB', async () => {
    const sandbox = new LocalSandbox({ memoryBytes: 1024 * MiB, cpuSeconds: 60 });
    const before = memAvailable();
    let lowest = before;
    const sampler = setInterval(() => (lowest = Math.min(lowest, memAvailable())), 10);
    const { response, usage } = await sandbox.runMeasured({ code: EIGHT_BIG_CHILDREN, language: 'python', run_timeout: 60 }).finally(() => clearInterval(sampler));
    expect(response).toMatchObject({ status: 'Failed', message: 'memory limit exceeded (1024 MiB)', run_result: { status: 'Finished' } });
    expect(usage!.oomKills).toBeGreaterThan(0);
    // The kernel's own count of what the run held at its most: 5.6 GiB without the cgroup.
    expect(usage!.memoryPeakBytes).toBeLessThanOrEqual(1024 * MiB);
    // The host's side. Another test file may take memory meanwhile (an engine starting: ~0.5 GiB),
    // hence the margin; the unconfined run alone would take 5.6 GiB.
    expect(before - lowest, `host MemAvailable dropped by ${((before - lowest) / MiB).toFixed(0)} MiB`).toBeLessThan(2048 * MiB);
  });

  it('forks past the process limit: the first one refused stops the run, which never had more', async () => {
    const sandbox = new LocalSandbox({ maxProcesses: 16 });
    const code = 'import os, time\nfor _ in range(100):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\ntime.sleep(60)\n';
    const { response, usage } = await sandbox.runMeasured({ code, language: 'python', run_timeout: 60 });
    expect(response).toMatchObject({ status: 'Failed', message: 'process limit exceeded (16 processes)' });
    expect(usage!.forksRefused).toBeGreaterThan(0);
    // The code's 16 and the namespace's own three (unshare, its shell, the wall-time backstop).
    if (usage!.tasksPeak !== null) expect(usage!.tasksPeak).toBeLessThanOrEqual(16 + 3);
  });

  it("eight busy children share the run's CPU seconds: stopped at 2 s in all, not 2 s each", async () => {
    const sandbox = new LocalSandbox({ cpuSeconds: 2, cpus: 2 });
    const code = 'import os\nfor _ in range(7):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n';
    const { response, usage } = await sandbox.runMeasured({ code, language: 'python', run_timeout: 60 });
    expect(response).toMatchObject({ status: 'Failed', message: 'CPU time limit exceeded (2 s)', run_result: { status: 'Finished', return_code: null } });
    // Per process, eight children could have spent 16 s; the watch reads the group every 50 ms.
    expect(usage!.cpuSeconds).toBeGreaterThanOrEqual(2);
    expect(usage!.cpuSeconds).toBeLessThan(4);
  });

  it('eight busy children on a one-core run keep one core busy, not all of them', async () => {
    const sandbox = new LocalSandbox({ cpuSeconds: 60, cpus: 1 });
    const code = 'import os\nfor _ in range(7):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n';
    const { response, usage } = await sandbox.runMeasured({ code, language: 'python', run_timeout: 3 });
    expect(response).toMatchObject({ status: 'Failed', message: 'wall time limit exceeded (3 s)' });
    const wall = response.run_result!.execution_time!;
    // The CFS quota is one core per 100 ms period, so over 3 s at most one period's slack.
    expect(usage!.cpuSeconds).toBeLessThanOrEqual(wall * 1.05 + 0.1);
  });
});

describe.skipIf(unavailable)('without a cgroup: the limits split over the processes', () => {
  it('says so once, and the eight children get a quarter of the memory each at most, four processes in all', async () => {
    const lines: string[] = [];
    const sandbox = new LocalSandbox({ cgroups: 'off', memoryBytes: 1024 * MiB, cpuSeconds: 10, log: (l) => lines.push(l) });
    const [, first] = await sandbox.run(EIGHT_BIG_CHILDREN, {}, 30);
    const [, second] = await sandbox.run('print("again")', {}, 5);
    expect(lines).toEqual([
      'local sandbox: no cgroup per run (cgroups are switched off (cgroups: off or COOKBOOK_SANDBOX_CGROUPS=off)); ' +
        "each run's limits are split over its processes instead: at most 4 processes, each with 256 MiB of address space and 2 CPU s",
    ]);
    const out = (first as RunCodeResponse).run_result!.stdout;
    // The code and three children (four processes): the fourth fork is refused, and no child gets its 700 MiB.
    expect(out).toContain('fork refused 11');
    expect(out).toContain('forked 3');
    expect(out.match(/child MemoryError/g)).toHaveLength(3);
    expect(out).not.toContain('child holds');
    expect((second as RunCodeResponse).run_result!.stdout).toBe('again\n');
  });

  // As root this host makes cgroups; as nobody the kernel refuses them (EACCES), as it would an unprivileged worker.
  it.runIf(process.getuid?.() === 0)('a worker the kernel refuses cgroups to says why and falls back to the split', async (ctx) => {
    const child = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '--import', 'tsx', 'test/support/sandbox-unprivileged-main.ts', EIGHT_BIG_CHILDREN], {
      cwd: repoRoot,
      // A temp folder nobody may write to (tsx's cache, the sandbox's staging folders).
      env: { PATH: process.env.PATH, HOME: '/tmp', TMPDIR: '/tmp' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code, err).toBe(0);
    const { lines, response } = JSON.parse(out) as { lines: string[]; response: RunCodeResponse };
    // A host that gives root namespaces but not other users has no unprivileged sandbox to test here.
    if (response.status === 'SandboxError' && /needs unprivileged user namespaces/.test(response.message)) ctx.skip();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^local sandbox: no cgroup per run \(a cgroup could not be created under \/sys\/fs\/cgroup\/\S+ \(EACCES: permission denied, mkdir /);
    expect(lines[0]).toMatch(/each run's limits are split over its processes instead: at most 4 processes, each with 256 MiB of address space and 2 CPU s$/);
    const stdout = response.run_result!.stdout;
    expect(stdout).toContain('forked 3');
    expect(stdout.match(/child MemoryError/g)).toHaveLength(3);
  });

  it('the split: memory ÷ 256 MiB processes (one at least, the process limit at most), each an equal share of memory and CPU seconds', () => {
    const limits = { cpuSeconds: 10, memoryBytes: 1024 * MiB, maxProcesses: 64, maxFileBytes: 1, maxOpenFiles: 1, scratchBytes: 1 };
    expect(perProcessShare(limits)).toMatchObject({ maxProcesses: 4, memoryBytes: 256 * MiB, cpuSeconds: 2 });
    expect(perProcessShare({ ...limits, memoryBytes: 100 * MiB })).toMatchObject({ maxProcesses: 1, memoryBytes: 100 * MiB, cpuSeconds: 10 });
    expect(perProcessShare({ ...limits, maxProcesses: 2 })).toMatchObject({ maxProcesses: 2, memoryBytes: 512 * MiB, cpuSeconds: 5 });
    expect(perProcessShare({ ...limits, cpuSeconds: 1, memoryBytes: 64 * FALLBACK_PROCESS_BYTES })).toMatchObject({ maxProcesses: 64, cpuSeconds: 1 });
  });
});

describe('finding the cgroup controllers', () => {
  const v1 = [
    '31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
    '33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct',
    '35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    '39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
    '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
  ].join('\n');
  const v1Self = '8:pids:/\n4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n';

  it("v1 hierarchies: the caller's group in each", () => {
    expect(cgroupLayout(v1, v1Self)).toEqual({
      version: 1,
      dirs: { memory: '/sys/fs/cgroup/memory/process_api/abc', pids: '/sys/fs/cgroup/pids', cpu: '/sys/fs/cgroup/cpu', cpuacct: '/sys/fs/cgroup/cpuacct' },
    });
    // cpu and cpuacct mounted together, the mount's root inside the hierarchy (a container's view).
    const together = '32 31 0:29 /docker/x /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n35 31 0:32 /docker/x /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n39 31 0:36 /docker/x /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids';
    expect(cgroupLayout(together, '8:pids:/docker/x\n4:memory:/docker/x/sub\n2:cpu,cpuacct:/docker/x\n')).toEqual({
      version: 1,
      dirs: { memory: '/sys/fs/cgroup/memory/sub', pids: '/sys/fs/cgroup/pids', cpu: '/sys/fs/cgroup/cpu,cpuacct', cpuacct: '/sys/fs/cgroup/cpu,cpuacct' },
    });
  });

  it('v2 only when v1 lacks a controller, and a reason when neither has them all', () => {
    const v2 = '30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate';
    // This host's /sys/fs/cgroup/cgroup.controllers decides: a reason names what is missing, or the layout is v2.
    const layout = cgroupLayout(v2, '0::/user.slice/session-1.scope\n');
    if ('reason' in layout) expect(layout.reason).toMatch(/^the cgroup2 tree at \/sys\/fs\/cgroup lacks the /);
    else expect(layout).toEqual({ version: 2, dirs: Object.fromEntries(['memory', 'pids', 'cpu', 'cpuacct'].map((c) => [c, '/sys/fs/cgroup/user.slice/session-1.scope'])) });
    expect(cgroupLayout('', '')).toEqual({ reason: 'no cgroup hierarchy has the memory, pids and cpu controllers' });
  });

  it('a layout whose folders are no cgroup filesystem is refused with the reason, and nothing is left there', () => {
    const fake = mkdtempSync(join(tmpdir(), 'not-cgroup-'));
    try {
      const mountinfo = ['memory', 'pids', 'cpu', 'cpuacct'].map((c, i) => `${40 + i} 31 0:${40 + i} / ${fake} rw - cgroup cgroup rw,${c}`).join('\n');
      const probed = probeCgroups(mountinfo, '8:pids:/\n4:memory:/\n2:cpuacct:/\n1:cpu:/\n');
      expect(probed).toEqual({ reason: `a cgroup could not be created under ${fake} (${join(fake, 'cookbook-sandbox', `probe-${process.pid}`)} is not in a cgroup filesystem)` });
    } finally {
      rmSync(fake, { recursive: true, force: true });
    }
  });
});

describe.skipIf(unavailable)('requests checked, runs queued', () => {
  it('bad run_timeout, compile_timeout and memory_limit_MB values get 422 naming the field; -1 memory is the sandbox limit', async () => {
    const server = await startSandboxServer({ sandbox: new LocalSandbox({ maxTimeoutSeconds: 60 }) });
    try {
      const post = async (body: object) => {
        const res = await fetch(server.url, { method: 'POST', body: JSON.stringify({ code: 'print(1)', language: 'python', ...body }) });
        return { status: res.status, body: (await res.json()) as { detail?: string } & Partial<RunCodeResponse> };
      };
      const refused: [object, RegExp][] = [
        [{ run_timeout: -5 }, /^run_timeout must be a positive number of seconds \(got -5\)$/],
        [{ run_timeout: 0 }, /^run_timeout must be a positive/],
        [{ run_timeout: 1e12 }, /^run_timeout 1000000000000 is over this sandbox's maximum of 60 seconds$/],
        [{ run_timeout: '10' }, /^run_timeout must be a positive number of seconds \(got "10"\)$/],
        [{ compile_timeout: -1 }, /^compile_timeout must be a positive/],
        [{ memory_limit_MB: 0 }, /^memory_limit_MB must be a whole number of MiB ≥ 1, or -1/],
        [{ memory_limit_MB: 1.5 }, /^memory_limit_MB must be a whole number/],
        [{ memory_limit_MB: 99999 }, /^memory_limit_MB 99999 is over this sandbox's per-run limit of 1024 MiB$/],
        [{ stdin: 5 }, /^stdin must be a string$/],
      ];
      for (const [body, detail] of refused) {
        const r = await post(body);
        expect(r.status, JSON.stringify(body)).toBe(422);
        expect(r.body.detail).toMatch(detail);
      }
      expect(await post({ memory_limit_MB: -1, run_timeout: 2.5 })).toMatchObject({ status: 200, body: { status: 'Success', run_result: { stdout: '1\n' } } });
      // In process the same checks throw (and run() answers them as a failed run).
      await expect(new LocalSandbox().runCode({ code: '', language: 'python', run_timeout: -5 })).rejects.toThrow(SandboxRequestError);
      const [ok, r] = await new LocalSandbox().run('print(1)', {}, -5);
      expect([ok, (r as { error?: string }).error]).toEqual([false, 'run_timeout must be a positive number of seconds (got -5)']);
    } finally {
      await server.close();
    }
  });

  it('100 requests at once are queued, at most maxConcurrentRuns running, and each answered', async () => {
    const sandbox = new LocalSandbox({ maxConcurrentRuns: 4 });
    const server = await startSandboxServer({ sandbox });
    let mostRuns = 0;
    const sampler = setInterval(() => {
      mostRuns = Math.max(mostRuns, new Set(ownSandboxProcesses().map((p) => p.runId)).size);
    }, 20);
    try {
      const answers = await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const res = await fetch(server.url, { method: 'POST', body: JSON.stringify({ code: `import time; time.sleep(0.05); print(${i})`, language: 'python' }) });
          return { depth: Number(res.headers.get('x-sandbox-queue-depth')), body: (await res.json()) as RunCodeResponse };
        }),
      );
      expect(answers.map((a) => a.body.run_result?.stdout)).toEqual(Array.from({ length: 100 }, (_, i) => `${i}\n`));
      const stats = (await (await fetch(server.url.replace('/run_code', '/stats'))).json()) as ReturnType<LocalSandbox['queueStats']>;
      expect(stats).toMatchObject({ running: 0, queued: 0, maxConcurrentRuns: 4, peakRunning: 4 });
      expect(stats.peakQueued).toBeGreaterThan(0);
      expect(Math.max(...answers.map((a) => a.depth))).toBe(stats.peakQueued);
      expect(mostRuns).toBeLessThanOrEqual(4);
    } finally {
      clearInterval(sampler);
      await server.close();
    }
  });

  it('past the queue\'s depth a request is refused as busy (503 with Retry-After over HTTP), never run', async () => {
    const sandbox = new LocalSandbox({ maxConcurrentRuns: 1, maxQueuedRuns: 1 });
    await sandbox.available();
    // Three at once: the first runs, the second waits, the third finds the queue full.
    const [first, second, third] = await Promise.all([0, 1, 2].map((i) => sandbox.runCode({ code: `print(${i})`, language: 'python' }).catch((e: Error) => e)));
    expect((first as RunCodeResponse).run_result!.stdout).toBe('0\n');
    expect((second as RunCodeResponse).run_result!.stdout).toBe('1\n');
    expect(third).toBeInstanceOf(SandboxBusyError);
    expect((third as Error).message).toBe('the sandbox is busy: 1 runs running and 1 waiting (its most); try again later');

    // Over HTTP: a run that holds its slot until the test lets it go (SIGUSR1, once the run catches it).
    const held = new LocalSandbox({ maxConcurrentRuns: 1, maxQueuedRuns: 0 });
    const server = await startSandboxServer({ sandbox: held });
    try {
      const code = 'import signal, time\nreleased = []\nsignal.signal(signal.SIGUSR1, lambda *_: released.append(1))\nwhile not released:\n    time.sleep(0.02)\nprint("released")';
      let ended = false;
      const holding = held.runCode({ code, language: 'python', run_timeout: 120 }).finally(() => (ended = true));
      const SIGUSR1_BIT = 1n << 9n;
      const catching = () =>
        // The interpreter itself (`python3 -E -s main.py`), not the wrappers that start it, with its handler in place.
        ownSandboxProcesses().find((p) => p.cmdline.split(' ')[1] === '-E' && (BigInt(`0x${readFileSync(`/proc/${p.pid}/status`, 'utf8').match(/^SigCgt:\s+([0-9a-f]+)$/m)![1]}`) & SIGUSR1_BIT) !== 0n);
      let python: { pid: number } | undefined;
      while (!(python = catching()) && !ended) await new Promise((r) => setTimeout(r, 20));
      expect(python, 'the held run ended before it caught SIGUSR1').toBeDefined();
      const res = await fetch(server.url, { method: 'POST', body: JSON.stringify({ code: 'print(1)', language: 'python' }) });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(((await res.json()) as { detail: string }).detail).toMatch(/^the sandbox is busy: 1 runs running and 0 waiting/);
      process.kill(python!.pid, 'SIGUSR1');
      expect((await holding).run_result!.stdout).toBe('released\n');
    } finally {
      await server.close();
    }
  });

  it('the queue hands a freed slot to the longest waiting', async () => {
    const queue = new RunQueue(1, 10);
    const order: number[] = [];
    let release!: () => void;
    const first = queue.run(() => new Promise<void>((r) => (release = r)).then(() => order.push(0)));
    const rest = [1, 2, 3].map((i) => queue.run(async () => order.push(i)));
    expect(queue.stats()).toMatchObject({ running: 1, queued: 3 });
    release();
    await Promise.all([first, ...rest]);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(queue.stats()).toMatchObject({ running: 0, queued: 0, peakRunning: 1, peakQueued: 3 });
    expect(() => new RunQueue(0, 1)).toThrow('maxConcurrentRuns must be a whole number ≥ 1 (got 0)');
  });
});
