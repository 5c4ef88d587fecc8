// The files an evaluation leaves in its run folder: results.json (aggregate + every example) and
// results.md (the table the CLI prints), plus the per-chunk claim-check blobs they are built from.
import type { ExampleResult } from './suites/index.js';

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
  examples: ExampleResult[];
}

const fmt = (key: string, v: number) => (Number.isInteger(v) && !/acc|score|pass@|_rate|mean_/.test(key) ? String(v) : v.toFixed(4));

/** A Markdown table of the aggregate metrics, headed by what was evaluated. */
export function resultsTable(r: Pick<EvalResultsFile, 'suite' | 'model' | 'data' | 'metrics'>): string {
  const rows = Object.entries(r.metrics).map(([k, v]) => [k, fmt(k, v)]);
  const w = Math.max('metric'.length, ...rows.map(([k]) => k.length));
  const v = Math.max('value'.length, ...rows.map(([, x]) => x.length));
  return [
    `suite ${r.suite} · model ${r.model} · data ${r.data}`,
    '',
    `| ${'metric'.padEnd(w)} | ${'value'.padStart(v)} |`,
    `| ${'-'.repeat(w)} | ${'-'.repeat(v - 1)}: |`,
    ...rows.map(([k, x]) => `| ${k.padEnd(w)} | ${x.padStart(v)} |`),
  ].join('\n');
}
