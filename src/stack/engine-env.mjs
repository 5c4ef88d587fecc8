// The engine's Python virtual environment: created once per version of engine/requirements.txt
// under ~/.cache/durable-cookbook/engine-venv-<hash> (PyPI's PyTorch) or engine-venv-<hash>-cpu
// (PyTorch's CPU build, on Linux without an NVIDIA GPU: torch-build.mjs), built under a temporary
// name and renamed into place when complete (a crashed build never looks usable), serialised by a
// lock directory so concurrent callers (tests, demo, CI) build it once.

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { cacheRoot } from './cache.mjs';
import { buildWithFallback, chooseTorchBuild, cpuIndexReachable, cpuTorchIndex, hasNvidiaGpu, pipInstalls, venvName } from './torch-build.mjs';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ENGINE_DIR = path.join(REPO_ROOT, 'engine');
const REQUIREMENTS = path.join(ENGINE_DIR, 'requirements.txt');
const MARKER = '.complete';
const STALE_LOCK_MS = 60 * 60 * 1000;

/** The venv of a PyTorch build ('default': PyPI's, the name it has always had; 'cpu'). */
export function engineVenvPath(flavour = 'default') {
  const hash = createHash('sha256').update(fs.readFileSync(REQUIREMENTS)).digest('hex').slice(0, 12);
  return path.join(cacheRoot(), venvName(hash, flavour));
}

function basePython() {
  const candidates = [process.env.DURABLE_COOKBOOK_PYTHON, 'python3.11', 'python3', 'python'].filter(Boolean);
  for (const candidate of candidates) {
    const probe = spawnSync(candidate, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], {
      encoding: 'utf8',
    });
    if (probe.status !== 0) continue;
    const [major, minor] = probe.stdout.trim().split('.').map(Number);
    if (major === 3 && minor >= 11) return candidate;
  }
  throw new Error('the engine needs Python >= 3.11 (set DURABLE_COOKBOOK_PYTHON to its path)');
}

function isComplete(venv) {
  return fs.existsSync(path.join(venv, MARKER)) && fs.existsSync(path.join(venv, 'bin', 'python'));
}

