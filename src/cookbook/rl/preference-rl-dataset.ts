// Builds the pairwise preference RL dataset of a config (the reference's
// PairwisePreferenceRLDatasetBuilder + PreferenceModelBuilderFromChatRenderer): prompts from a
// comparisons file, a preference model sampling the reward model's weights through the rollout's
// side samplers (rollout-context.ts), seeded from the rollout's position and the matchup.

import { loadComparisonsJsonl } from '../preference/comparisons.js';
import { PreferenceModelFromChatRenderer } from '../preference/preference-model.js';
import { asModelChoice, chooseRendererName, rendererForModel, type ModelChoice } from '../renderers/for-model.js';
import type { Renderer } from '../renderers/types.js';
import { PairwisePreferenceDataset, type PairwisePreferenceDatasetConfig } from './preference-env.js';

/** Keeps reward-model seeds apart from the other side samplers of a rollout. */
const RM_SEED_MARKER = 2_000_029;

export async function buildPairwisePreferenceDataset(
  cfg: PairwisePreferenceDatasetConfig,
  policy: { renderer: Renderer; model: string | ModelChoice },
  resolve: (p: string) => string,
): Promise<PairwisePreferenceDataset> {
  const rows = await loadComparisonsJsonl(resolve(cfg.file_path), cfg.file_path);
  const pm = cfg.preference_model;
  const policyModel = asModelChoice(policy.model);
  // The reward model may use another renderer than the policy (one that answers without thinking).
  const rm = await rendererForModel({
    model_name: pm.model_name ?? policyModel.model_name,
    tokenizer_path: pm.model_name === null ? policyModel.tokenizer_path : null,
    render_date: policyModel.render_date,
    renderer_name: pm.renderer_name ?? chooseRendererName(policyModel),
  });
  return new PairwisePreferenceDataset(rows, policy.renderer, {
    batchSize: cfg.batch_size,
    groupSize: cfg.group_size,
    tournamentPattern: cfg.tournament_pattern,
    matchupGroupSize: cfg.matchup_group_size,
    preferenceModel: async (ctx) => new PreferenceModelFromChatRenderer(rm.renderer, rm.tokenizer, await ctx.samplingSession(pm.rm_weights_path), ctx.seeds(RM_SEED_MARKER)),
  });
}
