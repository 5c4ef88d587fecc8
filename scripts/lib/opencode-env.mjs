// opencode (the MIT agent harness, npm `opencode-ai`), installed once into
// ~/.cache/durable-cookbook/opencode-<version> for the test that points a real agent harness at
// `cookbook serve`'s Anthropic API (test/serve/opencode.full.test.ts). It is not a dependency of the
// repo: npm fetches the launcher and its platform binary (an optional dependency of the launcher,
// so nothing is downloaded from outside the npm registry) under a temporary name, renamed into
// place when complete. `node scripts/lib/opencode-env.mjs` (npm run opencode:install) installs it.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cacheRoot } from '../../src/stack/cache.mjs';

export const OPENCODE_VERSION = '1.18.33';

export function opencodeDir() {
  return path.join(cacheRoot(), `opencode-${OPENCODE_VERSION}`);
}

/**
 * The opencode binary, installed first if need be.
 * @param {{ log?: (chunk: string) => void }} [opts]
 * @returns {{ bin: string, version: string }}
 */
export function ensureOpencode(opts = {}) {
  const log = opts.log ?? ((chunk) => process.stderr.write(chunk));
  const dir = opencodeDir();
  const bin = path.join(dir, 'node_modules', '.bin', 'opencode');
  if (fs.existsSync(bin)) return { bin, version: OPENCODE_VERSION };
  fs.mkdirSync(cacheRoot(), { recursive: true });
  const tmp = path.join(cacheRoot(), `.opencode-${OPENCODE_VERSION}.tmp-${process.pid}`);
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp);
  log(`[opencode] installing opencode-ai@${OPENCODE_VERSION} into ${dir}\n`);
  try {
    fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'cookbook-opencode', private: true }));
    // The launcher's postinstall links the binary its platform package (this CPU's) already holds.
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel', 'error', `opencode-ai@${OPENCODE_VERSION}`], { cwd: tmp, stdio: ['ignore', 'inherit', 'inherit'] });
    execFileSync(path.join(tmp, 'node_modules', '.bin', 'opencode'), ['--version'], { stdio: 'ignore', timeout: 60_000 });
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`could not install opencode-ai@${OPENCODE_VERSION}: ${err.message}`);
  }
  try {
    fs.renameSync(tmp, dir);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(bin)) throw err; // else another process installed it meanwhile
  }
  return { bin, version: OPENCODE_VERSION };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(ensureOpencode())}\n`);
}
