// Servers in tests bind 127.0.0.1 on ports chosen free just before they start, and choose again
// when another process takes the port first; a test that needs a port where nothing answers holds
// one that refuses.
import { spawn } from 'node:child_process';
import { isPortTaken, startOnPorts } from '../../src/cli/ports.js';
import type { Service } from '../../src/cli/services.js';

/**
 * Starts a server on a port free a moment ago. Another process can take that port before the
 * server binds it (an outgoing connection's ephemeral port, another test's server): the start then
 * fails, at once when the port is seen held by another process (PortTakenError), or when the
 * server exits before it is ready, and the server is started again on another port, a few times.
 */
export async function onFreePort<O extends { port: number }, S extends Service>(opts: Omit<O, 'port'>, start: (opts: O) => Promise<S>): Promise<{ opts: O; service: S }> {
  const { ports, service } = await startOnPorts([{ what: 'test server' }], ([port]) => start({ ...opts, port } as O), { lostPort: lostItsPort });
  return { opts: { ...opts, port: ports[0] } as O, service };
}

/** A start that lost its port, or whose server exited before it was ready (for any reason a lost port may be behind). */
export const lostItsPort = (err: unknown) => isPortTaken(err) || /exited \(.*\) before it was ready/.test(String(err));

/**
 * A port on 127.0.0.1 where connections are refused (ECONNREFUSED), for as long as it is held: a
 * socket bound there without listening, by a Python child (Node binds only with SO_REUSEADDR, which
 * another server's bind would get past). No other process can bind or connect from it meanwhile,
 * where a port merely free now could be taken by one and then answer. It goes with its holder:
 * release() ends it, and so does this process's exit (the child's stdin closes).
 */
export async function refusingPort(): Promise<{ port: number; release: () => void }> {
  const script = 'import socket, sys\ns = socket.socket()\ns.bind(("127.0.0.1", 0))\nprint(s.getsockname()[1], flush=True)\nsys.stdin.read()\n';
  const child = spawn(process.env.PYTHON ?? 'python3', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`the port holder exited (${code}) before it held a port`)));
  });
  child.unref();
  for (const stream of [child.stdin!, child.stdout!]) (stream as unknown as { unref?: () => void }).unref?.();
  return { port, release: () => child.kill() };
}
