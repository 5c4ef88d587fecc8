// Other Tinker-compatible servers (SkyRL-tx, TuFT, hatchery) for the compatibility matrix tests:
// installed into the cache by src/stack/peers.mjs, started on a free port of 127.0.0.1 on the tiny
// random Qwen3 directory it generates, ready once their capabilities answer, gone with the test
// process (the service launcher's reaper holds their process group).
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { startOnPorts } from '../../src/cli/ports.js';
import { repoRoot, spawnService, type Service } from '../../src/cli/services.js';
import { ensurePeer, ensureTinyQwen3Model, PEERS } from '../../src/stack/peers.mjs';
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

interface Launch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  model: string;
}

const API_KEY = 'tml-peer-matrix';

/** How each peer starts (the commands users run, docs/tinker-compat.md "Other Tinker-compatible servers"). */
function launchOf(name: PeerName, python: string, venv: string, modelDir: string, dir: string, port: number): Launch {
  switch (name) {
    case 'skyrl-tx': {
      // Its API process starts the training engine as `uv run --extra tinker --extra jax -m
      // tx.tinker.engine …`, which needs SkyRL's source checkout; from a pip install the same module
      // runs from the venv: this `uv` takes the arguments after `-m`.
      const shimDir = join(dir, 'bin');
      mkdirSync(shimDir, { recursive: true });
      writeFileSync(join(shimDir, 'uv'), `#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != "-m" ]; do shift; done\nexec "${python}" "$@"\n`);
      chmodSync(join(shimDir, 'uv'), 0o755);
      return {
        command: python,
        args: ['-m', 'tx.tinker.api', '--base-model', modelDir, '--host', '127.0.0.1', '--port', String(port), '--backend', 'jax',
          '--backend-config', JSON.stringify({ max_lora_adapters: 8, max_lora_rank: 32 }),
          '--database-url', `sqlite:///${join(dir, 'tinker.db')}`, '--checkpoints-base', join(dir, 'ckpt')],
        env: { JAX_PLATFORMS: 'cpu', PATH: `${shimDir}${delimiter}${process.env.PATH}` },
        model: modelDir,
      };
    }
    case 'tuft': {
      // Its CPU test mode (dummy training and sampling backends: the protocol only); its real
      // backends need a GPU (Ray actors asking for one, vLLM).
      const config = join(dir, 'tuft.yaml');
      const yaml = [
        `checkpoint_dir: ${join(dir, 'ckpt')}`,
        'supported_models:',
        `  - model_name: ${modelDir}`,
        `    model_path: ${modelDir}`,
        '    max_model_len: 2048',
        '    max_lora_rank: 32',
        'authorized_users:',
        `  ${API_KEY}: matrix`,
      ].join('\n');
      writeFileSync(config, `${yaml}\n`);
      return {
        command: python,
        args: ['-m', 'tuft', 'launch', '--host', '127.0.0.1', '--port', String(port), '--config', config],
        env: { TUFT_CPU_TEST: '1', TUFT_HOME: join(dir, 'tuft-home'), RAY_ADDRESS: '', RAY_USAGE_STATS_ENABLED: '0' },
        model: modelDir,
      };
    }
    case 'hatchery':
      return {
        command: python,
        args: [join(repoRoot, 'scripts', 'peers', 'hatchery_cpu.py')],
        env: { HATCHERY_DEV_PORT: String(port), HATCHERY_DEV_API_KEY: API_KEY, HATCHERY_DEV_BASE_MODEL: modelDir, VIRTUAL_ENV: venv },
        model: modelDir,
      };
  }
}

async function capabilitiesAnswer(baseUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${baseUrl}/api/v1/get_server_capabilities`, { headers: { 'X-API-Key': API_KEY }, signal: AbortSignal.timeout(5000) });
    return res.ok;
  } catch {
    return false;
  }
}

/** Installs (first time) and starts a peer server on a free port. */
export async function startPeer(name: PeerName, opts: { log?: (chunk: string) => void } = {}): Promise<PeerServer> {
  const log = opts.log ?? ((chunk: string) => process.stderr.write(chunk));
  const { python, venv, version } = await ensurePeer(name, { log });
  const modelDir = await ensureTinyQwen3Model({ log });
  const dir = mkdtempSync(join(tmpdir(), `cookbook-peer-${name}-`));
  const logFile = join(dir, 'server.log');
  let model = modelDir;
  const launch = ([port]: number[]): Promise<Service> => {
    const l = launchOf(name, python, venv, modelDir, dir, port);
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
    version: version ?? PEERS[name].version,
    baseUrl: `http://127.0.0.1:${started.ports[0]}`,
    apiKey: API_KEY,
    model,
    modelDir,
    logFile,
    async stop() {
      await service.stop(5000);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
