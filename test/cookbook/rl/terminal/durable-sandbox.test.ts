// The durable episode sandbox on the real local sandbox and a real run store: every operation is
// recorded with the files it left; an episode replayed from the records runs nothing; one cut off
// mid-way (a worker killed before an operation's record was written) resumes from the files the
// last recorded operation left — not from what the killed attempt did after it — and runs only
// what has no record.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runStoreOnce, type Once } from '../../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../../src/cookbook/run-store.js';
import { episodeSandboxAvailable, LocalEpisodeSandbox } from '../../../../src/cookbook/sandbox/episode.js';
import { SandboxTerminatedError } from '../../../../src/cookbook/sandbox/types.js';
import { DurableSandbox } from '../../../../src/cookbook/rl/envs/terminal/durable-sandbox.js';

const unavailable = await episodeSandboxAvailable().then(() => null, (e: Error) => e.message);
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function image(): Promise<Buffer> {
  const sb = await LocalEpisodeSandbox.create();
  await sb.runCommand('mkdir -p /app && echo start > /app/log');
  const snap = await sb.snapshot({ zeroTimes: true });
  await sb.cleanup();
  return snap;
}

function durable(once: Once, files: Buffer, lifetimeSeconds = 600): DurableSandbox {
  return new DurableSandbox({ once, episode: 0, image: files, open: (f) => LocalEpisodeSandbox.create({ from: f }), lifetimeSeconds });
}

/** An episode: three appends (each depends on the files before it), a read. */
async function episode(sb: DurableSandbox, stopAfter = Infinity): Promise<string[]> {
  const out: string[] = [];
  for (const [i, cmd] of ['echo one >> /app/log', 'echo two >> /app/log', 'echo three >> /app/log'].entries()) {
    if (i >= stopAfter) return out;
    out.push((await sb.runCommand(cmd)).stdout);
  }
  out.push((await sb.readFile('/app/log')).stdout);
  return out;
}

describe.skipIf(unavailable)('the durable episode sandbox', { timeout: 60_000 }, () => {
  it('replays a recorded episode without running anything, and resumes a cut one from its last record', async () => {
    const files = await image();
    const logPath = mkdtempSync(join(tmpdir(), 'durable-sandbox-'));
    dirs.push(logPath);
    const once = runStoreOnce(new RunStore(logPath), [0, 0, 0]);

    // The first attempt: op 0 recorded; op 1 runs, and the worker dies before its record is written.
    const killed = new Error('worker killed');
    const dying: Once = (key, request, act) => (key.at(-1) === 'op_1' ? act().then(() => Promise.reject(killed)) : once(key, request, act));
    const first = durable(dying, files);
    await expect(episode(first)).rejects.toBe(killed);
    expect(first.executed).toBe(2);
    await first.cleanup();

    // The retry: op 0 replayed, op 1 run on the files op 0 left (one line added, not two), the rest run.
    const retry = durable(once, files);
    const out = await episode(retry);
    expect(out.at(-1)).toBe('start\none\ntwo\nthree\n');
    expect(retry.executed).toBe(3); // ops 1, 2 and the read; op 0 came from its record
    await retry.cleanup();

    // A replay of the whole episode runs nothing and answers the same.
    const replay = durable(once, files);
    expect(await episode(replay)).toEqual(out);
    expect(replay.executed).toBe(0);
    await replay.cleanup();
  });

  it('a record made from other files is not used', async () => {
    const files = await image();
    const logPath = mkdtempSync(join(tmpdir(), 'durable-sandbox-'));
    dirs.push(logPath);
    const once = runStoreOnce(new RunStore(logPath), [0, 0, 0]);
    const a = durable(once, files);
    await a.runCommand('echo a >> /app/log');
    await a.runCommand('cat /app/log');
    await a.cleanup();
    // Another path: op 0 differs, so op 1 (the same command) runs again on the new files.
    const b = durable(once, files);
    await b.runCommand('echo b >> /app/log');
    expect((await b.runCommand('cat /app/log')).stdout).toBe('start\nb\n');
    expect(b.executed).toBe(2);
    await b.cleanup();
  });

  it('a record another attempt made from the same files is applied, though a sandbox runs here already', async () => {
    const files = await image();
    const logPath = mkdtempSync(join(tmpdir(), 'durable-sandbox-'));
    dirs.push(logPath);
    const once = runStoreOnce(new RunStore(logPath), [0, 0, 0]);
    // The first attempt: a read, then an append.
    const a = durable(once, files);
    await a.runCommand('cat /app/log');
    await a.runCommand('echo a >> /app/log');
    await a.cleanup();
    // The retry reads something else (it runs: a sandbox opens here), which leaves the files as they
    // were; the append then matches the first attempt's record and is not run — and what follows
    // runs on the files that record left, not on the sandbox opened before it.
    const b = durable(once, files);
    await b.runCommand('ls /app');
    await b.runCommand('echo a >> /app/log');
    expect((await b.runCommand('cat /app/log')).stdout).toBe('start\na\n');
    expect(b.executed).toBe(2);
    await b.cleanup();
  });

  it('ends its life after the command time it was given, the same on replay', async () => {
    const files = await image();
    const logPath = mkdtempSync(join(tmpdir(), 'durable-sandbox-'));
    dirs.push(logPath);
    const once = runStoreOnce(new RunStore(logPath), [0, 0, 0]);
    for (const attempt of [0, 1]) {
      const sb = durable(once, files, 0.5);
      await sb.runCommand('sleep 0.6');
      await expect(sb.runCommand('true'), `attempt ${attempt}`).rejects.toThrow(SandboxTerminatedError);
      expect(sb.executed).toBe(attempt === 0 ? 1 : 0);
      await sb.cleanup();
    }
  });
});
