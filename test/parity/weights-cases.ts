// The weights parity files' three phases, each a mode of one cases script: `build` the tiny seeded
// bases and adapters (engine venv), `reference` runs the reference's weights module on them (its
// venv), `ours` runs ours and compares, printing the per-family results as JSON on its last line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { engineProcessEnv, ensureEngineEnv } from '../../src/stack/engine-env.mjs';
import { runPythonScript } from './reference.js';

const OFFLINE = { HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' };

export interface WeightsCases<R> {
  results: Record<string, R>;
  /** Removes the cases' working folder. */
  remove(): void;
}

export async function runWeightsCases<R>(script: string): Promise<WeightsCases<R>> {
  const name = path.basename(script);
  const work = mkdtempSync(path.join(tmpdir(), `${name.replace(/\.py$/, '')}-`));
  const run = async (python: string, mode: string, env: NodeJS.ProcessEnv): Promise<string> => {
    const r = await runPythonScript(python, [script, mode, work], { env });
    if (r.status !== 0) throw new Error(`${name} ${mode} exited ${r.status}:\n${r.stderr.slice(-3000)}`);
    return r.stdout;
  };
  try {
    const engine = (await ensureEngineEnv()).python;
    const reference = (await ensureReferenceEnv({ log: () => {} })).python;
    await run(engine, 'build', engineProcessEnv(OFFLINE));
    await run(reference, 'reference', { ...process.env, ...OFFLINE });
    const results = JSON.parse((await run(engine, 'ours', engineProcessEnv(OFFLINE))).trim().split('\n').pop()!);
    return { results, remove: () => rmSync(work, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    throw err;
  }
}
