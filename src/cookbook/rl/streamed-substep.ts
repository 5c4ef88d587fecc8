// What one streaming-minibatch substep trained (§2.9 streaming), kept in the run store between the
// substep's activity and the activity that finishes the step (claim check: datums and logprobs
// never travel through Temporal). JSON keeps float64 exactly; NaN, ±Infinity and -0, which JSON
// cannot write, are tagged so that the finished step's metrics equal those of a one-activity step.
import type { Datum } from '../../backends/types.js';
import { addTokens, NO_TOKENS, type TokenUsage } from '../token-usage.js';

export const STREAMED_SUBSTEP_FORMAT = 'streamed_substep/v1';

/** A trained group: its rollout result's reference and position, and its advantages. */
export interface StreamedGroup {
  meta: { ref: string | null; batch: number; group: number; samplingStep: number; errorTypes: string[]; meanReward: number | null };
  advantages: number[];
  tags: string[];
}

export interface StreamedSubstep {
  groups: StreamedGroup[];
  /** Every datum the substep trained, minibatch by minibatch. */
  data_D: Datum[];
  /** Training logprobs per datum, in the same order. */
  trainLogprobs_D: number[][];
  /** The last minibatch's KL penalty metrics; null when no minibatch computed any. */
  klMetrics: Record<string, number> | null;
  /** The substep's optim_step metrics; null when it had no optimizer step (every group dropped). */
  optimMetrics: Record<string, number> | null;
  /** What its trained groups' rollouts and its KL penalty scoring used (absent from records written before: none). */
  usage?: TokenUsage;
  /** The sampling of its groups dropped for a constant reward. */
  discarded?: TokenUsage;
}

const TAG = '$number';

export function serializeStreamedSubstep(s: StreamedSubstep): string {
  return JSON.stringify({ format: STREAMED_SUBSTEP_FORMAT, ...s }, (_key, value: unknown) => {
    if (typeof value !== 'number' || (Number.isFinite(value) && !Object.is(value, -0))) return value;
    return { [TAG]: Object.is(value, -0) ? '-0' : String(value) };
  });
}

export function deserializeStreamedSubstep(text: string, where: string): StreamedSubstep {
  const parsed = JSON.parse(text, (_key, value: unknown) => {
    if (value && typeof value === 'object' && TAG in value) return Number((value as Record<string, string>)[TAG]);
    return value;
  }) as StreamedSubstep & { format?: string };
  if (parsed.format !== STREAMED_SUBSTEP_FORMAT) throw new TypeError(`${where}: not a ${STREAMED_SUBSTEP_FORMAT} record (format ${JSON.stringify(parsed.format)})`);
  const { format: _format, ...substep } = parsed;
  return substep;
}

/**
 * The substeps of a step as one: groups, datums and logprobs concatenated in substep order, token
 * usage summed; as the reference's running `metrics.update`, the last KL penalty and optim_step
 * metrics win.
 */
export function mergeStreamedSubsteps(substeps: readonly StreamedSubstep[]): StreamedSubstep {
  const last = <T>(xs: Array<T | null>): T | null => xs.reduceRight<T | null>((found, x) => found ?? x, null);
  return {
    groups: substeps.flatMap((s) => s.groups),
    data_D: substeps.flatMap((s) => s.data_D),
    trainLogprobs_D: substeps.flatMap((s) => s.trainLogprobs_D),
    klMetrics: last(substeps.map((s) => s.klMetrics)),
    optimMetrics: last(substeps.map((s) => s.optimMetrics)),
    usage: addTokens(...substeps.map((s) => s.usage ?? NO_TOKENS)),
    discarded: addTokens(...substeps.map((s) => s.discarded ?? NO_TOKENS)),
  };
}
