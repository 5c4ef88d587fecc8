// Runs the engine's pytest suite (engine/tests) with the cached engine venv.
// `node scripts/lib/engine-test.mjs [pytest args]` or `await runEngineTests({ args })`.

import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ENGINE_DIR, engineProcessEnv, ensureEngineEnv } from '../../src/stack/engine-env.mjs';

/**
 * @param {{ args?: string[], extraArgs?: string[], junitXml?: string, logFile?: string }} [opts]
 *   args / extraArgs: extra pytest arguments (e.g. ['-k', 'conformance']);
 *   junitXml: also write a JUnit XML report to this path;
 *   logFile: write pytest's output there instead of this process's stdout
 * @returns {Promise<number>} pytest's exit code
 */
export async function runEngineTests(opts = {}) {
  const { python } = await ensureEngineEnv();
  const args = ['-m', 'pytest', 'tests', ...(opts.args ?? []), ...(opts.extraArgs ?? [])];
  if (opts.junitXml) args.push(`--junitxml=${opts.junitXml}`);
  const log = opts.logFile ? openSync(opts.logFile, 'w') : undefined;
  return new Promise((resolve) => {
    const child = spawn(python, args, {
      cwd: ENGINE_DIR,
      env: engineProcessEnv({ TINKER_TELEMETRY: '0' }),
      stdio: log === undefined ? 'inherit' : ['ignore', log, log],
    });
    if (log !== undefined) closeSync(log);
    child.on('error', () => resolve(1));
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exit(await runEngineTests({ args: process.argv.slice(2) }));
}
