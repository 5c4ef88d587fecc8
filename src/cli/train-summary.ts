// What `train` and `continue` print about the run they start: a few lines saying what will run. The
// full resolved config is the run's config.json (or, with --verbose, printed here).
import { join } from 'node:path';
import { formatNumber } from './numbers.js';
import { TRAINABLE_KINDS, type DataPlan, type ResolvedRun } from './train.js';
import { isObjectStoreUri } from '../cookbook/stores/storage.js';


/** Kind, model and data, steps and learning rate: printed before the run starts. */
export function runSummary(r: ResolvedRun, plan?: DataPlan): string[] {
  const cfg = r.config;
  const lines = [`${r.kind}: ${TRAINABLE_KINDS[r.kind].describe(cfg)}`];
  if (plan) {
    const whole = plan.batches * plan.epochs;
    const how = `${plan.batches} batch${plan.batches === 1 ? '' : 'es'} × ${plan.epochs} epoch${plan.epochs === 1 ? '' : 's'}`;
    lines.push(`  steps  ${plan.steps} (${how}${plan.steps < whole ? `, cut to max_steps ${plan.steps}` : ''})`);
  }
  if (typeof cfg.learning_rate === 'number') lines.push(`  lr     ${formatNumber(cfg.learning_rate)}${typeof cfg.lr_schedule === 'string' ? ` (${cfg.lr_schedule} schedule)` : ''}`);
  return lines;
}

/** Where the full config is, printed once the run has started (the run writes it as it starts). */
export const configLine = (r: ResolvedRun): string => `config   ${isObjectStoreUri(r.run.logPath) ? `${r.run.logPath}/config.json` : join(r.run.logPath, 'config.json')} (the resolved config, written as the run starts; --verbose prints it here)`;
