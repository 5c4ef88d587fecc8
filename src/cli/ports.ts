// Free ports, and services started on them without losing them. A port that was free a moment ago
// may be gone by the time a service binds it: another process's server took it (tests run two
// files at a time; the Temporal dev server binds ports of its own choosing), or an outgoing
// connection got it as its ephemeral port. So a service started on a chosen port must be seen
// listening there itself before it counts as ready (services.ts), and one that lost a chosen port
// is started again on another. A port the user named is never changed: taken, it is an error.
import { connect, createServer } from 'node:net';
import { groupSocketInodes, listeningInodes } from './procfs.js';

/** A port free on 127.0.0.1 now: only a choice, which a service must still win by binding it. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export function portOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ port, host });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** A port a service needs is held by another process (`port`, where known). */
export class PortTakenError extends Error {
  readonly code = 'PORT_TAKEN';
  constructor(
    message: string,
    readonly port?: number,
  ) {
    super(message);
    this.name = 'PortTakenError';
  }
}

export function isPortTaken(err: unknown): err is PortTakenError {
  return (err as { code?: unknown } | null)?.code === 'PORT_TAKEN';
}

export type PortHolder = 'group' | 'other' | 'nobody';

/**
 * Who listens on each port (on 127.0.0.1, or on an address that clashes with it): the process
 * group `pgid`, another process, or nobody yet. Undefined where this host cannot tell (not Linux).
 */
export function portHolders(ports: number[], pgid: number): Map<number, PortHolder> | undefined {
  const listening = listeningInodes(ports);
  if (!listening) return undefined;
  // Read after the listeners: a listening socket the group held then is still among its fds now.
  const ours = [...listening.values()].some((inodes) => inodes.length > 0) ? groupSocketInodes(pgid) : new Set<string>();
  return new Map(
    ports.map((port) => {
      const inodes = listening.get(port)!;
      return [port, inodes.length === 0 ? 'nobody' : inodes.every((inode) => ours.has(inode)) ? 'group' : 'other'];
    }),
  );
}

export interface WantedPort {
  /** What listens there, for messages: `Temporal`, `Temporal Web UI`, `engine`. */
  what: string;
  /** A port given by the user, used as it is; without one a free port is chosen. */
  port?: number;
}

export interface ChooseAgainOptions {
  /** Starts in all, the first included (default 5). */
  attempts?: number;
  /** Whether a failed start lost a port, so that another start may keep its ports (default: isPortTaken). */
  lostPort?: (err: unknown) => boolean;
  /** The error for a given port that a start found taken (default: the start's own). */
  givenTaken?: (port: number, what: string) => Error;
  /** Told before each start again. */
  onRetry?: (err: unknown, ports: number[]) => void;
}

/**
 * Starts a service on ports of its own: the given ones as they are, the others chosen free just
 * before the start. When a start fails because it lost a port between choosing and binding it,
 * the service is started again on newly chosen ports, a bounded number of times; a given port that
 * is taken fails at once, as choosing the others again cannot help.
 */
export async function startOnPorts<T>(wanted: WantedPort[], start: (ports: number[]) => Promise<T>, o: ChooseAgainOptions = {}): Promise<{ ports: number[]; service: T }> {
  const attempts = o.attempts ?? 5;
  const lost = o.lostPort ?? isPortTaken;
  const tried: number[][] = [];
  for (;;) {
    const ports = await choosePorts(wanted, tried.flat());
    tried.push(ports);
    try {
      return { ports, service: await start(ports) };
    } catch (err) {
      const given = isPortTaken(err) ? wanted.find((w) => w.port !== undefined && w.port === err.port) : undefined;
      if (given && o.givenTaken) throw o.givenTaken(given.port!, given.what);
      if (given || !lost(err) || !startAgainMayHelp(err, wanted)) throw err;
      if (tried.length >= attempts) throw triedError(wanted, tried, err);
      o.onRetry?.(err, ports);
    }
  }
}

/**
 * After a lost port: a chosen port is chosen again; a port the service picked itself (the Temporal
 * dev server's internal ones) is picked again by the service. Which port it was may be unknown (a
 * log line without it): then only when some port is chosen here.
 */
function startAgainMayHelp(err: unknown, wanted: WantedPort[]): boolean {
  const port = isPortTaken(err) ? err.port : undefined;
  return port !== undefined || wanted.some((w) => w.port === undefined);
}

async function choosePorts(wanted: WantedPort[], avoid: number[]): Promise<number[]> {
  const taken = new Set([...avoid, ...wanted.flatMap((w) => (w.port === undefined ? [] : [w.port]))]);
  const ports: number[] = [];
  for (const w of wanted) {
    let port = w.port;
    // The kernel hands out ports at random: a repeat of one in use here is rare, and bounded.
    for (let i = 0; port === undefined || (w.port === undefined && taken.has(port) && i < 20); i++) port = await freePort();
    taken.add(port);
    ports.push(port);
  }
  return ports;
}

function triedError(wanted: WantedPort[], tried: number[][], last: unknown): Error {
  const names = wanted.map((w) => w.what).join('/');
  const ports = tried.map((p) => p.join('/')).join(', ');
  return new Error(`${names} lost a chosen port before binding it at each of ${tried.length} starts (ports tried: ${ports}); the last: ${(last as Error).message}`);
}
