// Captured rows → a comparisons JSONL the DPO workflow (and reward-model SL) reads as it is
// (`{"prompt_conversation", "chosen", "rejected"}`, preference/comparisons.ts): samples of one
// prompt (the same prompt tokens in one run) ranked by a reward column; the best is chosen over
// the worst. Prompts whose samples all score the same make no pair. DPO renders the messages
// itself: its datums are the renderer's, not the captured tokens.
import type { JsonValue, WireRow } from '../rows.js';
import { metadataOf } from './filter.js';

export interface ComparisonRecord {
  prompt_conversation: JsonValue[];
  chosen: JsonValue[];
  rejected: JsonValue[];
  source: { run_id: string; chosen: { cursor: number; reward: number }; rejected: { cursor: number; reward: number } };
}

export interface ComparisonsExport {
  records: ComparisonRecord[];
  skipped: { noReward: number; noConversation: number; noPair: number };
}

export function comparisonRecords(rows: readonly WireRow[], reward: (row: WireRow) => number | undefined): ComparisonsExport {
  const skipped = { noReward: 0, noConversation: 0, noPair: 0 };
  const groups = new Map<string, { row: WireRow; reward: number }[]>();
  for (const row of [...rows].sort((a, b) => a.cursor - b.cursor)) {
    const r = reward(row);
    if (r === undefined) {
      skipped.noReward += 1;
      continue;
    }
    if (!Array.isArray(metadataOf(row).messages) || !metadataOf(row).completion) {
      skipped.noConversation += 1;
      continue;
    }
    const key = `${row.run_id}\u0000${JSON.stringify(row.prompt_tokens)}`;
    groups.set(key, [...(groups.get(key) ?? []), { row, reward: r }]);
  }
  const records: ComparisonRecord[] = [];
  for (const group of groups.values()) {
    // Stable: of equal rewards the earliest captured is kept.
    const ranked = [...group].sort((a, b) => b.reward - a.reward);
    const best = ranked[0];
    const worst = ranked[ranked.length - 1];
    if (ranked.length < 2 || best.reward === worst.reward) {
      skipped.noPair += group.length;
      continue;
    }
    records.push({
      prompt_conversation: metadataOf(best.row).messages as JsonValue[],
      chosen: [metadataOf(best.row).completion as JsonValue],
      rejected: [metadataOf(worst.row).completion as JsonValue],
      source: { run_id: best.row.run_id, chosen: { cursor: best.row.cursor, reward: best.reward }, rejected: { cursor: worst.row.cursor, reward: worst.reward } },
    });
  }
  return { records, skipped };
}
