// A fault-injecting TCP proxy on loopback, for the network between a worker and its backend: every
// byte passes through, and chunks are delayed, stalled, or their connection reset or cut short at
// seeded random moments. Faults are per chunk, so they land on requests (submits, polls) and on
// responses alike, including mid-body on HTTP keep-alive connections.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { rng } from './rng.js';

export type FaultKind =
  /** The chunk is forwarded `latencyMs` late. */
  | 'latency'
  /** The chunk is held for `stallMs` (a stalled link), then forwarded. */
  | 'stall'
  /** A request chunk is dropped and the connection reset: the server may never see the request. */
  | 'reset-request'
  /** The request goes through, then the connection is reset before the response arrives. */
  | 'reset-response'
  /** The request goes through, and the response is cut in half: half a body, then the end. */
  | 'truncate-response';

export interface FaultPlan {
  /** Chance that a client→server chunk draws a fault. */
  probability: number;
  seed: number;
  kinds: FaultKind[];
  latencyMs?: number;
  stallMs?: number;
}

export class FaultProxy {
  readonly counts: Record<FaultKind | 'connections' | 'refused', number> = {
    latency: 0,
    stall: 0,
    'reset-request': 0,
    'reset-response': 0,
    'truncate-response': 0,
    connections: 0,
    refused: 0,
  };
  private plan?: FaultPlan;
  private random: () => number = Math.random;
  private down = false;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** A proxy on a free loopback port in front of `target` (an http://host:port URL). */
  static async start(target: string): Promise<FaultProxy> {
    const { hostname, port } = new URL(target);
    let proxy: FaultProxy | undefined;
    const server = createServer((client) => proxy!.accept(client, hostname, Number(port)));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    proxy = new FaultProxy(server, `http://127.0.0.1:${address.port}`);
    return proxy;
  }

  /** Faults from now on (undefined: a clean link). */
  setFaults(plan: FaultPlan | undefined): void {
    this.plan = plan;
    if (plan) this.random = rng(plan.seed);
  }

  /** Down: every open connection is reset and new ones are reset on arrival (backend unreachable). */
  setDown(down: boolean): void {
    this.down = down;
    if (down) for (const s of this.sockets) s.destroy();
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, host: string, port: number): void {
    if (this.down) {
      this.counts.refused++;
      client.destroy();
      return;
    }
    this.counts.connections++;
    const upstream = connect(port, host);
    this.sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);

    // Chunks keep their order per direction: each waits for the one before it.
    let toServer = Promise.resolve();
    let toClient = Promise.resolve();
    let onResponse: 'reset' | 'truncate' | undefined;

    client.on('data', (chunk: Buffer) => {
      const kind = this.draw();
      if (kind) this.counts[kind]++;
      if (kind === 'reset-request') return close();
      if (kind === 'reset-response') onResponse = 'reset';
      if (kind === 'truncate-response') onResponse = 'truncate';
      const delay = kind === 'latency' ? (this.plan?.latencyMs ?? 200) : kind === 'stall' ? (this.plan?.stallMs ?? 3000) : 0;
      toServer = toServer.then(async () => {
        if (delay) await sleep(delay);
        if (!upstream.destroyed) upstream.write(chunk);
      });
    });
    upstream.on('data', (chunk: Buffer) => {
      const fault = onResponse;
      onResponse = undefined;
      toClient = toClient.then(() => {
        if (client.destroyed) return;
        if (fault === 'reset') return close();
        if (fault === 'truncate') {
          client.end(chunk.subarray(0, Math.floor(chunk.length / 2)));
          upstream.destroy();
          return;
        }
        client.write(chunk);
      });
    });
  }

  private draw(): FaultKind | undefined {
    const plan = this.plan;
    if (!plan || plan.kinds.length === 0 || this.random() >= plan.probability) return undefined;
    return plan.kinds[Math.floor(this.random() * plan.kinds.length)];
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
