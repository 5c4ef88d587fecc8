// The loop-parity suite: the reference's own SL, DPO, RL, on-policy and off-policy (top-K) distillation loops
// (tinker-cookbook 0.6.1 + SDK 0.38.0, unmodified; loops/reference_loops.py) and this project's
// workflows, run side by side on one engine with the same model, data and hyperparameters
// (loops/<loop>.json, the one config both sides are built from).
//   SL and DPO: every metric of every step compared value by value (to float32 rounding: the two
//     sides sum the same float32 logprobs in different orders), every integer exactly.
//   RL and distillation: sampling is seeded differently on the two sides, so what follows from
//     sampled tokens differs; everything else is compared: the prompts of each batch, their
//     observation lengths, the step's counts, learning rates, the advantages given the rewards.
//   RL async (max_steps_off_policy 1): as RL, and the schedule: each step's sampler steps and
//     staleness (async/staleness_*), which 0.6.1's oldest-first batches make the same on both sides;
//     also with streaming minibatches (groups taken as they complete, two minibatches a step).
//   SDFT: greedy sampling on both sides (temperature 0), so every value and the final weights.
//   Every loop: the same metric keys with the same JSON types (4 is not 4.0), and the same
//     checkpoint rows, apart from the documented keys only one side has. Timings (`time/*`) are
//     wall-clock readings: their names per loop and row are compared, their values not.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { getTokenizer } from '../../src/cookbook/tokenizer.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { weightsFingerprint } from '../support/runs.js';
import {
  LOOPS,
  ourRun,
  rawRows,
  referenceConfig,
  referenceModels,
  runOurLoop,
  runReferenceLoops,
  type Loop,
  type LoopResult,
  type ReferenceResult,
} from './loops/harness.js';

/** Keys only the reference writes, and why (none at present). */
const ONLY_REFERENCE: Array<[RegExp, string]> = [];
/**
 * Spans only a durable run has (cookbook/timing.ts WAIT_SPANS): Temporal's task queue, failed
 * activity attempts, backend futures and backoff; and the sampler weights a run saves when its
 * first step (or a restore) has none, which the reference saves before its first timed step.
 */
const ONLY_OURS_SPANS = new Set(['queue_wait', 'activity_retry', 'backend_wait', 'backend_retry', 'save_weights_for_sampler']);
const spanOf = (key: string) => /^time\/(.+?)(:total|:count|:mean|:max)?$/.exec(key)?.[1];
const onlyOurs = (key: string) => ONLY_OURS_SPANS.has(spanOf(key) ?? '');
/**
 * Checkpoint-row keys only this project writes: what `cookbook continue` and `cookbook export` read,
 * and when a checkpoint saved with a TTL (async RL's initial one) expires on the server.
 */
const ONLY_OURS_CHECKPOINT = new Set(['next_step', 'resume_state', 'renderer_name', 'base_model', 'tokenizer', 'lora_rank', 'expires_at']);
/** Keys whose values are wall-clock readings. */
const TIMING = /^time\/|^batch_time$|^time_total$/;

/** Loops whose reference logs no timings (train_off_policy.py traces nothing into its rows). */
const UNTIMED = new Set<Loop>(['off_policy', 'off_policy_multi']);

const onlyReference = (key: string) => ONLY_REFERENCE.some(([re]) => re.test(key));
/**
 * Async RL after its first step: whether a step saves sampler weights (0.6.1's SamplingClientReuse)
 * depends on whether every rollout had completed when the step asked, which is timing on both sides
 * (the reference asks after training, we before), so the save's spans may be on either side alone.
 */
const ASYNC = new Set<Loop>(['rl_async', 'rl_async_stream']);
const reuseTimed = (loop: Loop, row: number, key: string) => ASYNC.has(loop) && row > 0 && /^time\/save_checkpoint(_and_get_sampling_client)?(:|$)/.test(key);

type Row = Record<string, unknown>;
let stack: TestStack;
const ours: Partial<Record<Loop, LoopResult>> = {};
let reference: Partial<Record<Loop, ReferenceResult>>;

beforeAll(async () => {
  const models = await referenceModels();
  stack = await startTestStack();
  const work = path.join(stack.dir, `loop-parity-${process.pid}`);
  mkdirSync(work, { recursive: true });
  const runs = Object.fromEntries(LOOPS.map((loop) => [loop, ourRun(stack, loop, models)]));
  const configs = Object.fromEntries(LOOPS.map((loop) => [loop, referenceConfig(loop, runs[loop], models, work)]));
  // Both sides at once: the engine serves each session on its own, and the reference's imports
  // (seconds) overlap our first runs.
  const oursDone = (async () => {
    for (const loop of LOOPS) ours[loop] = await runOurLoop(stack, loop, runs[loop]);
  })();
  [reference] = await Promise.all([runReferenceLoops(models, stack.engine.baseUrl, configs, work), oursDone]);
}, 600_000);

