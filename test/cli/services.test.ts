// Services of the local stack never outlive their parent: a parent SIGKILLed with a service
// running (as a test runner killed mid-suite would be) leaves no orphan behind. A test's server
// whose free port was taken before it bound it starts again on another.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { httpOk, repoRoot, startEngine, type EngineOpts } from '../../src/cli/services.js';
import { onFreePort } from '../support/free-port.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

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
    let servicePid = 0;
    for (let i = 0; i < 300 && !servicePid; i++) {
      await new Promise((r) => setTimeout(r, 100));
      try {
        servicePid = Number(readFileSync(pidFile, 'utf8'));
      } catch {
        // not yet written
      }
    }
    expect(servicePid).toBeGreaterThan(0);
    expect(alive(servicePid)).toBe(true);
    parent.kill('SIGKILL');
    for (let i = 0; i < 100 && alive(servicePid); i++) await new Promise((r) => setTimeout(r, 100));
    expect(alive(servicePid)).toBe(false);
  }, 60_000);

  it('a test engine whose port was taken before it bound it is started again on another port', async () => {
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
});
