// LR schedules (reference tc/utils/lr_scheduling.py, spec §7.3). No warmup.

import { ConfigurationError } from './errors.js';

export const LR_SCHEDULES = ['linear', 'cosine', 'constant'] as const;
export type LrSchedule = (typeof LR_SCHEDULES)[number];

/** Multiplier for 0-indexed `step` of `totalSteps`: linear never reaches 0 (last step = 1/total). */
export function lrMultiplier(schedule: LrSchedule, step: number, totalSteps: number): number {
  if (totalSteps <= 0) throw new ConfigurationError(`total_steps must be positive, got ${totalSteps}`);
  switch (schedule) {
    case 'linear':
      return 1 - step / totalSteps;
    case 'cosine':
      return 0.5 * (1 + Math.cos((Math.PI * step) / totalSteps));
    case 'constant':
      return 1;
    default:
      throw new ConfigurationError(`Unknown learning rate schedule: ${String(schedule)}`);
  }
}