/** Per row: keys missing on one side (documented ones aside), and keys typed differently. */
function keyDifferences(loop: Loop): string[] {
  const ref = rawRows(reference[loop]!.logPath);
  const mine = rawRows(ours[loop]!.logPath);
  const out: string[] = [];
  if (ref.length !== mine.length) out.push(`rows: reference ${ref.length}, ours ${mine.length}`);
  ref.forEach((r, i) => {
    const m = mine[i] ?? {};
    for (const k of Object.keys(r)) {
      if (reuseTimed(loop, i, k)) continue;
      if (!(k in m) && !onlyReference(k)) out.push(`row ${i}: ${k} only in the reference`);
      else if (k in m && m[k] !== r[k]) out.push(`row ${i}: ${k} is ${r[k]} in the reference, ${m[k]} here`);
    }
    for (const k of Object.keys(m)) if (!(k in r) && !onlyOurs(k) && !reuseTimed(loop, i, k)) out.push(`row ${i}: ${k} only here`);
  });
  return out;
}

/** The time/* keys of each row on both sides: what a test failure shows when span names drift apart. */
function timeKeys(loop: Loop): Array<{ reference: string[]; ours: string[] }> {
  const keys = (row: Row, i: number) => Object.keys(row).filter((k) => k.startsWith('time/') && !onlyOurs(k) && !reuseTimed(loop, i, k)).sort();
  return reference[loop]!.metrics.map((r, i) => ({ reference: keys(r, i), ours: keys(ours[loop]!.metrics[i] ?? {}, i) }));
}

/** Checkpoint rows: the reference's keys with the same values where they do not name a run's files. */
function checkpointDifferences(loop: Loop, sameValue: (key: string) => boolean, referenceOnly: (row: Row) => boolean = () => false): string[] {
  const ref = reference[loop]!.checkpoints.filter((r) => !referenceOnly(r));
  const mine = ours[loop]!.checkpoints as Row[];
  const out: string[] = [];
  if (ref.length !== mine.length) out.push(`checkpoint rows: reference ${ref.length}, ours ${mine.length}`);
  ref.forEach((r, i) => {
    const m = mine[i] ?? {};
    for (const k of Object.keys(r)) {
      if (!(k in m)) out.push(`checkpoint ${r.name}: ${k} only in the reference`);
      else if (sameValue(k) && JSON.stringify(m[k]) !== JSON.stringify(r[k])) out.push(`checkpoint ${r.name}: ${k} = ${JSON.stringify(r[k])} in the reference, ${JSON.stringify(m[k])} here`);
    }
    for (const k of Object.keys(m)) if (!(k in r) && !ONLY_OURS_CHECKPOINT.has(k)) out.push(`checkpoint ${r.name}: ${k} only here`);
  });
  return out;
}

/** Float32 rounding of sums taken in another order: 1e-5 relative, 1e-5 absolute near zero. */
const close = (a: number, b: number) => Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(a), Math.abs(b));

/** Every value of every row (timings aside): integers and strings exactly, floats to float32 rounding. */
function valueDifferences(loop: Loop): string[] {
  const ref = reference[loop]!.metrics;
  const mine = ours[loop]!.metrics;
  const out: string[] = [];
  ref.forEach((r, i) => {
    for (const [k, v] of Object.entries(r)) {
      if (TIMING.test(k) || !(k in (mine[i] ?? {}))) continue;
      const w = mine[i][k];
      const same = typeof v === 'number' && typeof w === 'number' ? (Number.isInteger(v) && Number.isInteger(w) ? v === w : close(v, w)) : JSON.stringify(v) === JSON.stringify(w);
      if (!same) out.push(`step ${r.step ?? i}: ${k} = ${v} in the reference, ${w} here`);
    }
  });
  return out;
}

/** The given keys, row by row, equal on both sides (they do not depend on sampled tokens). */
function sameValues(loop: Loop, keys: RegExp): string[] {
  const ref = reference[loop]!.metrics;
  const mine = ours[loop]!.metrics;
  const out: string[] = [];
  ref.forEach((r, i) => {
    for (const [k, v] of Object.entries(r)) {
      if (keys.test(k) && JSON.stringify(v) !== JSON.stringify(mine[i]?.[k])) out.push(`step ${r.step ?? i}: ${k} = ${v} in the reference, ${mine[i]?.[k]} here`);
    }
  });
  return out;
}

