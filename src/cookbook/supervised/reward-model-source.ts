// The SL dataset source of a reward model: `dataset.comparisons` turns a chat dataset config's
// file_path / hf source into labeled comparisons rendered as the reference's
// ChatDatasetBuilderFromComparisons (preference/reward-model-dataset.ts).

import { resolve as resolvePath } from 'node:path';
import { z } from 'zod';
import { loadComparisonsJsonl, type ComparisonRow, type LabeledComparison } from '../preference/comparisons.js';
import { rewardModelDatasets, type RewardModelDataSettings } from '../preference/reward-model-dataset.js';
import type { HfSource } from '../hf/config.js';
import { bindFormat } from '../hf/formats.js';
import type { HfRow } from '../hf/source.js';
import { loadHfSplits } from '../hf/splits.js';
import { HELPSTEER2_FORMAT, loadHelpSteer2Splits } from '../preference/helpsteer2.js';
import { rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import { numpyPermutation } from '../shuffle.js';
import type { Renderer } from '../renderers/types.js';
import type { Tokenizer } from '../tokenizer.js';
import type { SupervisedDataset } from './conversation-dataset.js';

export const ComparisonsSourceSchema = z.strictObject({
  /** Train on both orders of every comparison (doubling the data) instead of a seeded 50% swap. */
  swap: z.boolean().default(false),
});

interface SourceFields {
  builtin?: unknown;
  train_on_what?: unknown;
  hf?: { streaming?: boolean };
}

/** What a comparisons source cannot be combined with (zod superRefine of the chat dataset config). */
export function checkComparisonsSource(cfg: SourceFields, ctx: z.RefinementCtx): void {
  if (cfg.builtin !== undefined) ctx.addIssue({ code: 'custom', path: ['builtin'], message: 'comparisons are read from file_path or hf (builtin names chat datasets)' });
  if (cfg.train_on_what !== undefined) ctx.addIssue({ code: 'custom', path: ['train_on_what'], message: 'a reward model trains on the preference label only; remove train_on_what' });
  if (cfg.hf?.streaming) ctx.addIssue({ code: 'custom', path: ['hf', 'streaming'], message: 'comparisons load whole: streaming is not supported' });
}

export async function buildRewardModelChatDatasets(
  cfg: RewardModelDataSettings & { file_path?: string; hf?: HfSource; renderer_name?: string },
  model: string | ModelChoice,
  opts: { baseDir?: string } = {},
): Promise<{ train: SupervisedDataset; test?: SupervisedDataset; renderer: Renderer; tokenizer: Tokenizer }> {
  const { renderer, tokenizer } = await rendererForModel(model, cfg.renderer_name);
  const shuffle = (n: number, seed: number) => numpyPermutation(seed, n);
  if (cfg.hf !== undefined) {
    const splitOpts = { ...opts, testSize: cfg.test_size, seed: cfg.shuffle_seed };
    // HelpSteer2 pairs rated responses across the split (preference/helpsteer2.ts), as for DPO.
    const splits =
      cfg.hf.format === HELPSTEER2_FORMAT
        ? await loadHelpSteer2Splits(cfg.hf, splitOpts)
        : await loadHfSplits(cfg.hf, bindFormat('preference', cfg.hf.format, cfg.hf.columns), splitOpts);
    if (!('train' in splits)) throw new Error('unreachable: streaming comparisons are refused by the config schema');
    const toRow = (r: HfRow<LabeledComparison>): ComparisonRow => ({ ...r.value, line: r.line, at: r.at });
    const split = { train: splits.train.map(toRow), test: splits.test?.map(toRow) };
    return { ...rewardModelDatasets(split, cfg, renderer, cfg.hf.path, shuffle), renderer, tokenizer };
  }
  const displayPath = cfg.file_path as string;
  const rows = await loadComparisonsJsonl(path(opts.baseDir, displayPath), displayPath);
  return { ...rewardModelDatasets({ rows }, cfg, renderer, displayPath, shuffle), renderer, tokenizer };
}

function path(baseDir: string | undefined, p: string): string {
  return resolvePath(baseDir ?? process.cwd(), p);
}
