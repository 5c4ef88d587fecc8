// Which captured rows a dataset is made from: by run, purpose, time, tool use, and a reward or
// label column (a metadata field, or an annotation of that kind naming the row).
import type { Annotation, JsonValue, WireRow } from '../rows.js';

export interface RowFilter {
  runIds?: string[];
  purpose?: string;
  /** Unix seconds, inclusive. */
  since?: number;
  until?: number;
  /** Only rows whose exchange used tools (offered a call, made one, or carried a tool result). */
  toolUse?: boolean;
  /** Only rows whose `rewardKey` is at least this. */
  minReward?: number;
  /** Only rows whose metadata field equals the value (JSON, compared as text). */
  label?: { key: string; value: JsonValue };
}

/** The metadata field a reward is read from by default. */
export const DEFAULT_REWARD_KEY = 'reward';

/** A row's dedupe key, as annotations name the row they are about. */
export const rowKey = (r: { sampling_session_id: string | null; seq_id: number | null; sample_idx: number | null }) =>
  `${r.sampling_session_id}/${r.seq_id}/${r.sample_idx}`;

/**
 * Rewards and labels given to rows after they were captured: annotations whose kind is the key
 * (e.g. "reward") and whose payload names the row (`sampling_session_id`, `seq_id`, `sample_idx`)
 * and carries the value as `value` or under the key itself (`{"reward": 1, …}`). The latest wins.
 */
export function annotatedValues(annotations: readonly Annotation[], key: string): Map<string, JsonValue> {
  const values = new Map<string, JsonValue>();
  for (const a of [...annotations].sort((x, y) => x.cursor - y.cursor)) {
    if (a.kind !== key || a.payload === null || typeof a.payload !== 'object' || Array.isArray(a.payload)) continue;
    const p = a.payload as Record<string, JsonValue>;
    const value = 'value' in p ? p.value : p[key];
    if (value === undefined) continue;
    values.set(rowKey({ sampling_session_id: (p.sampling_session_id as string) ?? null, seq_id: (p.seq_id as number) ?? null, sample_idx: (p.sample_idx as number) ?? null }), value);
  }
  return values;
}

export function metadataOf(row: WireRow): Record<string, JsonValue> {
  return row.metadata !== null && typeof row.metadata === 'object' && !Array.isArray(row.metadata) ? (row.metadata as Record<string, JsonValue>) : {};
}

/** A row's value for `key`: its metadata field, else the annotation naming it. */
export function valueOf(row: WireRow, key: string, annotated: Map<string, JsonValue> | undefined): JsonValue | undefined {
  const meta = metadataOf(row);
  if (key in meta && meta[key] !== null) return meta[key];
  return annotated?.get(rowKey(row));
}

export function rewardOf(row: WireRow, key: string, annotated: Map<string, JsonValue> | undefined): number | undefined {
  const v = valueOf(row, key, annotated);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function keepRow(row: WireRow, f: RowFilter, reward: (r: WireRow) => number | undefined, label: (r: WireRow) => JsonValue | undefined): boolean {
  if (f.runIds?.length && !f.runIds.includes(row.run_id)) return false;
  if (f.purpose !== undefined && row.purpose !== f.purpose) return false;
  if (f.since !== undefined && (row.created_at ?? -Infinity) < f.since) return false;
  if (f.until !== undefined && (row.created_at ?? Infinity) > f.until) return false;
  if (f.toolUse && metadataOf(row).tool_use !== true) return false;
  if (f.minReward !== undefined) {
    const r = reward(row);
    if (r === undefined || r < f.minReward) return false;
  }
  if (f.label && JSON.stringify(label(row)) !== JSON.stringify(f.label.value)) return false;
  return true;
}

/** The rows to export, in capture order. */
export function filterRows(rows: readonly WireRow[], f: RowFilter, rewardKey = DEFAULT_REWARD_KEY, annotations: readonly Annotation[] = []): WireRow[] {
  const rewards = annotatedValues(annotations, rewardKey);
  const labels = f.label ? annotatedValues(annotations, f.label.key) : undefined;
  const reward = (r: WireRow) => rewardOf(r, rewardKey, rewards);
  const label = (r: WireRow) => (f.label ? valueOf(r, f.label.key, labels) : undefined);
  return rows.filter((r) => keepRow(r, f, reward, label)).sort((a, b) => a.cursor - b.cursor);
}
