// wandb's own view of an offline run: the record stream read by wandb's DataStore and Record
// protobuf class (test/support/wandb_read_stream.py, in the cached wandb venv), and the exit code
// and output of `wandb sync --view --verbose <dir>`, which needs a key but no network.
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureWandbEnv } from '../../scripts/lib/wandb-venv.mjs';

export interface WandbStreamRecord {
  type: string;
  num: number;
  body: any;
  /** Artifact records: the manifest digest wandb computes from the record's entries. */
  wandb_manifest_digest?: string;
  /** Artifact records: the wandb_manifest.json wandb's saver writes for the record's entries. */
  wandb_manifest_json?: string;
}

const run = promisify(execFile);

export async function readWandbStream(file: string): Promise<WandbStreamRecord[]> {
  const { python } = await ensureWandbEnv({ log: () => {} });
  const { stdout } = await run(python, [join(import.meta.dirname, 'wandb_read_stream.py'), file], { maxBuffer: 64 << 20 });
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as WandbStreamRecord);
}

/** `{key: value_json}` items (history, summary, config) back to plain values. */
export const itemsOf = (items: Array<{ key: string; value_json: string }> = []) => Object.fromEntries(items.map((i) => [i.key, JSON.parse(i.value_json)]));

export async function wandbSyncView(dir: string): Promise<{ code: number; output: string }> {
  const { python } = await ensureWandbEnv({ log: () => {} });
  // A syntactically valid key and an unreachable server: --view must not need either.
  const env: NodeJS.ProcessEnv = { ...process.env, WANDB_API_KEY: 'a'.repeat(40), WANDB_BASE_URL: 'http://127.0.0.1:9' };
  delete env.WANDB_MODE;
  // Its debug log goes to the working directory: not into the run directory.
  const cwd = mkdtempSync(join(tmpdir(), 'wandb-sync-view-'));
  try {
    const { stdout, stderr } = await run(python, ['-m', 'wandb', 'sync', '--view', '--verbose', dir], { env, cwd, maxBuffer: 64 << 20, timeout: 120_000 });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
