// Trajectory metrics (spec §2.11) and per-iteration rollout summary rows (spec §2.12).

import { allSame, dictMean, npMean } from '../misc-utils.js';
import { modelInputLength } from '../model-input.js';
import { pyFloat, pyJsonDumps, type PyFloat } from '../pyjson.js';
import type { Metrics, TrajectoryGroup } from './types.js';

export { dictMean };

function byGroupMetrics(groups: readonly TrajectoryGroup[], goodThresh = 0.5): Metrics {
  const n = groups.length;
  if (n === 0) return { 'by_group/frac_mixed': 0, 'by_group/frac_all_good': 0, 'by_group/frac_all_bad': 0 };
  let mixed = 0;
  let good = 0;
  let bad = 0;
  for (const g of groups) {
    const r = g.getTotalRewards();
    if (allSame(r)) {
      if (r[0] >= goodThresh) good++;
      else bad++;
    } else mixed++;
  }
  return { 'by_group/frac_mixed': mixed / n, 'by_group/frac_all_good': good / n, 'by_group/frac_all_bad': bad / n };
}

function metricsOf(groups: readonly TrajectoryGroup[]): Metrics {
  const trajs = groups.flatMap((g) => g.trajectoriesG);
  let acTokens = 0;
  let obTokens = 0;
  let cachedObTokens = 0;
  let turns = 0;
  for (const traj of trajs) {
    turns += traj.transitions.length;
    for (const t of traj.transitions) {
      acTokens += t.ac.tokens.length;
      obTokens += modelInputLength(t.ob);
      cachedObTokens += t.ac.promptCacheHitTokens ?? 0;
    }
  }
  const rewards = groups.flatMap((g) => g.getTotalRewards());
  const out: Metrics = {
    ac_tokens_per_turn: turns > 0 ? acTokens / turns : 0,
    ob_tokens_per_turn: turns > 0 ? obTokens / turns : 0,
    turns_per_episode: trajs.length > 0 ? turns / trajs.length : 0,
    total_episodes: trajs.length,
    total_turns: turns,
    total_ac_tokens: acTokens,
    total_ob_tokens: obTokens,
    // Prompt tokens the sampler billed as prefix-cache hits (a subset of total_ob_tokens).
    total_cached_ob_tokens: cachedObTokens,
    'reward/total': rewards.length > 0 ? npMean(rewards) : 0,
  };
  // Transition metrics first, then group metrics, so a key found in both is averaged over all.
  const dicts: Metrics[] = [];
  for (const traj of trajs) for (const t of traj.transitions) dicts.push(t.metrics);
  for (const g of groups) dicts.push(...g.metricsG);
  Object.assign(out, dictMean(dicts));
  Object.assign(out, byGroupMetrics(groups));
  return out;
}

/**
 * `env/all/*` metrics, preceded by `env/<tag>/*` for every tag when some tag selects a strict
 * subset of the groups. `tagsPerGroup[i]` are group i's logging tags.
 */
export function computeTrajectoryMetrics(groups: readonly TrajectoryGroup[], tagsPerGroup: readonly string[][]): Metrics {
  const byTag = new Map<string, TrajectoryGroup[]>();
  // zip() semantics: extra tags or groups beyond the shorter list are ignored.
  const n = Math.min(groups.length, tagsPerGroup.length);
  for (let i = 0; i < n; i++) {
    for (const tag of tagsPerGroup[i]) {
      let gs = byTag.get(tag);
      if (!gs) byTag.set(tag, (gs = []));
      gs.push(groups[i]);
    }
  }
  const out: Metrics = {};
  const nontrivial = [...byTag.values()].some((gs) => gs.length < groups.length);
  if (nontrivial) {
    for (const [tag, gs] of byTag) for (const [k, v] of Object.entries(metricsOf(gs))) out[`env/${tag}/${k}`] = v;
  }
  for (const [k, v] of Object.entries(metricsOf(groups))) out[`env/all/${k}`] = v;
  return out;
}


export interface RolloutSummaryStep {
  step_idx: number;
  ob_len: number;
  ac_len: number;
  reward: PyFloat;
  episode_done: boolean;
  metrics: Record<string, PyFloat>;
  logs: Record<string, string | number>;
}

export interface RolloutSummaryRow {
  schema_version: 1;
  split: string;
  iteration: number;
  group_idx: number;
  traj_idx: number;
  tags: string[];
  sampling_client_step: number | null;
  total_reward: PyFloat;
  final_reward: PyFloat;
  trajectory_metrics: Record<string, PyFloat>;
  steps: RolloutSummaryStep[];
  final_ob_len: number;
}

const floats = (m: Metrics): Record<string, PyFloat> => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, pyFloat(v)]));

export interface RolloutSummaryOptions {
  /** `train` or `eval/<label>`. */
  split?: string;
  iteration: number;
  samplingClientStep?: number | null;
}

/**
 * One row per trajectory for `train_rollout_summaries.jsonl`. Rewards and metric values are
 * marked as Python floats so `rolloutSummariesJsonl` writes them like the reference (`1.0`).
 */
export function rolloutSummaryRows(
  groups: readonly TrajectoryGroup[],
  tagsPerGroup: readonly string[][],
  opts: RolloutSummaryOptions,
): RolloutSummaryRow[] {
  const rows: RolloutSummaryRow[] = [];
  groups.forEach((g, groupIdx) => {
    const totals = g.getTotalRewards();
    g.trajectoriesG.forEach((traj, trajIdx) => {
      rows.push({
        schema_version: 1,
        split: opts.split ?? 'train',
        iteration: opts.iteration,
        group_idx: groupIdx,
        traj_idx: trajIdx,
        tags: [...(tagsPerGroup[groupIdx] ?? [])],
        sampling_client_step: opts.samplingClientStep ?? null,
        total_reward: pyFloat(totals[trajIdx]),
        final_reward: pyFloat(g.finalRewardsG[trajIdx]),
        trajectory_metrics: floats(g.metricsG[trajIdx]),
        steps: traj.transitions.map((t, stepIdx) => ({
          step_idx: stepIdx,
          ob_len: modelInputLength(t.ob),
          ac_len: t.ac.tokens.length,
          reward: pyFloat(t.reward),
          episode_done: t.episodeDone,
          metrics: floats(t.metrics),
          logs: { ...t.logs },
        })),
        final_ob_len: modelInputLength(traj.finalOb),
      });
    });
  });
  return rows;
}

/** The JSONL text (one Python-json.dumps line per row, trailing newline). */
export function rolloutSummariesJsonl(rows: readonly RolloutSummaryRow[]): string {
  return rows.map((r) => pyJsonDumps(r)).join('\n') + (rows.length > 0 ? '\n' : '');
}
