// The real wandb client (pinned to the last line of releases that still ship the Python reader of
// the record stream, wandb/sdk/internal/datastore.py, and the legacy `wandb sync --view`) in a cached venv under ~/.cache/durable-cookbook/wandb-venv-<version>,
// so the tracking tests read the offline runs we write with wandb's own reader (its datastore and
// protobuf classes) and `wandb sync`, instead of trusting our own decoder.
import fs from 'node:fs';
import path from 'node:path';
import { cacheRoot } from '../../src/stack/cache.mjs';
import { buildCachedVenv } from '../../src/stack/engine-env.mjs';

export const WANDB_VERSION = '0.22.3';

/**
 * Ensures the wandb venv exists (pip downloads wandb and its dependencies the first time).
 * @param {{ log?: (chunk: string) => void }} [opts]
 * @returns {Promise<{ python: string, wandb: string, venv: string }>}
 */
export async function ensureWandbEnv(opts = {}) {
  const log = opts.log ?? ((chunk) => process.stderr.write(chunk));
  const venv = path.join(cacheRoot(), `wandb-venv-${WANDB_VERSION}`);
  await buildCachedVenv(venv, {
    log,
    banner: `[wandb-env] building ${venv} (wandb ${WANDB_VERSION}, to read offline runs back)`,
    marker: { wandb: WANDB_VERSION },
    install: (python, run) => run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--quiet', `wandb==${WANDB_VERSION}`]),
  });
  const python = path.join(venv, 'bin', 'python');
  if (!fs.existsSync(python)) throw new Error(`wandb venv ${venv} has no bin/python; remove it to rebuild`);
  // The venv is built under a temporary name and renamed, so its console scripts' shebangs point
  // nowhere: the CLI is run as `python -m wandb`.
  return { python, venv };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = await ensureWandbEnv();
  process.stdout.write(`${JSON.stringify(env)}\n`);
}
