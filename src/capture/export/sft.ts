// Captured rows → a supervised dataset `cookbook train sl` reads as it is (a conversations JSONL
// whose rows carry their exact tokens: supervised/token-record.ts). Each record is the model's own
// tokens: the prompt as it was sampled from (weight 0) and what the model sampled (weight 1), so
// training sees what sampling saw. A session's exchanges are joined into one record when each
// prompt starts with the previous prompt and its sample, token for token (an agent loop whose
// history re-renders exactly): every sampled stretch is then trained on, as a renderer's
// all-assistant-messages example would be. Where the re-rendered history differs from what was
// sampled, the exchange starts a record of its own rather than train on tokens the model never saw.
import type { JsonValue, WireRow } from '../rows.js';
import { metadataOf } from './filter.js';

export interface SftRecord {
  /** The readable view: the conversation and the model's answer (SL's check that there is one). */
  messages: JsonValue[];
  tokens: number[];
  weights: number[];
  /** Where the record came from: the store's cursors, run and session. */
  source: { run_id: string; session: string; cursors: number[] };
}

export interface SftExport {
  records: SftRecord[];
  /** Rows left out, and why (no tokens; images, whose tokens are not in the store). */
  skipped: { noTokens: number; images: number };
}

const startsWith = (seq: readonly number[], prefix: readonly number[]) => prefix.length <= seq.length && prefix.every((t, i) => seq[i] === t);

/** Rows of one session: serve's session id (else the exchange), a run's trajectory. */
function sessionOf(row: WireRow): string {
  const meta = metadataOf(row);
  if (typeof meta.session_id === 'string') return `session:${meta.session_id}`;
  if (row.traj_idx !== null || row.group_idx !== null) return `traj:${row.run_attempt ?? 0}/${row.iteration}/${row.group_idx}/${row.traj_idx}/${row.sample_idx}`;
  return `exchange:${row.sampling_session_id ?? row.cursor}`;
}

/** The readable view; rows without one (a run's rollouts keep only tokens) say how many tokens stand there. */
function messagesOf(row: WireRow): JsonValue[] {
  const meta = metadataOf(row);
  const text = (key: string, tokens: number[] | null) => (typeof meta[key] === 'string' ? meta[key] : `(${tokens?.length ?? 0} tokens)`);
  const completion = meta.completion ?? { role: 'assistant', content: text('sampled_text', row.sampled_tokens) };
  if (Array.isArray(meta.messages)) return [...meta.messages, completion];
  return [{ role: 'user', content: text('prompt_text', row.prompt_tokens) }, completion];
}

export function sftRecords(rows: readonly WireRow[]): SftExport {
  const skipped = { noTokens: 0, images: 0 };
  const open = new Map<string, SftRecord[]>();
  const order: SftRecord[] = [];
  for (const row of [...rows].sort((a, b) => a.cursor - b.cursor)) {
    if (!row.prompt_tokens || !row.sampled_tokens?.length) {
      skipped.noTokens += 1;
      continue;
    }
    if (Number(metadataOf(row).prompt_images ?? 0) > 0) {
      skipped.images += 1;
      continue;
    }
    const prompt = row.prompt_tokens;
    const session = sessionOf(row);
    const candidates = open.get(session) ?? [];
    // The longest open record of the session this prompt extends (n samples of one turn are branches).
    const extended = candidates.filter((r) => startsWith(prompt, r.tokens)).sort((a, b) => b.tokens.length - a.tokens.length)[0];
    const record: SftRecord = {
      messages: messagesOf(row),
      tokens: [...prompt, ...row.sampled_tokens],
      weights: [...(extended?.weights ?? []), ...new Array<number>(prompt.length - (extended?.tokens.length ?? 0)).fill(0), ...new Array<number>(row.sampled_tokens.length).fill(1)],
      source: { run_id: row.run_id, session, cursors: [...(extended?.source.cursors ?? []), row.cursor] },
    };
    if (extended) {
      order[order.indexOf(extended)] = record;
      candidates[candidates.indexOf(extended)] = record;
    } else {
      order.push(record);
      candidates.push(record);
    }
    open.set(session, candidates);
  }
  return { records: order, skipped };
}
