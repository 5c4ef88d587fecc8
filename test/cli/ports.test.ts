// Ports without races: who holds a port (this process group or another), a service that is ready
// only once it listens on its ports itself (not while another process holds one), the
// choose-again loop around a start, and a port held refusing for tests that need nothing there.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPortTaken, portHolders, portOpen, PortTakenError, startOnPorts } from '../../src/cli/ports.js';
import { procStat } from '../../src/cli/procfs.js';
import { spawnService } from '../../src/cli/services.js';
import { refusingPort } from '../support/free-port.js';

const linux = existsSync('/proc/net/tcp');

/** A server of this process's own on a port the kernel picks. */
async function ownServer(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

/** A child in a process group of its own (as services run), listening on a port it picks and prints. */
async function childServer(): Promise<{ child: ChildProcess; port: number }> {
  const script = "const s = require('net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port))";
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (d) => resolve(Number(String(d).trim())));
    child.once('exit', (code) => reject(new Error(`the child server exited (${code})`)));
  });
  return { child, port };
}

describe.runIf(linux)('who holds a port (Linux /proc)', () => {
  let own: Awaited<ReturnType<typeof ownServer>>;
  let child: Awaited<ReturnType<typeof childServer>>;
  let dir: string;
  beforeAll(async () => {
    [own, child] = await Promise.all([ownServer(), childServer()]);
    dir = mkdtempSync(join(tmpdir(), 'ports-'));
  });
  afterAll(() => {
    own?.server.close();
    if (child) process.kill(-child.child.pid!, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it("tells a port held by the child's process group from one held by this process and from a free one", async () => {
    const { port: refused, release } = await refusingPort(); // bound, not listening: nobody listens
    try {
      const holders = portHolders([child.port, own.port, refused], child.child.pid!);
      expect(Object.fromEntries(holders!)).toEqual({ [child.port]: 'group', [own.port]: 'other', [refused]: 'nobody' });
      // Seen from this process's group, the other way round.
      const ownGroup = Number(procStat(process.pid)![2]);
      expect(Object.fromEntries(portHolders([child.port, own.port], ownGroup)!)).toEqual({ [child.port]: 'other', [own.port]: 'group' });
    } finally {
      release();
    }
  });

  it('a service is not ready while another process holds its port, though the probe answers', async () => {
    // The sleeper never listens: answered by this process's server, the probe alone would have passed at once.
    const attempt = spawnService({
      name: 'sleeper',
      command: 'sleep',
      args: ['300'],
      logFile: join(dir, 'sleeper.log'),
      ports: [own.port],
      ready: () => portOpen(own.port),
      readyTimeoutMs: 1_000,
    });
    await expect(attempt).rejects.toThrow(`sleeper was not ready after 1s; see ${join(dir, 'sleeper.log')}`);
  });

  it('a service that listens on its port itself is ready', async () => {
    const listen = (port: number) => `require('net').createServer().listen(${port}, '127.0.0.1')`;
    const { ports, service } = await startOnPorts([{ what: 'listener' }], ([port]) =>
      spawnService({ name: 'listener', command: process.execPath, args: ['-e', listen(port)], logFile: join(dir, 'listener.log'), ports: [port], ready: () => portOpen(port) }),
    );
    try {
      expect(portHolders(ports, service.proc.pid!)?.get(ports[0])).toBe('group');
    } finally {
      await service.stop();
    }
  });

  it('a service that exits because its port is in use fails with the port named from its log', async () => {
    const script = `require('net').createServer().listen(${own.port}, '127.0.0.1')`; // Node: "listen EADDRINUSE: address already in use 127.0.0.1:P"
    const err = await spawnService({ name: 'late', command: process.execPath, args: ['-e', script], logFile: join(dir, 'late.log'), ready: async () => false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isPortTaken(err)).toBe(true);
    expect((err as PortTakenError).port).toBe(own.port);
    expect(String(err)).toMatch(/late exited \(1\) before it was ready: a port it binds was taken \(.*address already in use/);
  });
});

describe('choosing ports again', () => {
  const lost = (port: number) => new PortTakenError(`port ${port} is taken by another process`, port);

  it('starts on newly chosen ports when a start loses one, keeping a given port as it is', async () => {
    const tries: number[][] = [];
    const { ports, service } = await startOnPorts([{ what: 'server' }, { what: 'ui', port: 1234 }], async (p) => {
      tries.push(p);
      if (tries.length < 3) throw lost(p[0]);
      return 'up';
    });
    expect(service).toBe('up');
    expect(tries).toHaveLength(3);
    expect(new Set(tries.map((p) => p[0])).size).toBe(3); // a lost port is not chosen again
    expect(tries.map((p) => p[1])).toEqual([1234, 1234, 1234]);
    expect(ports).toEqual(tries[2]);
  });

  it('fails at once when a given port is taken, with the caller\'s error', async () => {
    let starts = 0;
    const start = startOnPorts([{ what: 'Temporal', port: 7299 }, { what: 'ui' }], async () => {
      starts++;
      throw lost(7299);
    }, { givenTaken: (port, what) => new Error(`port ${port} (${what}) is in use`) });
    await expect(start).rejects.toThrow('port 7299 (Temporal) is in use');
    expect(starts).toBe(1);
  });

  it('gives up after its attempts, naming every port tried; other failures are not retried', async () => {
    const tried: number[] = [];
    const start = startOnPorts([{ what: 'engine' }], async ([p]) => {
      tried.push(p);
      throw lost(p);
    }, { attempts: 3 });
    const err = await start.then(() => undefined, (e: Error) => e);
    expect(tried).toHaveLength(3);
    expect(err?.message).toBe(`engine lost a chosen port before binding it at each of 3 starts (ports tried: ${tried.join(', ')}); the last: port ${tried[2]} is taken by another process`);

    let starts = 0;
    await expect(startOnPorts([{ what: 'engine' }], async () => {
      starts++;
      throw new Error('no Python');
    })).rejects.toThrow('no Python');
    expect(starts).toBe(1);
  });

  it("starts again with the same given ports when the service lost a port of its own choosing, not when the lost port is unknown", async () => {
    let starts = 0;
    await startOnPorts([{ what: 'Temporal', port: 7299 }], async () => {
      if (++starts === 1) throw lost(40001); // the dev server's internal port
      return 'up';
    });
    expect(starts).toBe(2);
    starts = 0;
    await expect(startOnPorts([{ what: 'Temporal', port: 7299 }], async () => {
      starts++;
      throw new PortTakenError('exited before it was ready: a port it binds was taken');
    })).rejects.toThrow('a port it binds was taken');
    expect(starts).toBe(1);
  });
});

describe('a refusing port', () => {
  it('refuses connections and cannot be bound by another server while held', async () => {
    const { port, release } = await refusingPort();
    try {
      expect(await portOpen(port)).toBe(false);
      const server = createServer();
      const bound = await new Promise<string>((resolve) => {
        server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
        server.listen(port, '127.0.0.1', () => resolve('listening'));
      });
      server.close();
      expect(bound).toBe('EADDRINUSE');
    } finally {
      release();
    }
  });
});
