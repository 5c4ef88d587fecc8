// Runs the Python reference (tinker-cookbook 0.6.1, cached venv) to produce parity cases at test
// time; see reference_cases.py for what each topic computes.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

/** What the reference returned for one call: a value, or the type of the exception it raised. */
export type Outcome<T = unknown> = { ok: T } | { error: string; message: string };

export interface ReferenceCase<I = Record<string, unknown>, E = unknown> {
  id: string;
  input: I;
  expected: E;
}

export interface TopicRequest {
  topic: string;
  args?: Record<string, unknown>;
}

/** Cases for each request, from one reference process (its imports take seconds). */
export async function referenceCases(requests: TopicRequest[]): Promise<ReferenceCase<any, any>[][]> {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const r = spawnSync(python, [path.join(here, 'reference_cases.py'), JSON.stringify(requests)], {
    encoding: 'utf8',
    maxBuffer: 512 * 1024 * 1024,
    // Nothing may reach for the Hub: the inputs are local tokenizer folders.
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
  });
  if (r.status !== 0) throw new Error(`reference_cases.py failed (${r.status}):\n${r.stderr}`);
  const out = JSON.parse(r.stdout) as { results: Array<{ cases: ReferenceCase[] }> };
  return out.results.map((x) => x.cases);
}

/** Runs `fn` as the TypeScript side of an Outcome: its value, or the error's name. */
export function outcome<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: fn() };
  } catch (e) {
    return { error: (e as Error).name, message: (e as Error).message };
  }
}

/** Outcomes agree when both return equal values or both refuse (error types differ by language). */
export function sameOutcome(ts: Outcome, ref: Outcome): { ts: unknown; ref: unknown } {
  const view = (o: Outcome) => ('ok' in o ? o.ok : 'refused');
  return { ts: view(ts), ref: view(ref) };
}
