// Python tools the serve tests drive `cookbook serve` with — the official `openai` and `anthropic`
// clients and the Inspect AI evaluation harness — each in a cached venv under
// ~/.cache/durable-cookbook, built the way the repo's other Python tools are (buildCachedVenv: once,
// under a temporary name, locked).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildCachedVenv } from '../../src/stack/engine-env.mjs';
import { cacheRoot } from '../../src/stack/cache.mjs';
import { ensureInspectEnv as ensureProductInspectEnv, OPENAI_PY_VERSION } from '../../src/stack/inspect-env.mjs';

async function ensureVenv(name: string, packages: string[], log: (chunk: string) => void): Promise<{ python: string }> {
  const venv = join(cacheRoot(), name);
  await buildCachedVenv(venv, {
    log,
    banner: `[python-tools] building ${venv} (${packages.join(', ')}, for the serve tests)`,
    marker: { packages },
    install: (python, run) => run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--quiet', ...packages]),
  });
  const python = join(venv, 'bin', 'python');
  if (!existsSync(python)) throw new Error(`venv ${venv} has no bin/python; remove it to rebuild`);
  return { python };
}

const stderr = (chunk: string) => process.stderr.write(chunk);

/** The official OpenAI Python client. */
export const ensureOpenAIPythonEnv = (log = stderr) => ensureVenv(`openai-venv-${OPENAI_PY_VERSION}`, [`openai==${OPENAI_PY_VERSION}`], log);

/** The official Anthropic Python SDK (the Messages API tests). */
export const ANTHROPIC_PY_VERSION = '2.10.0';
export const ensureAnthropicPythonEnv = (log = stderr) => ensureVenv(`anthropic-venv-${ANTHROPIC_PY_VERSION}`, [`anthropic==${ANTHROPIC_PY_VERSION}`], log);

/** Inspect AI with the OpenAI client its OpenAI-compatible provider needs: the venv `cookbook eval --inspect` uses. */
export const ensureInspectEnv = (log = stderr) => ensureProductInspectEnv({ log });
