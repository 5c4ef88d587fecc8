// Other Tinker-compatible servers (SkyRL-tx, TuFT, hatchery) for the compatibility matrix tests:
// installed into the cache and launched as src/stack/peers.mjs says (`npm run peers:start` runs the
// same launch by hand), on a free port of 127.0.0.1 and the tiny random Qwen3 directory it
// generates; ready once their capabilities answer, gone with the test process (the service
// launcher's reaper holds their process group).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOnPorts } from '../../src/cli/ports.js';
import { spawnService, type Service } from '../../src/cli/services.js';
import { ensurePeer, ensureTinyQwen3Model, PEER_API_KEY, peerLaunch } from '../../src/stack/peers.mjs';
import { lostItsPort } from './free-port.js';

export type PeerName = 'skyrl-tx' | 'tuft' | 'hatchery';

export interface PeerServer {
  name: PeerName;
  version: string;
  baseUrl: string;
  apiKey: string;
  /** What a run's model_name is on this server (the name it serves the tiny model under). */
  model: string;
  /** The tiny model's directory (its tokenizer.json included). */
  modelDir: string;
  logFile: string;
  /** The server's process group down, its folder removed. */
  stop(): Promise<void>;
}

async function capabilitiesAnswer(baseUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${baseUrl}/api/v1/get_server_capabilities`, { headers: { 'X-API-Key': PEER_API_KEY }, signal: AbortSignal.timeout(5000) });
    return res.ok;
  } catch {
    return false;
  }
}

/** Installs (first time) and starts a peer server on a free port. */
export async function startPeer(name: PeerName, opts: { log?: (chunk: string) => void } = {}): Promise<PeerServer> {
  const log = opts.log ?? ((chunk: string) => process.stderr.write(chunk));
  const { python, version } = await ensurePeer(name, { log });
  const modelDir = await ensureTinyQwen3Model({ log });
  const dir = mkdtempSync(join(tmpdir(), `cookbook-peer-${name}-`));
  const logFile = join(dir, 'server.log');
  let model = modelDir;
  const launch = ([port]: number[]): Promise<Service> => {
    const l = peerLaunch(name, { python, modelDir, dir, port });
    model = l.model;
    return spawnService({
      name,
      command: l.command,
      args: l.args,
      env: { PYTHONUNBUFFERED: '1', ...l.env },
      logFile,
      ports: [port],
      // JAX and torch imports, a model load, Ray (TuFT): tens of seconds on a busy machine.
      readyTimeoutMs: 300_000,
      ready: () => capabilitiesAnswer(`http://127.0.0.1:${port}`),
    });
  };
  let started: { ports: number[]; service: Service };
  try {
    started = await startOnPorts([{ what: `${name} server` }], launch, { lostPort: lostItsPort });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const { service } = started;
  return {
    name,
    version,
    baseUrl: `http://127.0.0.1:${started.ports[0]}`,
    apiKey: PEER_API_KEY,
    model,
    modelDir,
    logFile,
    async stop() {
      await service.stop(5000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
