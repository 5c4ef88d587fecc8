// Services of the local stack never outlive their parent: a parent SIGKILLed with a service
// running (as a test runner killed mid-suite would be) leaves no orphan behind. A test's server
// whose free port was taken before it bound it starts again on another, and so does `cookbook dev`
// on ports it chose itself (auto).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { portOpen, PortTakenError, startOnPorts } from '../../src/cli/ports.js';
import { httpOk, repoRoot, startEngine, startWorkerProcess, type EngineOpts, type Service } from '../../src/cli/services.js';
import { stackDir, type StackState } from '../../src/cli/stack-state.js';
import { devOptions, stopStack } from '../../src/cli/stack.js';
import { cookbookProcess } from '../support/cli.js';
import { onFreePort } from '../support/free-port.js';
import { timed } from '../support/timing.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The CLI as a user runs it, with only the flags given (no test stack's). */
function cookbook(args: string[], env: Record<string, string>, cwd: string) {
  const run = cookbookProcess(args, { env, cwd });
  return Object.assign(run.done, { child: run.child, err: run.err });
}

const stateOf = (dir: string): StackState => JSON.parse(readFileSync(join(dir, 'stack.json'), 'utf8'));
const pidOf = (dir: string, name: string, startedBy = 'cookbook dev') => stateOf(dir).services.find((s) => s.name === name && s.startedBy === startedBy)?.pid;

/** What `cookbook dev` says when a port it was given is taken, or a start of it lost a port. */
const DEV_LOST_A_PORT = /is in use by a process that the stack in .* did not start|is taken by another process|a port it binds was taken/;

async function until(what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await probe()); await new Promise((r) => setTimeout(r, 100))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
  }
}

