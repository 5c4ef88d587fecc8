// The Python reference (tinker-cookbook 0.6.1) in a cached venv under
// ~/.cache/durable-cookbook/reference-venv-<hash>, for the parity suite (test/parity).
//
// tinker-cookbook 0.6.1 declares tml-renderers>=0.4.1, which PyPI here does not serve; its text
// renderers work with 0.2.1, so the cookbook goes in without its declared dependencies and the
// pinned list in test/parity/requirements.txt supplies them. PyTorch, transformers and numpy come
// from the engine's venv (a .pth file puts its site-packages on the path) rather than a second
// multi-gigabyte PyTorch download.

import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cacheRoot } from '../../src/stack/cache.mjs';
import { REPO_ROOT, buildCachedVenv, ensureEngineEnv } from '../../src/stack/engine-env.mjs';

export const REFERENCE_VERSION = '0.6.1';
const REQUIREMENTS = path.join(REPO_ROOT, 'test', 'parity', 'requirements.txt');

function sitePackages(python) {
  const r = spawnSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cannot locate site-packages of ${python}: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * Ensures the reference venv exists (building the engine venv first if needed).
 * @param {{ log?: (chunk: string) => void }} [opts]
 * @returns {Promise<{ python: string, venv: string }>}
 */
export async function ensureReferenceEnv(opts = {}) {
  const log = opts.log ?? ((chunk) => process.stderr.write(chunk));
  const engine = await ensureEngineEnv({ log });
  const requirements = fs.readFileSync(REQUIREMENTS, 'utf8');
  const hash = createHash('sha256')
    .update(`${REFERENCE_VERSION}\n${engine.venv}\n${requirements}`)
    .digest('hex')
    .slice(0, 12);
  const venv = path.join(cacheRoot(), `reference-venv-${hash}`);
  await buildCachedVenv(venv, {
    log,
    banner: `[reference-env] building ${venv} (tinker-cookbook ${REFERENCE_VERSION} for the parity suite)`,
    marker: { reference: REFERENCE_VERSION, requirements },
    install: async (python, run) => {
      fs.writeFileSync(path.join(sitePackages(python), 'engine-venv.pth'), `${sitePackages(engine.python)}\n`);
      const pip = [python, '-m', 'pip', 'install', '--disable-pip-version-check', '--quiet'];
      await run(pip[0], [...pip.slice(1), '--no-deps', `tinker-cookbook==${REFERENCE_VERSION}`]);
      await run(pip[0], [...pip.slice(1), '-r', REQUIREMENTS]);
    },
  });
  return { python: path.join(venv, 'bin', 'python'), venv };
}
