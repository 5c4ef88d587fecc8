// A TTS run's files: the reference's tts_per_problem.jsonl and tts_summary.json, and beside them
// every step's scores (tts_steps.jsonl), the sampled CoTs (tts_cots.jsonl) and the summary as a
// table (tts_summary.md). Chunks of problems are claim-check blobs until the run's last activity.
import type { TtsAggregate } from './analysis.js';
import type { ProblemRecord } from './problem.js';

export const TTS_FILES = {
  perProblem: 'tts_per_problem.jsonl',
  summary: 'tts_summary.json',
  steps: 'tts_steps.jsonl',
  cots: 'tts_cots.jsonl',
  table: 'tts_summary.md',
} as const;

export const ttsChunkBlobPath = (chunk: number) => `tts/chunk_${String(chunk).padStart(6, '0')}.json`;

export interface TtsChunkBlob {
  format: 'tts_chunk/v1';
  chunk: number;
  records: ProblemRecord[];
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** The numbers analyze.py prints at the end of a run, as a Markdown table. */
export function summaryTable(s: TtsAggregate): string {
  const rows: Array<[string, string]> = [
    ['problems', `${s.n_problems_succeeded}/${s.n_problems} succeeded`],
    ['model accuracy', pct(s.accuracy)],
    ['total steps', String(s.n_steps_total)],
    ['mean steps/problem', s.mean_steps_per_problem.toFixed(1)],
    ['mean TTS', s.mean_tts.toFixed(4)],
    ['high TTS (>= 0.7)', pct(s['frac_high_tts_0.7'])],
    ['high TTS (>= 0.3)', pct(s['frac_high_tts_0.3'])],
    ['decorative (<= 0.005)', pct(s['frac_decorative_0.005'])],
    ['self-verification steps', String(s.n_self_verification)],
    ['  of which decorative', `${s.n_sv_decorative} (${pct(s.frac_sv_decorative)})`],
  ];
  return ['| TTS | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}
