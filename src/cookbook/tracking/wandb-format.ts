// What Weights & Biases stores for a run, in its own formats: the run id, the config as
// `config.yaml` (every key `{desc, value}`) and as the GraphQL `config` JSON string, and history
// rows (`_step` is W&B's step axis).
import { createHash } from 'node:crypto';

/** A W&B run id (8 lowercase base-36 characters) fixed by the workflow id: every worker that syncs the run names the same one. */
export function wandbRunId(workflowId: string): string {
  const n = BigInt(`0x${createHash('sha256').update(workflowId).digest('hex').slice(0, 16)}`);
  return n.toString(36).padStart(8, '0').slice(-8);
}

/** `{key: {desc: null, value}}`: how W&B keeps a run's config. */
export function wandbConfig(config: Record<string, unknown>): Record<string, { desc: null; value: unknown }> {
  return Object.fromEntries(Object.entries(config).map(([k, value]) => [k, { desc: null, value }]));
}

/**
 * config.yaml as wandb writes it: `key:` / `  desc: null` / `  value: …`, values in JSON's flow
 * syntax (valid YAML), so any YAML reader (and `wandb sync`'s) reads the same values.
 */
export function configYaml(config: Record<string, unknown>): string {
  const lines = ['wandb_version: 1', ''];
  for (const [key, value] of Object.entries(config)) lines.push(`${JSON.stringify(key)}:`, '  desc: null', `  value: ${JSON.stringify(value ?? null)}`);
  return `${lines.join('\n')}\n`;
}

/** A metrics.jsonl row as a W&B history row: its step as `_step` (W&B drops non-finite numbers to null). */
export function historyRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row, _step: row.step };
  for (const [k, v] of Object.entries(out)) if (typeof v === 'number' && !Number.isFinite(v)) out[k] = null;
  return out;
}

/** The summary: the last value of every key, plus what the run finished with. */
export function summaryOf(rows: Array<Record<string, unknown>>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const summary: Record<string, unknown> = {};
  for (const row of rows) Object.assign(summary, historyRow(row));
  return { ...summary, ...extra };
}
