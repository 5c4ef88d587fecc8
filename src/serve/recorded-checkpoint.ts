// What a run recorded about a checkpoint it saved (its checkpoints.jsonl row, else its config.json):
// the base model, renderer and tokenizer to serve it with, for servers whose weights_info does not
// answer for the paths they invent (SkyRL-tx names sampler checkpoints `tinker://<model>/<name>`
// and its weights_info takes only `…/weights/…` paths).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface RecordedCheckpoint {
  /** The run folder whose checkpoints.jsonl lists the path. */
  runDir: string;
  baseModel: string;
  rendererName: string | null;
  /** A local tokenizer folder the run trained with (null: the base model's own tokenizer). */
  tokenizerPath: string | null;
}

/**
 * The record of `tinkerPath` in the given run folders, else in the runs under `./runs` (the
 * default place of local runs); undefined when no local run lists it. A run in an object store
 * is not searched: give its local mirror with `--run`.
 */
export function findRecordedCheckpoint(tinkerPath: string, runDirs: string[] = []): RecordedCheckpoint | undefined {
  const candidates = runDirs.length ? runDirs.map((d) => resolve(d)) : runsUnder(resolve('runs'));
  for (const dir of candidates) {
    const found = recordIn(dir, tinkerPath);
    if (found) return found;
  }
  return undefined;
}

function runsUnder(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => join(root, e.name));
}

function recordIn(runDir: string, tinkerPath: string): RecordedCheckpoint | undefined {
  const rows = readJsonLines(join(runDir, 'checkpoints.jsonl'));
  const row = rows.find((r) => r.sampler_path === tinkerPath || r.state_path === tinkerPath);
  if (!row) return undefined;
  const config = readJson(join(runDir, 'config.json'));
  const baseModel = str(row.base_model) ?? str(config?.model_name);
  if (!baseModel) return undefined;
  // The row's tokenizer is tokenizer_path when the run set one, else the base model's name.
  const tokenizer = str(row.tokenizer);
  const tokenizerPath = tokenizer && tokenizer !== baseModel ? tokenizer : (str(config?.tokenizer_path) ?? null);
  return { runDir, baseModel, rendererName: str(row.renderer_name) ?? str(config?.renderer_name) ?? null, tokenizerPath };
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : undefined;
}

function readJson(file: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function readJsonLines(file: string): Array<Record<string, unknown>> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const rows: Array<Record<string, unknown>> = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) rows.push(v as Record<string, unknown>);
    } catch {
      // a torn last line (a run killed mid-write) lists nothing
    }
  }
  return rows;
}
