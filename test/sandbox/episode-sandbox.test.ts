// The stateful episode sandbox (terminal tasks) on this host: files persist from one command to the
// next anywhere in its root, and hostile commands are contained as in the code sandbox — a fork
// bomb, a loop, endless output, filling the disk, reaching the network or the host's files.
import { createServer, type Server } from 'node:net';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearStaleEpisodeRoots, episodeSandboxAvailable, LocalEpisodeSandbox } from '../../src/cookbook/sandbox/episode.js';
import { stagingRoot } from '../../src/cookbook/sandbox/local.js';

const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);
const MiB = 1024 * 1024;

describe.skipIf(unavailable)('the episode sandbox', { timeout: 120_000 }, () => {
  let hostDir: string;
  let listener: Server;
  let listenerPort: number;
  let connections = 0;
  beforeAll(async () => {
    process.env.COOKBOOK_SANDBOX_TEST_SECRET = 'host secret';
    hostDir = mkdtempSync(join(tmpdir(), 'episode-host-'));
    writeFileSync(join(hostDir, 'secret.txt'), 'host secret');
    listener = createServer((s) => (connections++, s.destroy()));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    listenerPort = (listener.address() as { port: number }).port;
  });
  afterAll(() => {
    delete process.env.COOKBOOK_SANDBOX_TEST_SECRET;
    listener?.close();
    rmSync(hostDir, { recursive: true, force: true });
  });

  it('keeps what a command writes anywhere in its root for the next; a snapshot restores it elsewhere', async () => {
    const sb = await LocalEpisodeSandbox.create();
    try {
      await sb.runCommand('mkdir -p /app /etc/myapp && echo one > /app/a && echo conf > /etc/myapp/x && echo t > /tmp/t && cd /app && echo two >> a');
      const r = await sb.runCommand('cat /app/a /etc/myapp/x /tmp/t; pwd; id -u', { workdir: '/app' });
      expect(r).toMatchObject({ stdout: 'one\ntwo\nconf\nt\n/app\n0\n', exitCode: 0 });
      const copy = await LocalEpisodeSandbox.create({ from: await sb.snapshot() });
      expect((await copy.runCommand('cat /app/a')).stdout).toBe('one\ntwo\n');
      await copy.cleanup();
    } finally {
      await sb.cleanup();
    }
  });

  it('a command past its time is killed (exit 124), and a background process does not outlive its command', async () => {
    const sb = await LocalEpisodeSandbox.create();
    try {
      const slow = await sb.runCommand('sleep 30', { timeout: 1 });
      expect(slow.exitCode).toBe(124);
      expect(slow.stderr).toContain('timed out after 1 s');
      await sb.runCommand('(sleep 1; echo late > /late) & echo started');
      await sb.runCommand('sleep 1.5', { timeout: 10 });
      expect((await sb.runCommand('cat /late')).exitCode).not.toBe(0);
    } finally {
      await sb.cleanup();
    }
  });

  it('a fork bomb is bounded and dies with its command; the sandbox goes on', async () => {
    const sb = await LocalEpisodeSandbox.create({ limits: { maxProcesses: 16 } });
    try {
      const bomb = await sb.runCommand(':(){ :|:& };:; sleep 1', { timeout: 3 });
      expect(bomb.exitCode).not.toBe(0);
      const after = await sb.runCommand('ps -e 2>/dev/null | wc -l; echo ok');
      expect(after.stdout).toContain('ok');
    } finally {
      await sb.cleanup();
    }
  });

  it('endless output is kept to the cap asked for, and stopped past the hard limit', async () => {
    const sb = await LocalEpisodeSandbox.create({ limits: { stopOutputAfterBytes: 2 * MiB } });
    try {
      const r = await sb.runCommand('yes', { maxOutputBytes: 100, timeout: 30 });
      expect(r.stdout).toHaveLength(100);
      expect(r.stderr).toContain('stopped past 2 MiB of output');
    } finally {
      await sb.cleanup();
    }
  });

  it('filling the disk ends the sandbox: later commands are refused, judged from its files', async () => {
    const sb = await LocalEpisodeSandbox.create({ limits: { storageBytes: 4 * MiB, maxFileBytes: 2 * MiB } });
    try {
      const big = await sb.runCommand('head -c 3000000 /dev/zero > /big');
      expect(big.exitCode).not.toBe(0); // the file size limit cuts the one file
      const many = await sb.runCommand('for i in 1 2 3; do head -c 2000000 /dev/zero > /f$i; done');
      expect(many.stderr).toContain('passed its storage limit (4 MiB)');
      expect((await sb.runCommand('echo hi')).exitCode).toBe(-1);
      // The same from its files alone: a sandbox opened from its snapshot (a retried rollout's) refuses too.
      const copy = await LocalEpisodeSandbox.create({ from: await sb.snapshot(), limits: { storageBytes: 4 * MiB } });
      expect((await copy.runCommand('echo hi')).exitCode).toBe(-1);
      await copy.cleanup();
    } finally {
      await sb.cleanup();
    }
  });

  it("neither the network, the host's loopback, nor the host's files are in reach", async () => {
    const sb = await LocalEpisodeSandbox.create();
    try {
      const r = await sb.runCommand(
        [
          `python3 -c 'import socket\nfor h, p in [("127.0.0.1", ${listenerPort}), ("1.1.1.1", 80)]:\n    s = socket.socket(); s.settimeout(2)\n    try:\n        s.connect((h, p)); print(h, "connected")\n    except OSError as e:\n        print(h, "refused")'`,
          `ls ${join(hostDir, 'secret.txt')} /etc/shadow /home /root/.ssh 2>&1 | grep -c 'No such file'`,
          'env | grep -c COOKBOOK_SANDBOX_TEST_SECRET',
        ].join('; '),
      );
      expect(r.stdout).not.toContain('connected');
      expect(r.stdout.trim().split('\n')).toEqual(['127.0.0.1 refused', '1.1.1.1 refused', '4', '0']);
      expect(connections).toBe(0);
    } finally {
      await sb.cleanup();
    }
  });

  it("removes its root at cleanup, and a dead process's roots at the next clear", async () => {
    const sb = await LocalEpisodeSandbox.create();
    const name = sb.root.split('/').at(-1)!;
    await sb.cleanup();
    expect(readdirSync(stagingRoot())).not.toContain(name);
    const stale = mkdtempSync(join(stagingRoot(), 'cookbook-episode-999999999-'));
    expect(clearStaleEpisodeRoots()).toBeGreaterThanOrEqual(1);
    expect(readdirSync(stagingRoot())).not.toContain(stale.split('/').at(-1));
  });
});