function run(cmd, args, log) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => log(d.toString()));
    child.stderr.on('data', (d) => log(d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`)),
    );
  });
}

/** Whether a process with this pid exists (EPERM: it does, owned by another user). */
export function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

async function acquireLock(lockDir) {
  for (;;) {
    try {
      fs.mkdirSync(lockDir);
      fs.writeFileSync(path.join(lockDir, 'pid'), String(process.pid));
      return;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let stale = false;
    try {
      const pid = Number(fs.readFileSync(path.join(lockDir, 'pid'), 'utf8'));
      const age = Date.now() - fs.statSync(lockDir).mtimeMs;
      stale = (pid > 0 && !pidAlive(pid)) || age > STALE_LOCK_MS;
    } catch {
      // lock being created right now (no pid file yet) or just released
    }
    if (stale) fs.rmSync(lockDir, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * Builds a cached venv once: under a temporary name, `install(python)` fills it, and it is renamed
 * into place with a completion marker; concurrent callers wait on a lock directory.
 * @param {string} venv
 * @param {{ log: (chunk: string) => void, banner: string, marker: object,
 *           install: (python: string, run: (cmd: string, args: string[]) => Promise<void>) => Promise<void> }} opts
 */
export async function buildCachedVenv(venv, opts) {
  const { log } = opts;
  if (isComplete(venv)) return;
  fs.mkdirSync(cacheRoot(), { recursive: true });
  const lockDir = `${venv}.lock`;
  await acquireLock(lockDir);
  try {
    if (isComplete(venv)) return;
    const tmp = path.join(cacheRoot(), `.${path.basename(venv)}.tmp-${process.pid}`);
    fs.rmSync(tmp, { recursive: true, force: true });
    const started = Date.now();
    log(`${opts.banner}\n`);
    try {
      await run(basePython(), ['-m', 'venv', tmp], log);
      await opts.install(path.join(tmp, 'bin', 'python'), (cmd, args) => run(cmd, args, log));
    } catch (err) {
      fs.rmSync(tmp, { recursive: true, force: true }); // a failed build leaves no gigabytes behind
      throw err;
    }
    fs.writeFileSync(path.join(tmp, MARKER), JSON.stringify({ ...opts.marker, builtAt: new Date().toISOString() }));
    fs.rmSync(venv, { recursive: true, force: true });
    fs.renameSync(tmp, venv);
    log(`[venv] ${path.basename(venv)} ready in ${Math.round((Date.now() - started) / 1000)} s: ${formatBytes(diskUsage(venv))} on disk\n`);
  } finally {
    fs.rmSync(lockDir, { recursive: true, force: true });
  }
}

/** Bytes the files under `dir` take (symlinks not followed). */
function diskUsage(dir) {
  let total = 0;
  const stack = [dir];
  while (stack.length) {
    const d = stack.pop();
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else total += fs.lstatSync(p).size;
    }
  }
  return total;
}

const formatBytes = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : `${Math.round(n / 1e6)} MB`);

/**
 * Ensures the cached engine venv exists and is complete: the one built earlier, else a new one
 * with the PyTorch build chooseTorchBuild picks (it says which, and why).
 * @param {{ log?: (chunk: string) => void }} [opts] where pip's progress goes (default: stderr)
 * @returns {Promise<{ python: string, venv: string }>}
 */
export async function ensureEngineEnv(opts = {}) {
  const log = opts.log ?? ((chunk) => process.stderr.write(chunk));
  const venvs = { cpu: engineVenvPath('cpu'), default: engineVenvPath('default') };
  const cpuIndex = cpuTorchIndex();
  const setting = process.env.DURABLE_COOKBOOK_TORCH?.trim() || 'auto';
  const { flavour, reason } = await chooseTorchBuild({
    setting,
    platform: process.platform,
    built: { cpu: isComplete(venvs.cpu), default: isComplete(venvs.default) },
    nvidiaGpu: hasNvidiaGpu,
    probe: () => cpuIndexReachable(cpuIndex),
    cpuIndex,
  });
  return buildWithFallback({
    flavour,
    forced: setting !== 'auto',
    build: (f, why = reason) => buildEngineVenv(venvs[f], f, why, cpuIndex, log),
    log,
  });
}

async function buildEngineVenv(venv, flavour, reason, cpuIndex, log) {
  const requirements = fs.readFileSync(REQUIREMENTS, 'utf8');
  const torchPin = requirements.split('\n').find((l) => /^torch==/.test(l.trim()))?.trim();
  if (flavour === 'cpu' && !torchPin) throw new Error(`${REQUIREMENTS} pins no torch==<version>, which the CPU build installs`);
  const source = flavour === 'cpu' ? `PyTorch's CPU build from ${cpuIndex}` : "PyPI's PyTorch (the CUDA build on Linux)";
  await buildCachedVenv(venv, {
    log,
    banner: `[engine-env] building ${venv} with ${source} (why: ${reason}; DURABLE_COOKBOOK_TORCH=cpu|default overrides); the first run downloads PyTorch, which takes a few minutes`,
    // The default build's marker is what it has always been.
    marker: flavour === 'cpu' ? { requirements, torchIndex: cpuIndex } : { requirements },
    install: async (python, run) => {
      const pipIndexUrl = process.env.PIP_INDEX_URL || undefined;
      for (const args of pipInstalls({ flavour, requirementsFile: REQUIREMENTS, torchPin, pipIndexUrl, cpuIndex })) await run(python, args);
    },
  });
  return { python: path.join(venv, 'bin', 'python'), venv };
}

/** Environment for running engine code from the repository checkout with the venv's python. */
export function engineProcessEnv(extra = {}) {
  const pythonPath = [ENGINE_DIR, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
  return { ...process.env, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1', ...extra };
}
