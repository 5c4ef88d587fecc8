// Multi-turn, self-play and model-graded RL on the real stack (Temporal dev server, the engine over
// HTTP, the tiny model's real tokenizer): twenty questions with the policy's base weights as the
// answerer, tic-tac-toe self-play, and a rubric judge. A worker killed mid-episode is replaced and
// the run equals an uninterrupted one: every policy, answerer and grader call is seeded from
// (run seed, step, group, episode, turn), so the retried rollout recomputes the same turns.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { GUESS_NUMBER_FAIL_TO_PARSE } from '../../src/cookbook/rl/envs/guess-number.js';
import { loadRun } from '../../src/report/load.js';
import { loadRollouts } from '../../src/report/rollouts.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories, retriedActivities } from '../support/history.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, untilActivityRunning, waitUntil, withWorker, workerProcess, type TestStack } from '../support/stack.js';
import { fullTier } from '../support/tier.js';
import { stepRows } from '../support/tokens.js';

const fixture = (name: string) => join(import.meta.dirname, '..', 'fixtures', name);
const summaries = (logPath: string, step: number) =>
  readFileSync(join(logPath, `iteration_${String(step).padStart(6, '0')}`, 'train_rollout_summaries.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe('multi-turn RL', { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  /** A clean run, then the same run with its worker killed during step 1's episodes; both must agree. */
  async function killedMatchesClean(fixtureName: string, worker: string): Promise<{ clean: ReturnType<typeof testRun>; crashedId: string }> {
    const clean = testRun(stack, fixture(fixtureName), [], 'rl');
    const crashed = testRun(stack, fixture(fixtureName), [], 'rl');
    let w = await workerProcess(stack, `${worker}-1`);
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as RunResult;
      expect(cleanResult.status).toBe('completed');
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      await waitUntil('step 1', async () => (await handle.query(progressQuery)).step >= 1, 300_000, 50);
      await untilActivityRunning(handle, 'rlRolloutGroup'); // into step 1's episodes
      await w.kill();
      w = await workerProcess(stack, `${worker}-2`);
      const crashedResult = (await handle.result()) as RunResult;
      expect(crashedResult.status).toBe('completed');
      expect(metricsOf(crashed.run.logPath)).toEqual(metricsOf(clean.run.logPath));
      expect(checkpointsOf(crashed.run.logPath)).toEqual(checkpointsOf(clean.run.logPath));
      expect(readFileSync(join(crashed.run.logPath, 'iteration_000001', 'train_rollout_summaries.jsonl'), 'utf8')).toBe(
        readFileSync(join(clean.run.logPath, 'iteration_000001', 'train_rollout_summaries.jsonl'), 'utf8'),
      );
      expect(await weightsFingerprint(stack.engine.baseUrl, crashedResult.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanResult.finalCheckpoint!.samplerPath!),
      );
    } finally {
      await w.stop();
    }
    return { clean, crashedId: crashed.workflowId };
  }

  it('twenty questions: a worker killed mid-episode is replaced and the run equals an uninterrupted one', async () => {
    const { clean, crashedId } = await killedMatchesClean('rl_twenty_questions_small.json', 'twenty-q');
    // The kill landed mid-episode: a group rollout was retried and recomputed its turns.
    expect(await retriedActivities(stack.client, crashedId, 'rlRolloutGroup')).toBeGreaterThan(0);
    const rows = stepRows(metricsOf(clean.run.logPath));
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2]);
    // rollout_limits.max_turns = 2 cuts the env's own 3-turn game: 2 turns per episode unless won.
    expect(rows[0]['env/all/total_episodes']).toBe(4);
    expect(rows[0]['env/all/turns_per_episode']).toBeGreaterThan(1);
    // Every turn's prompt is prefilled again and its action sampled (the answerer's requests are its own).
    for (const row of rows) expect([row['tokens/sampled'], row['tokens/prefill_uncached']]).toEqual([row['env/all/total_ac_tokens'], row['env/all/total_ob_tokens']]);
    const rowsOf = summaries(clean.run.logPath, 0);
    expect(rowsOf).toHaveLength(4);
    for (const row of rowsOf) {
      const steps = row.steps as Array<{ logs: Record<string, string>; metrics: Record<string, number> }>;
      // The transcript: every turn's question and the answerer's reply.
      for (const s of steps) expect(typeof s.logs.player === 'string' && typeof s.logs.answerer === 'string').toBe(true);
      if (steps.length === 2) expect(steps[1].metrics['stop/max_turns']).toBe(1);
      // Grade-then-clamp: a limit-stopped episode never totals above 0.
      expect(row.total_reward).toBeLessThanOrEqual(0);
    }
    // The report's rollout browser shows each episode as turns with their transcript logs.
    const browser = (await loadRollouts(loadRun(clean.run.logPath)))!;
    const episode = browser.iterations[0].groups[0].trajectories[0];
    expect(episode.transitions.length).toBeGreaterThan(1);
    expect(typeof episode.transitions[1].logs.answerer).toBe('string');
    const hygiene = await checkHistories(stack.client, clean.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
  });

  // Fuller tier: the env's turns are unit-tested (test/cookbook/rl/multiturn.test.ts); twenty questions runs multi-turn on the stack in the gate.
  if (fullTier) it('guess the number: episodes run turn by turn with the feedback transcript in the summaries', async () => {
    const run = testRun(stack, fixture('rl_guess_number_small.json'), [], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(2);
    for (const row of summaries(run.run.logPath, 1)) {
      const steps = row.steps as Array<{ reward: number; logs: Record<string, string | number> }>;
      for (const s of steps) {
        expect(['Too low', 'Too high', 'Correct', GUESS_NUMBER_FAIL_TO_PARSE]).toContain(s.logs.feedback);
        expect(s.reward).toBe(s.logs.feedback === 'Correct' ? 1 : s.logs.feedback === GUESS_NUMBER_FAIL_TO_PARSE ? -1 : 0);
      }
      // Three turns unless the number was guessed.
      expect(steps.length === 3 || steps.at(-1)!.logs.feedback === 'Correct').toBe(true);
    }
  });

  if (fullTier) it('tic-tac-toe self-play: the two players of a game are one group; the test set plays the optimal opponent', async () => {
    const run = testRun(stack, fixture('rl_tictactoe_small.json'), [], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    expect(result.steps).toBe(3);
    const rows = metricsOf(run.run.logPath);
    expect(rows[0]['env/all/total_episodes']).toBe(4); // 2 games × 2 players
    expect(rows[0]).toHaveProperty('test/env/all/reward/total');
    expect(rows[0]).toHaveProperty('env/all/illegal_move');
    // The two players of each game end with matching outcomes: win/loss, illegal/0, or a draw.
    const rowsOf = summaries(run.run.logPath, 1);
    expect(rowsOf).toHaveLength(4);
    for (const g of [0, 1]) {
      const pair = rowsOf.filter((r) => r.group_idx === g).map((r) => r.total_reward);
      expect([[1, -1], [-1, 1], [-2, 0], [0, -2], [0, 0]]).toContainEqual(pair);
      for (const r of rowsOf.filter((x) => x.group_idx === g)) expect(r.steps.at(-1).episode_done).toBe(true);
    }
  });

  it('rubric judge: grader verdicts parsed into the reward; a worker killed mid-grading leaves the uninterrupted run', async () => {
    const { clean: run } = await killedMatchesClean('rl_rubric_small.json', 'rubric');
    const rows = stepRows(metricsOf(run.run.logPath));
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row).toHaveProperty('env/all/rubric_score');
      expect(row).toHaveProperty('env/all/format');
    }
    const rowsOf = summaries(run.run.logPath, 0);
    for (const row of rowsOf) {
      const logs = row.steps[0].logs;
      expect(typeof logs.grader_0).toBe('string');
      expect(row.steps[0].metrics.rubric_score).toBeGreaterThanOrEqual(0);
    }
  });
});
