// TrajectoryGroup ⇄ JSON text for the run store (claim check, DESIGN §3.3): one activity writes a
// group's rollouts to a blob, another reads it back. JSON numbers round-trip float64 exactly, so
// token ids and float32 logprobs survive unchanged; NaN/±Infinity (rewards, metrics) are encoded
// as tagged strings because JSON has no literal for them.

import type { ModelInput } from '../../backends/types.js';
import { TrajectoryGroup, type Metrics, type RolloutError, type Trajectory } from './types.js';

export const TRAJECTORY_GROUP_FORMAT = 'trajectory_group/v1';

function encodeNumber(x: number): number | string {
  if (Number.isFinite(x)) return Object.is(x, -0) ? '-0' : x;
  return Number.isNaN(x) ? 'NaN' : x > 0 ? 'Infinity' : '-Infinity';
}

function decodeNumber(x: unknown): number {
  if (typeof x === 'number') return x;
  if (x === 'NaN') return NaN;
  if (x === 'Infinity') return Infinity;
  if (x === '-Infinity') return -Infinity;
  if (x === '-0') return -0;
  throw new TypeError(`expected a number, got ${JSON.stringify(x)}`);
}

const encodeMetrics = (m: Metrics) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, encodeNumber(v)]));
const decodeMetrics = (m: Record<string, unknown>): Metrics =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, decodeNumber(v)]));
const encodeLogs = (l: Record<string, string | number>) =>
  Object.fromEntries(Object.entries(l).map(([k, v]) => [k, typeof v === 'number' ? { n: encodeNumber(v) } : v]));
const decodeLogs = (l: Record<string, unknown>): Record<string, string | number> =>
  Object.fromEntries(
    Object.entries(l).map(([k, v]) => [k, typeof v === 'string' ? v : decodeNumber((v as { n: unknown }).n)]),
  );

interface TrajectoryJson {
  transitions: Array<{
    ob: ModelInput;
    ac: { tokens: number[]; maybeLogprobs: Array<number | string> | null; stopReason: 'stop' | 'length'; sequenceId?: string; promptCacheHitTokens?: number };
    reward: number | string;
    episodeDone: boolean;
    metrics: Record<string, number | string>;
    logs: Record<string, unknown>;
  }>;
  finalOb: ModelInput;
  stopReason: string | null;
}

interface GroupJson {
  format: typeof TRAJECTORY_GROUP_FORMAT;
  trajectoriesG: TrajectoryJson[];
  finalRewardsG: Array<number | string>;
  metricsG: Array<Record<string, number | string>>;
  rolloutErrors: RolloutError[];
}

export function serializeTrajectoryGroup(group: TrajectoryGroup): string {
  const json: GroupJson = {
    format: TRAJECTORY_GROUP_FORMAT,
    trajectoriesG: group.trajectoriesG.map((traj) => ({
      transitions: traj.transitions.map((t) => ({
        ob: t.ob,
        ac: {
          tokens: t.ac.tokens,
          maybeLogprobs: t.ac.maybeLogprobs === null ? null : t.ac.maybeLogprobs.map(encodeNumber),
          stopReason: t.ac.stopReason,
          // Provenance of the datums built from this rollout (claim check: ids stay in the run store).
          ...(t.ac.sequenceId !== undefined ? { sequenceId: t.ac.sequenceId } : {}),
          // What the turn's prompt cost, for the train step's token accounting.
          ...(t.ac.promptCacheHitTokens !== undefined ? { promptCacheHitTokens: t.ac.promptCacheHitTokens } : {}),
        },
        reward: encodeNumber(t.reward),
        episodeDone: t.episodeDone,
        metrics: encodeMetrics(t.metrics),
        logs: encodeLogs(t.logs),
      })),
      finalOb: traj.finalOb,
      stopReason: traj.stopReason,
    })),
    finalRewardsG: group.finalRewardsG.map(encodeNumber),
    metricsG: group.metricsG.map(encodeMetrics),
    rolloutErrors: group.rolloutErrors,
  };
  return JSON.stringify(json);
}

export function deserializeTrajectoryGroup(text: string): TrajectoryGroup {
  const json = JSON.parse(text) as GroupJson;
  if (json?.format !== TRAJECTORY_GROUP_FORMAT) {
    throw new TypeError(`not a serialized trajectory group (format ${JSON.stringify(json?.format)})`);
  }
  const trajectories: Trajectory[] = json.trajectoriesG.map((traj) => ({
    transitions: traj.transitions.map((t) => ({
      ob: t.ob,
      ac: {
        tokens: t.ac.tokens,
        maybeLogprobs: t.ac.maybeLogprobs === null ? null : t.ac.maybeLogprobs.map(decodeNumber),
        stopReason: t.ac.stopReason,
        ...(t.ac.sequenceId !== undefined ? { sequenceId: t.ac.sequenceId } : {}),
        ...(t.ac.promptCacheHitTokens !== undefined ? { promptCacheHitTokens: t.ac.promptCacheHitTokens } : {}),
      },
      reward: decodeNumber(t.reward),
      episodeDone: t.episodeDone,
      metrics: decodeMetrics(t.metrics),
      logs: decodeLogs(t.logs),
    })),
    finalOb: traj.finalOb,
    stopReason: traj.stopReason,
  }));
  return new TrajectoryGroup(
    trajectories,
    json.finalRewardsG.map(decodeNumber),
    json.metricsG.map(decodeMetrics),
    json.rolloutErrors ?? [],
  );
}