describe('local stack services', () => {
  it('are stopped when the process that started them is SIGKILLed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'reaper-'));
    const pidFile = join(dir, 'service.pid');
    const parentScript = join(dir, 'parent.mts');
    writeFileSync(
      parentScript,
      `import { writeFileSync } from 'node:fs';
       import { spawnService } from ${JSON.stringify(join(repoRoot, 'src', 'cli', 'services.ts'))};
       const svc = await spawnService({ name: 'sleeper', command: 'sleep', args: ['300'], logFile: ${JSON.stringify(join(dir, 'sleeper.log'))}, ready: async () => true });
       writeFileSync(${JSON.stringify(pidFile)}, String(svc.proc.pid));
       setInterval(() => {}, 1000);`,
    );
    const parent = spawn(process.execPath, ['--import', 'tsx', parentScript], { cwd: repoRoot, stdio: 'ignore' });
    // Deadlines for a loaded machine, where tsx alone can take many seconds to start the parent.
    await until('the service started', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')) > 0);
    const servicePid = Number(readFileSync(pidFile, 'utf8'));
    expect(alive(servicePid)).toBe(true);
    parent.kill('SIGKILL');
    await until('the service stopped', () => !alive(servicePid));
  });

  it('a test engine whose port was taken before it bound it is started again on another port (at once: another process listens there)', async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const takenPort = (squatter.address() as { port: number }).port;
    const dir = mkdtempSync(join(tmpdir(), 'port-race-'));
    const tried: number[] = [];
    // The first attempt is handed the squatted port, as if another process had won the race.
    const { opts, service } = await onFreePort({ dataDir: join(dir, 'engine') }, (o: EngineOpts) => {
      tried.push(tried.length === 0 ? takenPort : o.port);
      return startEngine({ ...o, port: tried.at(-1)! });
    });
    try {
      expect(tried).toEqual([takenPort, opts.port]);
      expect(opts.port).not.toBe(takenPort);
      expect(await httpOk(`${service.baseUrl}/api/v1/healthz`)).toBe(true);
    } finally {
      await service.stop();
      squatter.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it('`cookbook dev` settings: flags before COOKBOOK_* variables, a folder per Temporal port, bad values refused by name', () => {
    const env = { COOKBOOK_TEMPORAL_PORT: '7300', COOKBOOK_UI_PORT: '8300', COOKBOOK_ENGINE_PORT: '8200' };
    expect(devOptions({}, env)).toMatchObject({ temporalPort: 7300, uiPort: 8300, enginePort: 8200, engineUrl: undefined });
    expect(devOptions({ 'temporal-port': '7400' }, env)).toMatchObject({ temporalPort: 7400 });
    // An engine URL flag uses that engine: the environment's engine port does not apply.
    expect(devOptions({ 'engine-url': 'http://10.0.0.2:8100' }, env)).toMatchObject({ engineUrl: 'http://10.0.0.2:8100', enginePort: undefined });
    expect(devOptions({}, { TINKER_BASE_URL: 'http://10.0.0.2:8100' })).toMatchObject({ engineUrl: 'http://10.0.0.2:8100' });
    expect(() => devOptions({ 'ui-port': '70000' }, {})).toThrow('--ui-port must be a port number, 1 to 65535, or auto (got 70000)');
    // auto (or 0): the stack chooses; it applies to unset UI and engine ports in startStack.
    expect(devOptions({ 'temporal-port': 'auto', 'engine-port': '0' }, { COOKBOOK_UI_PORT: 'auto' })).toMatchObject({ temporalPort: 'auto', uiPort: 'auto', enginePort: 'auto' });
    expect(() => devOptions({}, { COOKBOOK_TEMPORAL_PORT: 'x' })).toThrow('COOKBOOK_TEMPORAL_PORT must be a port number');
    expect(() => devOptions({ 'engine-port': '8200', 'engine-url': 'http://h:1' }, {})).toThrow(/--engine-port and --engine-url: give an engine port .* or an engine URL/);
    expect(() => devOptions({}, { TINKER_BASE_URL: 'http://h:1', COOKBOOK_ENGINE_PORT: '8200' })).toThrow(/TINKER_BASE_URL and COOKBOOK_ENGINE_PORT/);
    expect(stackDir({ temporalPort: 7233 }, {})).toBe(join(repoRoot, '.dev'));
    expect(stackDir({ temporalPort: 7300 }, {})).toBe(join(repoRoot, '.dev', 'port-7300'));
    expect(stackDir({ temporalPort: 7300 }, { COOKBOOK_DEV_DIR: '/x' })).toBe('/x');
  });

  it('`cookbook dev stop` with an auto Temporal port and no folder names no stack: it says which to give', async () => {
    const saved = process.env.COOKBOOK_DEV_DIR;
    delete process.env.COOKBOOK_DEV_DIR;
    try {
      await expect(stopStack(devOptions({ 'temporal-port': 'auto' }, {}))).rejects.toThrow(/an auto Temporal port names no stack: give the port `dev` printed \(--temporal-port N\), or the stack's --dev-dir/);
    } finally {
      if (saved !== undefined) process.env.COOKBOOK_DEV_DIR = saved;
    }
  });

  it('`cookbook dev` runs a second stack beside the first on other ports, completes a stack missing its worker, and `dev stop` stops only its own', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dev-stacks-'));
    const dirA = join(root, 'a');
    const dirB = join(root, 'b');
    // Stack A on ports named by flags, stack B by environment variables on ports it chooses itself
    // (auto); B's worker trains on A's engine.
    const envA = { COOKBOOK_DEV_DIR: dirA };
    const envB = { COOKBOOK_DEV_DIR: dirB, COOKBOOK_TEMPORAL_PORT: 'auto' };
    let devA: string[] = [];
    let registered: ReturnType<typeof cookbook> | undefined;
    let foreign: Service | undefined;
    try {
      // The test names A's ports: it chooses them, and chooses again should another process take one
      // before A's services bind it (`dev` itself never changes a port it was given).
      const { ports: aPorts, service: a } = await timed('stack start', () =>
        startOnPorts([{ what: 'Temporal' }, { what: 'Web UI' }, { what: 'engine' }], async ([temporal, ui, engine]) => {
          devA = ['dev', '--detach', '--temporal-port', String(temporal), '--ui-port', String(ui), '--engine-port', String(engine)];
          const r = await cookbook(devA, envA, root);
          if (r.code !== 0 && DEV_LOST_A_PORT.test(r.err)) throw new PortTakenError(r.err);
          return r;
        }),
      );
      const [aTemporal, aUi, aEngine] = aPorts;
      const engineA = `http://127.0.0.1:${aEngine}`;
      expect(a.code, a.err).toBe(0);
      expect(a.out).toContain(`Temporal  127.0.0.1:${aTemporal}\nWeb UI    http://127.0.0.1:${aUi}\nengine    ${engineA}`);
      const b = await timed('stack start', () => cookbook(['dev', '--detach', '--engine-url', engineA], envB, root));
      expect(b.code, b.err).toBe(0);
      // B's ports, as it recorded and printed them.
      const { temporalAddress: addressB, uiUrl: uiB } = stateOf(dirB);
      const [bTemporal, bUi] = [Number(addressB.split(':').pop()), Number(uiB.split(':').pop())];
      expect(b.out).toContain(`Temporal  127.0.0.1:${bTemporal}\nWeb UI    http://127.0.0.1:${bUi}\nengine    ${engineA}`);
      expect(b.err).toContain(`using the engine at ${engineA} (not started by this stack)`);
      const ports = [...aPorts, bTemporal, bUi];
      expect(new Set(ports).size).toBe(5);
      for (const port of ports) expect(await portOpen(port), `port ${port}`).toBe(true);
      expect(await httpOk(`http://127.0.0.1:${bUi}/`)).toBe(true);
      // auto again with B's folder, whose stack runs: B on its recorded ports, nothing started.
      const bAgain = await cookbook(['dev', '--detach', '--engine-url', engineA], envB, root);
      expect(bAgain.code, bAgain.err).toBe(0);
      expect(bAgain.out).toContain(`Temporal  127.0.0.1:${bTemporal}\nWeb UI    http://127.0.0.1:${bUi}\nengine    ${engineA}`);
      expect(bAgain.err).not.toMatch(/starting/);

      // A run on B links to B's Web UI (it trains while the test goes on, and is checked before B stops);
      // the same server's link is unknown where B is not recorded.
      const onB = ['--address', `127.0.0.1:${bTemporal}`, '--engine-url', engineA];
      const run = await cookbook(['train', 'sl', join(repoRoot, 'test', 'fixtures', 'sl_small.json'), 'max_steps=2', '--id', 'sl-dev-b', ...onB], envB, root);
      expect(run.code, run.err).toBe(0);
      expect(run.out).toContain(`web UI   http://127.0.0.1:${bUi}/namespaces/default/workflows/sl-dev-b`);
      const elsewhere = await cookbook(['status', 'sl-dev-b', '--address', `127.0.0.1:${bTemporal}`], envA, root);
      expect(elsewhere.out).toContain('sl-dev-b: ');
      expect(elsewhere.out).not.toContain('web UI');

      // A's worker dies: `dev` again keeps A's server and engine and starts only a worker.
      const [temporalA, workerA] = [pidOf(dirA, 'temporal')!, pidOf(dirA, 'worker')!];
      process.kill(-workerA, 'SIGKILL');
      await until('the worker to die', () => !alive(workerA));
      const again = await timed('worker start', () => cookbook(devA, envA, root));
      expect(again.code, again.err).toBe(0);
      expect(again.err).toMatch(/already running: temporal \(pid \d+\)/);
      expect(again.err).toMatch(/already running: engine \(pid \d+\)/);
      expect(again.err).toContain('starting worker');
      expect(again.err).not.toMatch(/starting (Temporal|engine)/);
      expect(pidOf(dirA, 'temporal')).toBe(temporalA);
      expect(alive(pidOf(dirA, 'worker')!)).toBe(true);

      // `cookbook worker` on A registers with it; a worker B never heard of polls B.
      registered = cookbook(['worker', '--address', `127.0.0.1:${aTemporal}`, '--engine-url', engineA], envA, root);
      await timed('worker start', () => until('the registered worker to poll', () => registered!.err().includes('worker started')));
      expect(registered.err()).toContain(`registered with the local stack in ${dirA}`);
      expect(pidOf(dirA, 'worker', 'cookbook worker')).toBe(registered.child.pid);
      foreign = await timed('worker start', () => startWorkerProcess({ temporalAddress: `127.0.0.1:${bTemporal}`, tinkerBaseUrl: engineA, logFile: join(root, 'foreign-worker.log'), env: { TINKER_API_KEY: 'tml-test' } }));

      // B's worker trained its run on A's engine.
      const watched = await cookbook(['watch', 'sl-dev-b', ...onB], envB, root);
      expect(watched.out).toMatch(/completed after 2 steps/);

      const stopA = await cookbook(['dev', 'stop'], envA, root);
      expect(stopA.code, stopA.err).toBe(0);
      expect(stopA.out).toMatch(new RegExp(`stopped worker \\(pid \\d+\\), worker \\(pid ${registered.child.pid}, \`cookbook worker\`\\), engine \\(pid \\d+\\), temporal \\(pid ${temporalA}\\) of the stack in ${dirA}`));
      expect(stopA.out).not.toContain('left running');
      expect((await registered).code).toBe(0);
      for (const port of [aTemporal, aUi, aEngine]) expect(await portOpen(port), `A's port ${port}`).toBe(false);
      for (const port of [bTemporal, bUi]) expect(await portOpen(port), `B's port ${port}`).toBe(true);
      expect(alive(pidOf(dirB, 'worker')!)).toBe(true);

      const stopB = await cookbook(['dev', 'stop'], envB, root);
      expect(stopB.code, stopB.err).toBe(0);
      expect(stopB.out).toMatch(/stopped worker \(pid \d+\), temporal \(pid \d+\)/);
      expect(stopB.out).toContain(`left running: worker ${foreign.proc.pid}@${hostname()} polling task queue cookbook`);
      expect(stopB.out).toContain(`left as it is: the engine at ${engineA} (not started by this stack)`);
      for (const port of [bTemporal, bUi]) expect(await portOpen(port), `B's port ${port}`).toBe(false);
      expect(alive(foreign.proc.pid!)).toBe(true);
      expect(existsSync(join(dirA, 'stack.json')) || existsSync(join(dirB, 'stack.json'))).toBe(false);
    } finally {
      registered?.child.kill('SIGKILL');
      await foreign?.stop();
      for (const env of [envA, envB]) if (existsSync(join(env.COOKBOOK_DEV_DIR, 'stack.json'))) await cookbook(['dev', 'stop'], env, root);
      rmSync(root, { recursive: true, force: true });
    }
  }, 600_000);
});
