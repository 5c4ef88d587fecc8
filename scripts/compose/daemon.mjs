// The Docker engine the compose test talks to: the one already running (DOCKER_HOST or the default
// socket), else a daemon of its own — `dockerd --iptables=false --bridge=none` with its own data
// root (kept under the cache, so base images and build layers survive between runs), exec root,
// pidfile and socket (in a temporary directory) — which stop() ends again. An already running
// daemon is never stopped.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pidAlive } from '../../src/stack/engine-env.mjs';
import { run, sleep, waitFor } from './proc.mjs';

async function serverVersion(env) {
  const r = await run('docker', ['version', '--format', '{{.Server.Version}}'], { env, allowFail: true, timeoutMs: 20_000 });
  return r.code === 0 ? r.stdout.trim() : undefined;
}

async function onPath(name) {
  const r = await run('sh', ['-c', `command -v ${name}`], { allowFail: true });
  return r.code === 0 ? r.stdout.trim() : undefined;
}

/**
 * @param {{ cacheDir: string, log: (msg: string) => void }} opts
 * @returns {Promise<{ env: NodeJS.ProcessEnv, started: boolean, version: string, describe: string, ownBridge: boolean, stop: () => Promise<void> }>}
 */
export async function ensureDaemon({ cacheDir, log }) {
  if (!(await onPath('docker'))) throw new Error('no `docker` CLI on PATH (Debian: apt-get install docker.io)');
  const env = { ...process.env };
  const existing = await serverVersion(env);
  if (existing) {
    const ownBridge = (await run('docker', ['network', 'inspect', 'bridge'], { env, allowFail: true })).code === 0;
    return { env, started: false, version: existing, ownBridge, describe: `the running Docker engine ${existing} (${env.DOCKER_HOST ?? 'default socket'}; left running)`, stop: async () => {} };
  }
  if (process.env.DOCKER_HOST) throw new Error(`DOCKER_HOST=${process.env.DOCKER_HOST} does not answer`);
  if (!(await onPath('dockerd'))) throw new Error('no Docker engine is running and there is no `dockerd` to start one (Debian: apt-get install docker.io)');

  mkdirSync(cacheDir, { recursive: true });
  const dataRoot = join(cacheDir, 'docker');
  const lockFile = join(cacheDir, 'dockerd.lock');
  if (existsSync(lockFile)) {
    const pid = Number(readFileSync(lockFile, 'utf8'));
    if (pid > 0 && pidAlive(pid)) throw new Error(`dockerd ${pid} of another compose test still uses ${dataRoot}; wait for it or stop it`);
  }
  const runDir = mkdtempSync(join(tmpdir(), 'cookbook-dockerd-'));
  const socket = join(runDir, 'docker.sock');
  const logFile = join(cacheDir, 'dockerd.log');
  const out = openSync(logFile, 'w');
  const args = [
    '--iptables=false',
    '--bridge=none',
    `--data-root=${dataRoot}`,
    `--exec-root=${join(runDir, 'exec')}`,
    `--pidfile=${join(runDir, 'dockerd.pid')}`,
    `--host=unix://${socket}`,
  ];
  log(`starting dockerd ${args.join(' ')} (log: ${logFile})`);
  const child = spawn('dockerd', args, { detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  writeFileSync(lockFile, String(child.pid));
  let exited = false;
  child.on('exit', () => (exited = true));
  const daemonEnv = { ...env, DOCKER_HOST: `unix://${socket}` };

  const stop = async () => {
    if (!exited) {
      log(`stopping dockerd ${child.pid}`);
      child.kill('SIGTERM');
      for (let i = 0; i < 60 && !exited; i++) await sleep(500);
      if (!exited) {
        log(`dockerd ${child.pid} did not stop in 30 s: SIGKILL`);
        child.kill('SIGKILL');
        for (let i = 0; i < 20 && !exited; i++) await sleep(250);
      }
    }
    // The containerd this dockerd started for itself goes with it; after a SIGKILL it may not have.
    const containerdPid = join(runDir, 'exec', 'containerd', 'containerd.pid');
    if (existsSync(containerdPid)) {
      const pid = Number(readFileSync(containerdPid, 'utf8'));
      if (pid > 0 && pidAlive(pid)) process.kill(pid, 'SIGTERM');
    }
    rmSync(lockFile, { force: true });
    // What the daemon leaves mounted under its exec root (the default network namespace).
    const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1]).filter((p) => p?.startsWith(`${runDir}/`));
    for (const mount of mounts.reverse()) await run('umount', ['-l', mount], { allowFail: true });
    try {
      rmSync(runDir, { recursive: true, force: true });
    } catch (err) {
      log(`could not remove ${runDir}: ${err.message}`);
    }
  };

  try {
    const version = await waitFor('dockerd to answer', async () => {
      if (exited) throw new Error(`dockerd exited; see ${logFile}:\n${readFileSync(logFile, 'utf8').split('\n').slice(-15).join('\n')}`);
      return serverVersion(daemonEnv);
    }, { timeoutMs: 60_000, intervalMs: 500 });
    return { env: daemonEnv, started: true, version, ownBridge: false, describe: `its own dockerd ${version} (pid ${child.pid}, data root ${dataRoot})`, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Every compose flavour installed: `docker compose` (the v2 plugin) and the standalone
 * `docker-compose` (Debian ships v1.29; v2 also comes as a standalone binary), in that order.
 * @returns {Promise<string[][]>}
 */
export async function composeCommands(env) {
  const found = [];
  if ((await run('docker', ['compose', 'version'], { env, allowFail: true }).catch(() => ({ code: 1 }))).code === 0) found.push(['docker', 'compose']);
  if ((await run('docker-compose', ['version'], { env, allowFail: true }).catch(() => ({ code: 1 }))).code === 0) found.push(['docker-compose']);
  return found;
}

/** The first compose flavour installed (composeCommands), or an error saying how to get one. */
export async function composeCommand(env) {
  const [first] = await composeCommands(env);
  if (!first) throw new Error('neither `docker compose` nor `docker-compose` is installed (Debian: apt-get install docker-compose)');
  return first;
}
