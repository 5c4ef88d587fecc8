// Inspect AI's Python environment for `cookbook eval --inspect`: a cached venv under
// ~/.cache/durable-cookbook (inspect-ai plus the OpenAI client its OpenAI-compatible provider
// needs), built on first use the way the engine's is (buildCachedVenv: once, under a temporary
// name, locked against concurrent builders). The pins are part of the name, so a new pin builds a
// new venv beside the old one.
import fs from 'node:fs';
import path from 'node:path';

import { cacheRoot } from './cache.mjs';
import { buildCachedVenv } from './engine-env.mjs';

export const INSPECT_AI_VERSION = '0.3.285';
export const OPENAI_PY_VERSION = '3.57.0';

export function inspectVenvPath() {
  return path.join(cacheRoot(), `inspect-venv-${INSPECT_AI_VERSION}-${OPENAI_PY_VERSION}`);
}

/**
 * Ensures the Inspect AI venv exists (building it the first time: a few hundred MB from PyPI).
 * @param {{ log?: (chunk: string) => void }} [opts]
 * @returns {Promise<{ python: string, inspect: string, venv: string }>}
 */
export async function ensureInspectEnv(opts = {}) {
  const log = opts.log ?? ((chunk) => process.stderr.write(chunk));
  const venv = inspectVenvPath();
  const packages = [`inspect-ai==${INSPECT_AI_VERSION}`, `openai==${OPENAI_PY_VERSION}`];
  await buildCachedVenv(venv, {
    log,
    banner: `[inspect-env] building ${venv} (${packages.join(', ')}); the first use downloads Inspect AI, which takes a minute or two`,
    marker: { packages },
    install: async (python, run) => {
      await run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--quiet', ...packages]);
    },
  });
  const python = path.join(venv, 'bin', 'python');
  if (!fs.existsSync(python)) throw new Error(`the Inspect AI venv ${venv} has no bin/python; remove it to rebuild`);
  return { python, inspect: path.join(venv, 'bin', 'inspect'), venv };
}
