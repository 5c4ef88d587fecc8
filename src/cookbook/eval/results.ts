// The files an evaluation leaves in its run folder: results.json (aggregate + every example) and
// results.md (the table the CLI prints), plus the per-chunk claim-check blobs they are built from.
import type { ExampleResult } from './suites/index.js';
import type { SkippedRow } from './suites/types.js';

export const chunkBlobPath = (chunk: number) => `eval/chunk_${String(chunk).padStart(6, '0')}.json`;

export interface ChunkBlob {
  format: 'eval_chunk/v1';
  suite: string;
  chunk: number;
  results: ExampleResult[];
}

export interface EvalResultsFile {
  format: 'eval_results/v1';
  suite: string;
  model: string;
  base_model: string;
  data: string;
  sampling: { max_tokens: number; temperature: number; seed: number; num_samples: number };
  metrics: Record<string, number>;
  /** The rows left out as ones this port cannot check (metrics.num_skipped of them); absent when none was. */
  skipped?: SkippedRow[];
  examples: ExampleResult[];
}

/** metrics.num_skipped when rows were skipped (absent otherwise, so a run that skips nothing keeps the reference's keys). */
export const skippedMetrics = (skipped: readonly unknown[]): Record<string, number> => (skipped.length ? { num_skipped: skipped.length } : {});

/**
 * The line that marks a score over part of the set: a score with rows skipped is not the number a
 * published full-set score is; null when nothing was skipped.
 */
export function partialScoreNote(metrics: Record<string, number>): string | null {
  const skipped = metrics.num_skipped ?? 0;
  if (skipped === 0) return null;
  const scored = metrics.num_examples ?? 0;
  return `PARTIAL: ${skipped} of ${scored + skipped} rows skipped (this port or machine cannot run or check them; each is listed with why), the score is over the other ${scored} and is not comparable with a published full-set score`;
}

const fmt = (key: string, v: number) => (Number.isInteger(v) && !/acc|score|pass@|_rate|mean_/.test(key) ? String(v) : v.toFixed(4));

/**
 * A Markdown table of the aggregate metrics, headed by what was evaluated; with rows skipped, the
 * partial-score note under the heading and, given `skipped`, each skipped row with why below.
 */
export function resultsTable(r: Pick<EvalResultsFile, 'suite' | 'model' | 'data' | 'metrics'>, skipped: readonly SkippedRow[] = []): string {
  const rows = Object.entries(r.metrics).map(([k, v]) => [k, fmt(k, v)]);
  const w = Math.max('metric'.length, ...rows.map(([k]) => k.length));
  const v = Math.max('value'.length, ...rows.map(([, x]) => x.length));
  const note = partialScoreNote(r.metrics);
  return [
    `suite ${r.suite} · model ${r.model} · data ${r.data}`,
    '',
    ...(note ? [note, ''] : []),
    `| ${'metric'.padEnd(w)} | ${'value'.padStart(v)} |`,
    `| ${'-'.repeat(w)} | ${'-'.repeat(v - 1)}: |`,
    ...rows.map(([k, x]) => `| ${k.padEnd(w)} | ${x.padStart(v)} |`),
    ...(skipped.length ? ['', ...skipped.map((s) => `- SKIPPED ${s.id} (${s.at}): ${s.reason}`)] : []),
  ].join('\n');
}
