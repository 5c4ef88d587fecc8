// Runs the Python reference (tinker-cookbook 0.6.1, cached venv) to produce parity cases at test
// time; see reference_cases.py for what each topic computes.
import { spawn } from 'node:child_process';
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

/**
 * The reference process of this test worker: reference_cases.py --serve, started on first use and
 * kept for every parity file the worker runs (the suite shares modules across files), so the
 * reference's imports, seconds each, are paid once. It ends with the worker: stdin closes.
 */
interface ReferenceServer {
  ask(requests: TopicRequest[]): Promise<string>;
}
let server: Promise<ReferenceServer> | undefined;

async function startServer(): Promise<ReferenceServer> {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  const child = spawn(python, [path.join(here, 'reference_cases.py'), '--serve'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    // Nothing may reach for the Hub: the inputs are local tokenizer folders.
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' },
  });
  child.unref();
  for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void }).unref?.();
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-20_000)));
  const waiting: Array<{ resolve: (line: string) => void; reject: (e: Error) => void }> = [];
  let buffered = '';
  child.stdout.on('data', (c: Buffer) => {
    buffered += c.toString();
    for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
      waiting.shift()?.resolve(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
    }
  });
  child.on('exit', (code) => {
    server = undefined;
    for (const w of waiting.splice(0)) w.reject(new Error(`reference_cases.py exited (${code}):\n${stderr}`));
  });
  // Requests are answered in order, one line each.
  return {
    ask: (requests) =>
      new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        child.stdin.write(`${JSON.stringify(requests)}\n`);
      }),
  };
}

/**
 * Runs a Python script to its end and collects its exit status and output. `input`, when given, is
 * written to its stdin, which is then closed; without it stdin is left open and unused.
 */
export function runPythonScript(
  python: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(python, args, { env: opts.env });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c));
    p.stderr.on('data', (c: Buffer) => (stderr += c));
    p.on('close', (status: number | null) => resolve({ status, stdout, stderr }));
    if (opts.input !== undefined) p.stdin.end(opts.input);
  });
}

/** Cases for each request, from the worker's reference process. */
export async function referenceCases(requests: TopicRequest[]): Promise<ReferenceCase<any, any>[][]> {
  server ??= startServer();
  const out = JSON.parse(await (await server).ask(requests)) as { results?: Array<{ cases: ReferenceCase[] }>; failure?: string };
  if (out.failure) throw new Error(`reference_cases.py failed: ${out.failure}`);
  return out.results!.map((x) => x.cases);
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
