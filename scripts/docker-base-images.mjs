#!/usr/bin/env node
// `npm run docker:base-images`: makes the base images docker-compose.yml and the Dockerfiles name
// (node:20-bookworm-slim, python:3.11-slim-bookworm, temporalio/temporal:<version>) available to
// the running Docker engine, for machines that cannot pull them from Docker Hub: each is kept when
// present, pulled when it can be, and otherwise built here as a local stand-in under the same name
// (scripts/compose/standins.mjs, which `npm run test:compose` uses too). Then `docker compose up
// --build` (or `docker-compose up --build`) builds the project's own images on top of them.
//
// Building stand-ins needs, once: debootstrap, run as root (the Debian root filesystem, cached
// under ~/.cache/durable-cookbook/compose), a Debian mirror, PyPI (the Temporal CLI), and this
// machine's Node of the same major version as the node image (it is copied into the stand-in).
//
//   npm run docker:base-images              # as root (sudo) where stand-ins must be built
//   npm run docker:base-images -- --no-pull # do not try Docker Hub; build stand-ins for what is missing
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureTemporalCli } from '../src/stack/temporal-bin.mjs';
import { composeCommands } from './compose/daemon.mjs';
import { run } from './compose/proc.mjs';
import { ensureBaseImages, projectBaseImages } from './compose/standins.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const cacheDir = join(process.env.DURABLE_COOKBOOK_CACHE ?? join(homedir(), '.cache', 'durable-cookbook'), 'compose');
const log = (msg) => console.error(`[docker:base-images] ${msg}`);

async function main() {
  const { values } = parseArgs({ options: { 'no-pull': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } } });
  if (values.help) {
    console.log('usage: npm run docker:base-images [-- --no-pull]\n  (see the top of scripts/docker-base-images.mjs and README, "Docker")');
    return 0;
  }
  const version = await run('docker', ['version', '--format', '{{.Server.Version}}'], { allowFail: true, timeoutMs: 20_000 }).catch((err) => ({ code: 127, stderr: err.message, stdout: '' }));
  if (version.code !== 0) {
    const why = version.stderr.trim().split('\n').pop();
    throw new Error(`no Docker engine answers \`docker version\` (${why}): start one (\`sudo systemctl start docker\`, or \`sudo dockerd\`), or point DOCKER_HOST at it`);
  }
  log(`Docker engine ${version.stdout.trim()} (${process.env.DOCKER_HOST ?? 'default socket'})`);
  const docker = (args, opts = {}) => run('docker', args, opts);
  const names = projectBaseImages(repo);
  const report = await ensureBaseImages(docker, names, {
    cacheDir,
    log,
    pull: !values['no-pull'],
    temporalCli: () => ensureTemporalCli({ log }),
  });
  for (const line of report) console.log(line);
  const compose = (await composeCommands(process.env))[0];
  console.log(
    compose
      ? `\nnext, from ${repo}:\n  mkdir -p runs && ${compose.join(' ')} up -d --build`
      : '\nnext: install Docker Compose (the `docker compose` plugin, or Debian\'s `apt-get install docker-compose`), then `mkdir -p runs && docker compose up -d --build`',
  );
  return 0;
}

try {
  process.exitCode = await main();
} catch (err) {
  console.error(`[docker:base-images] ${err.message}`);
  process.exitCode = 1;
}
