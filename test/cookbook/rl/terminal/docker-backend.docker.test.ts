// The Docker backend for real (opt-in: `npm run test:docker-terminal`, which needs a Docker engine;
// vitest.config.ts leaves `*.docker.test.ts` out of every tier otherwise). The base images the
// shipped tasks name are pulled, or built here as local stand-ins when Docker Hub cannot be reached
// (scripts/compose/standins.mjs, as `npm run docker:base-images` does). Then: every shipped task in
// its own container (reward 0 as shipped; 1 after its solution's commands, graded in a container
// opened from the solved one's snapshot), the durable layer recording, replaying and resuming an
// episode of containers, and hostile commands held to their limits.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SampleResponse, SamplingSession } from '../../../../src/backends/types.js';
import { TerminalEvalSchema } from '../../../../src/cookbook/eval/suites/terminal.js';
import { evaluateTerminalTask, type TerminalEpisodeSetup } from '../../../../src/cookbook/eval/suites/terminal-run.js';
import { rendererForModel } from '../../../../src/cookbook/renderers/for-model.js';
import { toolDeclaring } from '../../../../src/cookbook/tool-use/index.js';
import { autoBackend, dockerBackend, taskDockerImage } from '../../../../src/cookbook/rl/envs/terminal/docker-backend.js';
import { DurableSandbox } from '../../../../src/cookbook/rl/envs/terminal/durable-sandbox.js';
import { loadHarborTasks } from '../../../../src/cookbook/rl/envs/terminal/tasks.js';
import { harborReward } from '../../../../src/cookbook/rl/envs/terminal/tools.js';
import { runStoreOnce, type Once } from '../../../../src/cookbook/rl/side-effects.js';
import { RunStore } from '../../../../src/cookbook/run-store.js';
import { DockerEpisodeSandbox, EPISODE_LABEL, clearStaleEpisodeContainers, docker, dockerEngine, unpackSnapshot } from '../../../../src/cookbook/sandbox/docker-episode.js';
import { SandboxTerminatedError } from '../../../../src/cookbook/sandbox/types.js';
import { TASKS_DIR, solutionCommands } from '../../../../scripts/gen-terminal-sft.js';

interface Standins {
  baseImagesOf(files: Array<{ path: string; kind: 'dockerfile' }>): string[];
  ensureBaseImages(
    docker: (args: string[], opts?: object) => Promise<{ code: number; stdout: string }>,
    names: string[],
    opts: { cacheDir: string; log: (msg: string) => void; pull: boolean; temporalCli: () => Promise<string> },
  ): Promise<string[]>;
}

const MiB = 1024 * 1024;
const tasks = loadHarborTasks(TASKS_DIR);
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Episode containers this process has running. */
async function ours(): Promise<string[]> {
  const r = await docker(['ps', '-q', '--filter', `label=${EPISODE_LABEL}=${hostname()}/${process.pid}`]);
  return r.stdout.toString().split('\n').filter(Boolean);
}

beforeAll(async () => {
  const engine = await dockerEngine();
  if ('unavailable' in engine) throw new Error(`this test needs a Docker engine (start one, or point DOCKER_HOST at it): ${engine.unavailable}`);
  // Untyped tooling modules, imported by a name TypeScript does not resolve.
  const [standinsModule, procModule] = ['../../../../scripts/compose/standins.mjs', '../../../../scripts/compose/proc.mjs'];
  const standins = (await import(standinsModule)) as Standins;
  const { run } = (await import(procModule)) as { run: (cmd: string, args: string[], opts?: object) => Promise<{ code: number; stdout: string }> };
  const names = standins.baseImagesOf(tasks.map((t) => ({ path: join(t.taskDir, 'environment', 'Dockerfile'), kind: 'dockerfile' })));
  const cacheDir = join(process.env.DURABLE_COOKBOOK_CACHE ?? join(process.env.HOME ?? tmpdir(), '.cache', 'durable-cookbook'), 'compose');
  const report = await standins.ensureBaseImages((args, opts) => run('docker', args, opts), names, {
    cacheDir,
    log: (msg) => console.error(`[base images] ${msg}`),
    pull: true,
    temporalCli: () => Promise.reject(new Error('no Temporal image is needed here')),
  });
  console.error(`[base images]\n${report.join('\n')}`);
}, 1_200_000);

