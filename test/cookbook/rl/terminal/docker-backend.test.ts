// The Docker backend's choice and formats, without a Docker engine (the gate's part; the engine's
// part is docker-backend.docker.test.ts, opt-in): `sandbox_backend` defaults to auto, which takes
// the local sandbox when no engine answers; `docker` asked for without an engine fails naming the
// setting; a snapshot names its image and opens in no other; the image tag follows the build context.
import { chmodSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TerminalEvalSchema } from '../../../../src/cookbook/eval/suites/terminal.js';
import { terminalEnvOptionsOf } from '../../../../src/cookbook/eval/suites/terminal-run.js';
import { parseEnvArgs } from '../../../../src/cookbook/rl/envs/args.js';
import { localBackend } from '../../../../src/cookbook/rl/envs/terminal/backend.js';
import { chooseBackend, contextHash, terminalBackend } from '../../../../src/cookbook/rl/envs/terminal/docker-backend.js';
import { TerminalArgsSchema, terminalEnvOptions } from '../../../../src/cookbook/rl/envs/terminal/env.js';
import { loadHarborTasks } from '../../../../src/cookbook/rl/envs/terminal/tasks.js';
import { DockerEpisodeSandbox, emptySnapshot, unpackSnapshot } from '../../../../src/cookbook/sandbox/docker-episode.js';
import { SandboxError, SandboxUnavailableError } from '../../../../src/cookbook/sandbox/types.js';
import { TASKS_DIR } from '../../../../scripts/gen-terminal-sft.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('sandbox_backend', () => {
  // No engine answers at this socket, whatever the host runs.
  const saved = process.env.DOCKER_HOST;
  beforeEach(() => {
    process.env.DOCKER_HOST = `unix://${join(tmpdir(), 'h55dock-no-engine', 'docker.sock')}`;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.DOCKER_HOST;
    else process.env.DOCKER_HOST = saved;
  });

  it('defaults to auto; names the config path when it is none of auto, local, docker', () => {
    const base = { tasks: 'data/terminal_tasks', batch_size: 1, group_size: 1 };
    expect(parseEnvArgs(TerminalArgsSchema, base, 'terminal').sandbox_backend).toBe('auto');
    expect(terminalEnvOptions(parseEnvArgs(TerminalArgsSchema, { ...base, sandbox_backend: 'local' }, 'terminal')).backend).toBe(localBackend);
    expect(terminalEnvOptions(parseEnvArgs(TerminalArgsSchema, { ...base, sandbox_backend: 'docker' }, 'terminal')).backend?.name).toBe('docker');
    expect(() => parseEnvArgs(TerminalArgsSchema, { ...base, sandbox_backend: 'modal' }, 'terminal')).toThrow(/^dataset\.args\.sandbox_backend: /);
    // The eval's terminal.sandbox_backend is the same setting.
    expect(TerminalEvalSchema.parse({}).sandbox_backend).toBe('auto');
    expect(terminalEnvOptionsOf(TerminalEvalSchema.parse({ sandbox_backend: 'local' })).backend).toBe(localBackend);
  });

  it('auto takes the local sandbox when no Docker engine answers', async () => {
    expect(await chooseBackend()).toBe(localBackend);
  });

  it('docker without an engine fails, naming the setting', async () => {
    const task = loadHarborTasks(TASKS_DIR)[0];
    const failed = terminalBackend('docker').environment(task, {});
    await expect(failed).rejects.toThrow(SandboxUnavailableError);
    await expect(failed).rejects.toThrow(/sandbox_backend is "docker", but no Docker engine answers/);
  });
});

describe('Docker episode snapshots', () => {
  it('name their image: the starting files of two tasks differ, and a snapshot opens in no other image', async () => {
    const empty = unpackSnapshot(emptySnapshot('durable-cookbook/terminal-task:a'));
    expect(empty).toEqual({ header: { format: 'docker-episode/1', image: 'durable-cookbook/terminal-task:a', deleted: [] }, tar: Buffer.alloc(0) });
    expect(emptySnapshot('durable-cookbook/terminal-task:a').equals(emptySnapshot('durable-cookbook/terminal-task:b'))).toBe(false);
    await expect(DockerEpisodeSandbox.create({ image: 'durable-cookbook/terminal-task:b', from: emptySnapshot('durable-cookbook/terminal-task:a') })).rejects.toThrow(
      /a snapshot of image durable-cookbook\/terminal-task:a cannot open in image durable-cookbook\/terminal-task:b/,
    );
  });

  it('are told from the local sandbox\'s (a gzipped tar)', () => {
    expect(() => unpackSnapshot(gzipSync(Buffer.alloc(10240)))).toThrow(SandboxError);
    expect(() => unpackSnapshot(gzipSync(Buffer.from('app/\0\0\n{not json\n')))).toThrow(SandboxError);
  });
});

describe('the task image tag', () => {
  it('follows every file of the build context, its mode included', () => {
    const task = loadHarborTasks(TASKS_DIR).find((t) => t.taskName === 'fix-permissions')!;
    const dir = mkdtempSync(join(tmpdir(), 'h55dock-context-'));
    dirs.push(dir);
    cpSync(join(task.taskDir, 'environment'), dir, { recursive: true });
    const first = contextHash(dir);
    expect(contextHash(dir)).toBe(first);
    expect(first).toBe(contextHash(join(task.taskDir, 'environment')));
    writeFileSync(join(dir, 'extra.txt'), 'x');
    const added = contextHash(dir);
    expect(added).not.toBe(first);
    chmodSync(join(dir, 'extra.txt'), 0o755);
    expect(contextHash(dir)).not.toBe(added);
  });
});
