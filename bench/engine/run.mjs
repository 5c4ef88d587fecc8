#!/usr/bin/env node
// `npm run bench:engine [-- --threads N ...]`: starts the engine on a free loopback port and runs
// bench_engine.py against it (engine over HTTP vs plain PyTorch / transformers generate in-process),
// plus a second engine with --continuous-batching for the concurrent-requests comparison.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ENGINE_DIR, engineProcessEnv, ensureEngineEnv } from '../../scripts/lib/engine-env.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const threadsAt = args.indexOf('--threads');
const threads = threadsAt >= 0 ? args.splice(threadsAt, 2)[1] : String(os.availableParallelism());

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url, child) {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`engine exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${url}/api/v1/healthz`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('engine did not become healthy');
}

const { python } = await ensureEngineEnv();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-bench-'));
const engines = [];
/** An engine on a free port; the second one batches concurrent sample requests. */
async function startEngine(name, extra) {
  const port = await freePort();
  const child = spawn(
    python,
    ['-m', 'tinker_engine', '--port', String(port), '--data-dir', path.join(dataDir, name), '--threads', threads, '--log-level', 'warning', ...extra],
    { cwd: ENGINE_DIR, env: engineProcessEnv(), stdio: 'inherit', detached: true },
  );
  engines.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, child);
  return url;
}
const stopEngines = () => {
  for (const child of engines) {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
};
process.on('exit', stopEngines);
let code = 1;
try {
  const url = await startEngine('plain', []);
  const batchingUrl = await startEngine('batching', ['--continuous-batching']);
  code = await new Promise((resolve) => {
    const bench = spawn(python, [path.join(here, 'bench_engine.py'), '--url', url, '--batching-url', batchingUrl, '--threads', threads, ...args], {
      env: engineProcessEnv(),
      stdio: 'inherit',
    });
    bench.on('exit', (c) => resolve(c ?? 1));
  });
} finally {
  stopEngines();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(code);
