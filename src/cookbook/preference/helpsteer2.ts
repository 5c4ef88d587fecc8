// The reference's HelpSteer2ComparisonBuilder (recipes/preference/datasets.py): nvidia/HelpSteer2
// rates single responses (`prompt`, `response`, `helpfulness` 0–4), so comparisons are made per
// prompt — its responses sorted by helpfulness, best first (a stable sort: ties keep file order),
// and the best against the worst when the best is strictly more helpful. Prompts keep the order of
// their first row. The comparisons are shuffled with the seed (the reference's 0) and the first
// min(1024, n // 10) held out as the test set — or `test_size` of them when that is set.

import { DataFormatError } from '../errors.js';
import { HF_CONFIG_PATH, type HfSource } from '../hf/config.js';
import type { BoundFormat } from '../hf/formats.js';
import { loadSplit, shuffled, type HfLoadOptions, type HfRow } from '../hf/source.js';
import type { LabeledComparison } from './comparisons.js';

export const HELPSTEER2_FORMAT = 'helpsteer2';
const FIELDS = ['prompt', 'response', 'helpfulness'] as const;

export interface HelpSteer2Rating {
  prompt: string;
  response: string;
  helpfulness: number;
}

function ratingFormat(columns: Record<string, string>): BoundFormat<HelpSteer2Rating> {
  for (const key of Object.keys(columns)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      throw new DataFormatError(`${HF_CONFIG_PATH}.columns.${key}: format "${HELPSTEER2_FORMAT}" has no field "${key}" (fields: ${FIELDS.join(', ')})`);
    }
  }
  const columnOf = (f: string) => columns[f] ?? f;
  return {
    name: HELPSTEER2_FORMAT,
    columns: FIELDS.map(columnOf),
    map(row, at) {
      const get = (f: (typeof FIELDS)[number]) => {
        const column = columnOf(f);
        if (!(column in row)) throw new DataFormatError(`${at}: no column "${column}" for field "${f}" of format "${HELPSTEER2_FORMAT}" (${HF_CONFIG_PATH}.columns.${f})`);
        return row[column];
      };
      const [prompt, response, helpfulness] = [get('prompt'), get('response'), get('helpfulness')];
      if (typeof prompt !== 'string') throw new DataFormatError(`${at}: "prompt" must be a string`);
      if (typeof response !== 'string') throw new DataFormatError(`${at}: "response" must be a string`);
      if (typeof helpfulness !== 'number' || !Number.isFinite(helpfulness)) throw new DataFormatError(`${at}: "helpfulness" must be a number`);
      return { prompt, response, helpfulness };
    },
  };
}

/** One comparison per prompt with at least two differently rated responses: the best (A, chosen) against the worst. */
export function helpSteer2Comparisons(ratings: readonly HfRow<HelpSteer2Rating>[]): HfRow<LabeledComparison>[] {
  const byPrompt = new Map<string, HfRow<HelpSteer2Rating>[]>();
  for (const r of ratings) {
    const list = byPrompt.get(r.value.prompt);
    if (list) list.push(r);
    else byPrompt.set(r.value.prompt, [r]);
  }
  const out: HfRow<LabeledComparison>[] = [];
  for (const [prompt, responses] of byPrompt) {
    if (responses.length < 2) continue;
    const sorted = [...responses].sort((a, b) => b.value.helpfulness - a.value.helpfulness);
    const [best, worst] = [sorted[0], sorted[sorted.length - 1]];
    if (!(best.value.helpfulness > worst.value.helpfulness)) continue;
    out.push({
      value: {
        comparison: {
          prompt_conversation: [{ role: 'user', content: prompt }],
          completion_A: [{ role: 'assistant', content: best.value.response }],
          completion_B: [{ role: 'assistant', content: worst.value.response }],
        },
        label: 'A',
      },
      at: `${best.at} (chosen) and ${worst.at} (rejected)`,
      line: best.line,
    });
  }
  return out;
}

/** Train and test comparisons of a HelpSteer2-style source, split as the reference splits them. */
export async function loadHelpSteer2Splits(
  hf: HfSource,
  opts: HfLoadOptions & { testSize: number; seed: number },
): Promise<{ train: HfRow<LabeledComparison>[]; test?: HfRow<LabeledComparison>[]; skipped: string[] }> {
  if (hf.streaming) throw new DataFormatError(`${HF_CONFIG_PATH}.streaming: format "${HELPSTEER2_FORMAT}" pairs responses across the whole split, so it cannot stream`);
  if (hf.test_split !== null) throw new DataFormatError(`${HF_CONFIG_PATH}.test_split: format "${HELPSTEER2_FORMAT}" holds its test comparisons out of \`split\` (test_size)`);
  const loaded = await loadSplit(hf, hf.split, ratingFormat(hf.columns), opts);
  const comparisons = shuffled(helpSteer2Comparisons(loaded.rows), opts.seed);
  if (comparisons.length === 0) throw new DataFormatError(`${hf.path}: split "${hf.split}" has no prompt with two differently rated responses, so no comparisons`);
  const nTest = opts.testSize > 0 ? opts.testSize : Math.min(1024, Math.floor(comparisons.length / 10));
  return { train: comparisons.slice(nTest), test: nTest > 0 ? comparisons.slice(0, nTest) : undefined, skipped: loaded.skipped };
}