describe('the Docker backend', { timeout: 600_000 }, () => {
  it('is what sandbox_backend auto takes when an engine answers', async () => {
    expect((await autoBackend()).name).toBe('docker');
  });

  it.each(tasks.map((t) => [t.taskName, t] as const))('%s: the tests fail as shipped and pass after its solution, graded in a container opened from its snapshot', async (_name, task) => {
    const env = await dockerBackend.environment(task, {});
    const testsDir = join(task.taskDir, 'tests');
    const unsolved = await env.open(env.files);
    try {
      const [reward] = await harborReward({ testsDir, sandbox: unsolved })([]);
      expect(reward, 'reward of the starting files').toBe(0);
    } finally {
      await unsolved.cleanup();
    }
    const solving = await env.open(env.files);
    let snapshot: Buffer;
    try {
      for (const command of solutionCommands(task)) {
        const r = await solving.runCommand(command, { workdir: '/', timeout: 120 });
        expect(r.exitCode, `${command}: ${r.stderr}`).toBe(0);
      }
      snapshot = await solving.snapshot();
    } finally {
      await solving.cleanup();
    }
    const solved = await env.open(snapshot);
    try {
      expect((await solved.snapshot()).equals(snapshot), 'a container opened from a snapshot snapshots to the same bytes').toBe(true);
      const [reward] = await harborReward({ testsDir, sandbox: solved })([]);
      expect(reward, 'reward after the solution').toBe(1);
    } finally {
      await solved.cleanup();
    }
  });

  describe('the durable layer on containers', () => {
    const task = tasks[0];
    async function environment() {
      const logPath = mkdtempSync(join(tmpdir(), 'h55dock-durable-'));
      dirs.push(logPath);
      return { env: await dockerBackend.environment(task, {}), once: runStoreOnce(new RunStore(logPath), [0, 0, 0]) };
    }
    const durable = (once: Once, env: Awaited<ReturnType<typeof environment>>['env'], lifetimeSeconds = 600) =>
      new DurableSandbox({ once, episode: 0, image: env.files, open: env.open, lifetimeSeconds, execLog: null });

    /** Appends (each depends on the files before it), one deleting a folder of the image, then a read. */
    async function episode(sb: DurableSandbox): Promise<string[]> {
      const out: string[] = [];
      for (const cmd of ['echo one >> /app/log', 'rm -rf /usr/share/doc && echo two >> /app/log', 'echo three >> /app/log']) out.push((await sb.runCommand(cmd)).stdout);
      out.push((await sb.runCommand('cat /app/log; test -e /usr/share/doc && echo doc-there || echo doc-gone')).stdout);
      return out;
    }

    it('replays a recorded episode without a container, and resumes a cut one from its last record in a new container', async () => {
      const { env, once } = await environment();
      const killed = new Error('worker killed');
      const dying: Once = (key, request, act) => (key.at(-1) === 'op_1' ? act().then(() => Promise.reject(killed)) : once(key, request, act));
      const first = durable(dying, env);
      await expect(episode(first)).rejects.toBe(killed);
      expect(first.executed).toBe(2);
      await first.cleanup();
      expect(await ours(), 'cleanup removed the container').toEqual([]);

      // The retry: op 0 replayed, op 1 run in a container opened from op 0's snapshot (one "two", not two).
      const retry = durable(once, env);
      const out = await episode(retry);
      expect(out.at(-1)).toBe('one\ntwo\nthree\ndoc-gone\n');
      expect(retry.executed).toBe(3);
      await retry.cleanup();

      const replay = durable(once, env);
      const before = (await ours()).length;
      expect(await episode(replay)).toEqual(out);
      expect(replay.executed).toBe(0);
      expect((await ours()).length, 'a replay starts no container').toBe(before);
      await replay.cleanup();
    });

    it('snapshots are small: the changes, not the image', async () => {
      const { env } = await environment();
      const sb = await env.open(env.files);
      try {
        await sb.runCommand('echo one >> /app/log && rm -rf /usr/share/doc');
        const files = await sb.snapshot();
        const { header, tar } = unpackSnapshot(files);
        expect(header.deleted).toEqual(['/usr/share/doc']);
        expect(files.length).toBeLessThan(4096);
        expect(tar.length).toBeLessThan(64 * 1024);
      } finally {
        await sb.cleanup();
      }
    });

    it('ends its life after the command time it was given, the same on replay', async () => {
      const { env, once } = await environment();
      for (const attempt of [0, 1]) {
        const sb = durable(once, env, 0.5);
        await sb.runCommand('sleep 0.6');
        await expect(sb.runCommand('true'), `attempt ${attempt}`).rejects.toThrow(SandboxTerminatedError);
        expect(sb.executed).toBe(attempt === 0 ? 1 : 0);
        await sb.cleanup();
      }
    });
  });

  describe('hostile commands', () => {
    let sb: DockerEpisodeSandbox;
    beforeAll(async () => {
      sb = await DockerEpisodeSandbox.create({ image: await taskDockerImage(tasks[0]), limits: { maxProcesses: 64, memoryBytes: 256 * MiB, storageBytes: 32 * MiB } });
    });
    afterAll(() => sb?.cleanup());
    const processes = async () => Number((await sb.runCommand('ls /proc | grep -c "^[0-9]*$"')).stdout.trim());

    it('a fork bomb is held to the pids limit and killed at its timeout; the sandbox goes on', async () => {
      const started = Date.now();
      // The bomb in the background, and the command kept running until its timeout.
      const r = await sb.runCommand(':(){ :|:& };:; while :; do sleep 1; done', { timeout: 5 });
      expect(r.exitCode).toBe(124);
      expect(r.stderr).toMatch(/Resource temporarily unavailable/); // the pids limit reached
      expect(r.stderr).toMatch(/sandbox: the command timed out after 5 s$/);
      expect(Date.now() - started).toBeLessThan(30_000);
      expect((await sb.runCommand('echo alive')).stdout).toBe('alive\n');
      expect(await processes(), 'no process of the bomb is left').toBeLessThan(8);
    });

    it('runs a command in its workdir, made when missing, as the local sandbox does', async () => {
      expect(await sb.runCommand('pwd; echo $PWD', { workdir: '/made/here' })).toMatchObject({ stdout: '/made/here\n/made/here\n', exitCode: 0 });
      expect((await sb.runCommand('pwd')).stdout).toBe('/\n');
    });

    it('has no network', async () => {
      expect((await sb.runCommand('ls /sys/class/net')).stdout).toBe('lo\n');
      const r = await sb.runCommand(`python3 -c "import socket; socket.create_connection(('1.1.1.1', 53), timeout=5)"`, { timeout: 20 });
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toMatch(/Network is unreachable/);
    });

    it('a command past the memory limit is killed and said to be; the sandbox goes on', async () => {
      const r = await sb.runCommand('python3 -c "x = bytearray(600 * 1024 * 1024); print(len(x))"', { timeout: 60 });
      expect(r.exitCode).toBe(137);
      expect(r.stderr).toMatch(/sandbox: the command passed its memory limit$/);
      expect((await sb.runCommand('echo alive')).stdout).toBe('alive\n');
    });

    it('a command past its wall time exits 124, and nothing it started outlives it', async () => {
      const r = await sb.runCommand('sleep 1000 & sleep 30', { timeout: 1 });
      expect(r).toMatchObject({ exitCode: 124, stderr: 'sandbox: the command timed out after 1 s' });
      expect(await processes()).toBeLessThan(8);
      await sb.runCommand('(sleep 1000 &) ; echo started');
      expect((await sb.runCommand('cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " "')).stdout).not.toMatch(/sleep 1000/);
    });

    it('keeps maxOutputBytes of each stream, drains the rest, and stops a command past stopOutputAfterBytes', async () => {
      const kept = await sb.runCommand('head -c 100000 /dev/zero | tr "\\0" a; echo done >&2', { maxOutputBytes: 1000 });
      expect(kept).toMatchObject({ exitCode: 0, stderr: 'done\n' });
      expect(kept.stdout).toBe('a'.repeat(1000));
      const flood = await sb.runCommand('yes', { maxOutputBytes: 10, timeout: 60 });
      expect(flood.stdout).toBe('y\ny\ny\ny\ny\n');
      expect(flood.stderr).toMatch(/sandbox: the command was stopped past 16 MiB of output$/);
    });

    it('past its storage limit the sandbox refuses further commands', async () => {
      const r = await sb.runCommand('head -c 40000000 /dev/zero > /big');
      expect(r.stderr).toMatch(/passed its storage limit \(32 MiB\); no more commands run$/);
      expect((await sb.runCommand('echo hi')).exitCode).toBe(-1);
      const reopened = await DockerEpisodeSandbox.create({ image: sb.image, from: await sb.snapshot(), limits: sb.limits });
      try {
        expect((await reopened.runCommand('echo hi')).exitCode, 'a sandbox opened from a full one refuses too').toBe(-1);
      } finally {
        await reopened.cleanup();
      }
    });
  });

  it('containers of a process that is gone are removed; a live one is kept', async () => {
    const gone = spawnSync('true').pid!;
    const image = await taskDockerImage(tasks[0]);
    const stale = (await docker(['run', '-d', '--network', 'none', '--label', `${EPISODE_LABEL}=${hostname()}/${gone}`, '--entrypoint', 'sleep', image, 'infinity'])).stdout.toString().trim();
    const live = await DockerEpisodeSandbox.create({ image });
    try {
      expect(await clearStaleEpisodeContainers()).toBeGreaterThanOrEqual(1);
      expect((await docker(['inspect', stale])).code, 'the stale container is gone').not.toBe(0);
      expect((await live.runCommand('echo alive')).stdout).toBe('alive\n');
    } finally {
      await live.cleanup();
      await docker(['rm', '-f', stale]);
    }
  });

  describe('a terminal eval episode (sandbox_backend auto: docker here)', () => {
    const FIXTURES = join(import.meta.dirname, '..', '..', '..', 'fixtures', 'terminal_tasks_eval');
    const SOLVE = '<tool_call>\n{"name": "bash", "arguments": {"command": "echo durable > /app/magic.txt"}}\n</tool_call>';
    async function setup(turns: string[], logPath: string): Promise<TerminalEpisodeSetup & { asked: () => number }> {
      const { renderer, tokenizer } = await rendererForModel('tiny-qwen3');
      let asked = 0;
      const session: SamplingSession = {
        samplingSessionId: 'scripted',
        async sample(): Promise<SampleResponse> {
          const text = turns[Math.min(asked++, turns.length - 1)];
          return { sequences: [{ tokens: tokenizer.encode(`${text}<|im_end|>`, { addSpecialTokens: false }), stop_reason: 'stop' }] };
        },
        computeLogprobs: () => Promise.reject(new Error('not used')),
      };
      const store = new RunStore(logPath);
      return {
        session,
        asked: () => asked,
        openSession: () => Promise.reject(new Error('no side samplers here')),
        policyModel: { model_name: 'tiny-qwen3' },
        renderer: toolDeclaring(renderer, 'test'),
        tokenizer,
        sampling: { seed: 7, max_tokens: 64, temperature: 0 },
        terminal: TerminalEvalSchema.parse({ max_turns: 4 }),
        onceFor: (index) => runStoreOnce(store, ['eval', 0, index]),
        writeTrajectory: (task, text) => {
          writeFileSync(join(logPath, `${task}.txt`), text);
          return `${task}.txt`;
        },
      };
    }

    it('solved by a bash call in a container: PASS; replayed at the same position, the same result with no command run', async () => {
      const task = loadHarborTasks(FIXTURES).find((t) => t.taskName === 'write-magic-word')!;
      const logPath = mkdtempSync(join(tmpdir(), 'h55dock-eval-'));
      dirs.push(logPath);
      const execLog = join(logPath, 'exec.jsonl');
      process.env.COOKBOOK_SANDBOX_EXEC_LOG = execLog;
      const ran = () => (existsSync(execLog) ? readFileSync(execLog, 'utf8').trim().split('\n').length : 0);
      try {
        const r = await evaluateTerminalTask(3, task, await setup([SOLVE, 'Done.'], logPath));
        expect(r).toMatchObject({ status: 'PASS', reward: 1, turns: 2, error: null });
        const commands = ran();
        expect(commands).toBeGreaterThanOrEqual(2);
        const replayed = await evaluateTerminalTask(3, task, await setup([SOLVE, 'Done.'], logPath));
        expect({ ...replayed, seconds: 0 }).toEqual({ ...r, seconds: 0 });
        expect(ran()).toBe(commands);
      } finally {
        delete process.env.COOKBOOK_SANDBOX_EXEC_LOG;
      }
    });

    it('a task whose image Docker cannot build: ERROR naming its Dockerfile, no turn taken', async () => {
      const task = loadHarborTasks(FIXTURES).find((t) => t.taskName === 'needs-docker')!;
      const logPath = mkdtempSync(join(tmpdir(), 'h55dock-eval-'));
      dirs.push(logPath);
      const s = await setup(['never asked'], logPath);
      const r = await evaluateTerminalTask(1, task, s);
      expect(r).toMatchObject({ status: 'ERROR', reward: 0, turns: 0 });
      expect(r.error).toMatch(/needs-docker\/environment\/Dockerfile: docker build failed/);
      expect(s.asked()).toBe(0);
    });
  });

  it('leaves no container of its own behind', async () => {
    expect(await ours()).toEqual([]);
  });
});