interface Summary {
  iteration: number;
  group_idx: number;
  traj_idx: number;
  tags: string[];
  sampling_client_step: number | null;
  total_reward: number;
  steps: Array<{ ob_len: number }>;
}

function summaries(logPath: string, iteration: number): Summary[] {
  const file = path.join(logPath, `iteration_${String(iteration).padStart(6, '0')}`, 'train_rollout_summaries.jsonl');
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Summary);
}

/** The prompt conversations the reference logged for an iteration (its logtree's "Prompt" sections). */
function referencePrompts(logPath: string, iteration: number): Array<Array<{ role: string; content: string }>> {
  const file = path.join(logPath, `iteration_${String(iteration).padStart(6, '0')}`, 'train_logtree.json');
  const prompts: Array<Array<{ role: string; content: string }>> = [];
  const walk = (node: any, inPrompt: boolean): void => {
    if (!node || typeof node !== 'object') return;
    if (inPrompt && node.data?.type === 'conversation') prompts.push(node.data.messages);
    const children: any[] = node.children ?? [];
    const isPrompt = node.tag === 'section' && children.some((c) => c?.tag === 'h3' && c.children?.[0] === 'Prompt');
    for (const c of children) walk(c, inPrompt || isPrompt);
  };
  walk(JSON.parse(readFileSync(file, 'utf8')).root, false);
  return prompts;
}

