// What a decisions run trains and scores, built from its config: the decision renderer, the
// training decisions (in file order), the held-out ones, and the loss the rows call for.
import type { DecisionsConfig, DecisionLoss } from '../../config/decisions.js';
import { ConfigurationError } from '../../errors.js';
import { rendererForModel } from '../../renderers/for-model.js';
import { readDecisions, targetKind, type DecisionExample } from './data.js';
import { DecisionRenderer } from './decision.js';

export interface DecisionsData {
  renderer: DecisionRenderer;
  train: DecisionExample[];
  validation: DecisionExample[];
  lossFn: DecisionLoss;
}

/** The loss a run trains with: the config's, or cross_entropy when every row gives a label, else brier. */
export function resolveLoss(configured: DecisionLoss | null, train: DecisionExample[], shownAs: string): DecisionLoss {
  const soft = train.find((e) => targetKind(e) === 'target_probs');
  if (configured === 'cross_entropy' && soft) {
    throw new ConfigurationError(`loss_fn: cross_entropy trains on one label, but ${shownAs}:${soft.line} gives target_probs (use loss_fn "brier", or give a label)`);
  }
  return configured ?? (soft ? 'brier' : 'cross_entropy');
}

export async function loadDecisionsData(cfg: DecisionsConfig): Promise<DecisionsData> {
  const { renderer, tokenizer } = await rendererForModel(cfg);
  const decisionRenderer = new DecisionRenderer(renderer, tokenizer);
  const take = (rows: DecisionExample[], max: number | null) => (max === null ? rows : rows.slice(0, max));
  const train = take(await readDecisions(cfg.data_path), cfg.max_train_questions);
  const validation = cfg.validation_data_path ? take(await readDecisions(cfg.validation_data_path), cfg.max_validation_questions) : [];
  // Rendered once here, so a choice prefix the tokenizer splits badly fails before any step.
  for (const [file, rows] of [[cfg.data_path, train], [cfg.validation_data_path, validation]] as const) {
    for (const e of rows) {
      try {
        decisionRenderer.render(e.decision);
      } catch (err) {
        throw new ConfigurationError(`${file}:${e.line}: ${(err as Error).message}`);
      }
    }
  }
  return { renderer: decisionRenderer, train, validation, lossFn: resolveLoss(cfg.loss_fn, train, cfg.data_path) };
}

/** The decisions of training step `batch` (of an epoch): consecutive rows, the last batch maybe short. */
export function batchOf(train: readonly DecisionExample[], batchSize: number, batch: number): DecisionExample[] {
  return train.slice(batch * batchSize, (batch + 1) * batchSize);
}

export const batchesPerEpoch = (n: number, batchSize: number) => Math.ceil(n / batchSize);
