#!/usr/bin/env node
// `npm run engine -- --port <p> [--data-dir <dir>] [...]`: ensures the engine venv, then runs the
// engine server in the foreground with the given arguments (see engine/README.md for flags).

import { spawn } from 'node:child_process';
import os from 'node:os';

import { ENGINE_DIR, engineProcessEnv, ensureEngineEnv } from './engine-env.mjs';

const { python } = await ensureEngineEnv();
const child = spawn(python, ['-m', 'tinker_engine', ...process.argv.slice(2)], {
  cwd: ENGINE_DIR,
  env: engineProcessEnv(),
  stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('exit', (code, signal) => process.exit(code ?? 128 + (os.constants.signals[signal] ?? 1)));