describe("the reference's own loops beside ours, on one engine", () => {
  it('the setup is what both sides ran: one row per step (RL adds its final totals row)', () => {
    expect(ours.sl!.metrics).toHaveLength(3);
    expect(reference.sl!.metrics).toHaveLength(3);
    expect(ours.dpo!.metrics).toHaveLength(3);
    expect(reference.dpo!.metrics).toHaveLength(3);
    expect(reference.rl!.metrics).toHaveLength(4);
    expect(ours.rl!.metrics).toHaveLength(4);
    expect([ours.rl_async_stream!.metrics.length, reference.rl_async_stream!.metrics.length]).toEqual([4, 4]);
    expect(reference.distill!.metrics).toHaveLength(2);
    // Decisions: 3 steps, then the end's scores at step 3.
    expect(reference.decisions!.metrics.map((r) => r.step)).toEqual([0, 1, 2, 3]);
    expect(ours.decisions!.metrics.map((r) => r.step)).toEqual([0, 1, 2, 3]);
    expect([ours.off_policy!.metrics.length, reference.off_policy!.metrics.length]).toEqual([3, 3]);
    expect([ours.off_policy_multi!.metrics.length, reference.off_policy_multi!.metrics.length]).toEqual([2, 2]);
    expect([ours.sdft!.metrics.length, reference.sdft!.metrics.length]).toEqual([2, 2]);
  });

  it.each(LOOPS)('%s: the same metric keys with the same JSON types, apart from the documented ones', (loop) => {
    expect(keyDifferences(loop)).toEqual([]);
  });

  it.each(LOOPS)("%s: the reference's span names in every row's timings (time/*), ours' waits aside", (loop) => {
    const rows = timeKeys(loop);
    expect(rows.map((r) => r.ours)).toEqual(rows.map((r) => r.reference));
    // Every step row is timed on both sides (RL's closing totals row on neither); the off-policy
    // distillation loop times nothing, and neither do we there.
    if (!UNTIMED.has(loop)) expect(rows.filter((r) => r.reference.length > 0).length).toBeGreaterThan(0);
  });

  it('SL: every metric of every step, integers exactly and floats to float32 rounding', () => {
    expect(valueDifferences('sl')).toEqual([]);
    expect(checkpointDifferences('sl', (k) => !k.endsWith('_path'))).toEqual([]);
  });

  it("DPO: the reference's batches (a comparisons file keeps its order), every metric of every step", () => {
    expect(valueDifferences('dpo')).toEqual([]);
    expect(checkpointDifferences('dpo', (k) => !k.endsWith('_path'))).toEqual([]);
  });

  it("decisions: the Brier loss through forward_backward_custom and the held-out scores, every metric of every step", () => {
    expect(valueDifferences('decisions')).toEqual([]);
    expect(checkpointDifferences('decisions', (k) => !k.endsWith('_path'))).toEqual([]);
    // Evals on the weights before steps 0 and 2 (eval_every 2) and at the end; the loss is the probability loss's.
    expect(ours.decisions!.metrics.filter((r) => 'test/brier' in r).map((r) => r.step)).toEqual([0, 2, 3]);
    expect(ours.decisions!.metrics.slice(0, 3).every((r) => Number.isFinite(r['train/loss']) && 'train/target_prob:mean' in r)).toBe(true);
  });

  it('RL: the prompts of every batch, their observation lengths, counts and learning rates; advantages from the rewards', async () => {
    const sampled = /ac_tokens|reward|format|correct|by_group|kl_sample_train|entropy|tokens\/(sampled|trained)|tokens\/cumulative\/(sampled|trained)/;
    expect(sameValues('rl', new RegExp(`^(?!.*(${sampled.source}))(progress|optim/lr|env/all/(ob_tokens_per_turn|turns_per_episode|total_(episodes|turns|ob_tokens|cached_ob_tokens))|tokens/)`))).toEqual([]);
    expect(checkpointDifferences('rl', (k) => k === 'batch')).toEqual([]);
    const store = new RunStore(ours.rl!.logPath);
    const tokenizer = await getTokenizer(store.readConfig()!.model_name as string);
    const records = store.readRolloutRecords();
    for (let it = 0; it < 3; it++) {
      const [r, m] = [summaries(reference.rl!.logPath, it), summaries(ours.rl!.logPath, it)];
      const shape = (s: Summary[]) => s.map((x) => [x.group_idx, x.traj_idx, x.tags, x.sampling_client_step, x.steps.map((st) => st.ob_len)]);
      expect(shape(m)).toEqual(shape(r));
      // The prompt text: every message of the reference's prompt (logged per trajectory, group by
      // group), in order, in our observation of the same trajectory.
      const prompts = referencePrompts(reference.rl!.logPath, it);
      const record = records.find((rec) => rec.step === it)!;
      expect(prompts).toHaveLength(r.length);
      record.groups.forEach((g, gi) => {
        const group = JSON.parse(store.readBlob(g.ref).toString('utf8'));
        group.trajectoriesG.forEach((traj: { transitions: Array<{ ob: { chunks: Array<{ tokens: number[] }> } }> }, t: number) => {
          const text = tokenizer.decode(traj.transitions[0].ob.chunks.flatMap((c) => c.tokens));
          let at = 0;
          for (const msg of prompts[gi * group.trajectoriesG.length + t]) {
            const found = text.indexOf(msg.content, at);
            expect(found, `iteration ${it} group ${gi} trajectory ${t}: "${msg.content}" in ${JSON.stringify(text)}`).toBeGreaterThanOrEqual(at);
            at = found + msg.content.length;
          }
        });
        // The reference's compute_advantages: each trajectory's total reward minus its group's mean.
        const rewards: number[] = group.trajectoriesG.map((_: unknown, t: number) => m.find((s) => s.group_idx === gi && s.traj_idx === t)!.total_reward);
        const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
        g.advantages!.forEach((adv, t) => expect(adv).toBeCloseTo(rewards[t] - mean, 6));
      });
    }
  });

  // Async with max_steps_off_policy 1 (4 rollouts in flight, 2 groups a step, oldest first): step
  // 0 trains groups of the first weights, every later step the groups its predecessor left, one
  // step stale, on both sides; a group dropped as stale, or an in-flight cap or end_batch of
  // another size, would change the counts or the sampler steps.
  // Steps 0 and 1 train the first weights' four rollouts, two each, in the order they complete:
  // which two land in step 0 is timing on both sides, so observation lengths are compared over
  // the two steps together, not step by step.
  it('RL async: sample counts, sampler steps and staleness of every step, as the reference schedules them', () => {
    const sampled = /ac_tokens|ob_tokens|prefill|reward|format|correct|by_group|kl_sample_train|entropy|tokens\/(sampled|trained)|tokens\/cumulative\/(sampled|trained)/;
    expect(
      sameValues('rl_async', new RegExp(`^(?!.*(${sampled.source}))(training_client/step|sampling_client/|async/staleness|progress|optim/lr|env/all/(ob_tokens_per_turn|turns_per_episode|total_(episodes|turns|ob_tokens|cached_ob_tokens))|tokens/)`)),
    ).toEqual([]);
    const firstTwoSteps = (rows: Record<string, unknown>[]) => [
      (rows[0]['env/all/total_ob_tokens'] as number) + (rows[1]['env/all/total_ob_tokens'] as number),
      rows[1]['tokens/cumulative/prefill_uncached'],
    ];
    expect(firstTwoSteps(ours.rl_async!.metrics)).toEqual(firstTwoSteps(reference.rl_async!.metrics));
    // The initial checkpoint (000000, batch 0) before the first step too.
    expect(checkpointDifferences('rl_async', (k) => k === 'batch')).toEqual([]);
    expect(ours.rl_async!.checkpoints.map((c) => c.name)).toEqual(['000000', 'final']);
    expect(ours.rl_async!.metrics.slice(0, 3).map((r) => r['async/staleness_max'])).toEqual([0, 1, 1]);
  });

  // The same schedule with streaming minibatches (2 groups a step in 2 minibatches of 1): a step
  // trains the next groups to complete, so step 0 trains two of the first weights' four rollouts
  // and step 1 the other two, one step stale, on both sides. Which two finish first is timing, so
  // the observation lengths (prompts differ in length) are not compared here.
  it('RL async with streaming minibatches: sample counts, sampler steps and staleness of every step, the checkpoints', () => {
    const sampled = /ac_tokens|ob_tokens|prefill|reward|format|correct|by_group|kl_sample_train|entropy|tokens\/(sampled|trained)|tokens\/cumulative\/(sampled|trained)/;
    expect(
      sameValues('rl_async_stream', new RegExp(`^(?!.*(${sampled.source}))(training_client/step|sampling_client/|async/staleness|progress|optim/lr|env/all/(ob_tokens_per_turn|turns_per_episode|total_(episodes|turns|ob_tokens|cached_ob_tokens))|tokens/)`)),
    ).toEqual([]);
    expect(checkpointDifferences('rl_async_stream', (k) => k === 'batch')).toEqual([]);
    expect(ours.rl_async_stream!.metrics.slice(0, 3).map((r) => [r['env/all/total_episodes'], r['async/staleness_max']])).toEqual([[8, 0], [8, 1], [8, 1]]);
  });

  it('on-policy distillation: observation lengths, counts and learning rates of every step', () => {
    const sampled = /ac_tokens|reward|by_group|kl|entropy|tokens\/(sampled|trained)|tokens\/cumulative\/(sampled|trained)/;
    expect(sameValues('distill', new RegExp(`^(?!.*(${sampled.source}))(progress|optim/lr|env/all/(ob_tokens_per_turn|turns_per_episode|total_(episodes|turns|ob_tokens|cached_ob_tokens))|tokens/)`))).toEqual([]);
    expect(checkpointDifferences('distill', (k) => k === 'batch')).toEqual([]);
    for (const row of ours.distill!.metrics) expect(Number.isFinite(row.teacher_kl)).toBe(true);
  });

  // The teacher's top-K soft targets decide the loss: had either side trained on the data's own
  // (sampled) tokens, or on another teacher's, `train/loss:sum` would differ beyond rounding.
  it.each(['off_policy', 'off_policy_multi'] as const)("%s distillation: every metric of every step (the loss on the teachers' top-K), the checkpoints", (loop) => {
    expect(valueDifferences(loop)).toEqual([]);
    expect(checkpointDifferences(loop, (k) => !k.endsWith('_path'))).toEqual([]);
    expect(ours[loop]!.metrics.every((r) => Number.isFinite(r['train/loss:sum']))).toBe(true);
  });

  // SDFT samples greedily here (temperature 0, which the reference's Config allows), so both sides
  // roll out the same completions and nothing follows from a seed: every value is compared, and
  // the final weights, which the teacher's top-K targets decide (a datum trained on the sampled
  // token, or one skip more or less, gives other weights).
  it("SDFT: every metric of every step, the checkpoints, and the final weights (the update on the teacher's top-K)", async () => {
    expect(valueDifferences('sdft')).toEqual([]);
    expect(checkpointDifferences('sdft', (k) => !k.endsWith('_path'))).toEqual([]);
    expect(ours.sdft!.metrics.every((r) => (r['sdft/total_completion_tokens'] as number) > 0 && (r['sdft/mean_teacher_entropy'] as number) > 0)).toBe(true);
    const [a, b] = await Promise.all([
      weightsFingerprint(stack.engine.baseUrl, reference.sdft!.checkpoints[0].sampler_path as string, 'tml-parity'),
      weightsFingerprint(stack.engine.baseUrl, ours.sdft!.checkpoints[0].sampler_path as string),
    ]);
    expect(b).toBe(a);
  });
});
