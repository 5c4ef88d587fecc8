// Search-R1 (configs/rl_search.json) on the real stack: the registered env builds its groups in the
// worker, each episode's first observation is the reference's prompt with the `search` tool
// declared, the rollouts are graded and land in the rollout summaries and the report's rollout
// browser, tagged by data source, and nothing bulky crosses Temporal. The randomly initialised tiny
// model writes no tool call, so the calls themselves (the search, its record in the run store, the
// tool message in the next observation) are stepped with the real renderer and run store in
// test/cookbook/rl/search-tool.test.ts; after a supervised warm-up it writes them, and
// pipeline-search-tool.full.test.ts checks those rollouts end to end.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { SEARCH_TASK_INSTRUCTIONS } from '../../src/cookbook/rl/envs/search-tool.js';
import { loadRun } from '../../src/report/load.js';
import { loadRollouts } from '../../src/report/rollouts.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { checkHistories } from '../support/history.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, withWorker, type TestStack } from '../support/stack.js';
import { stepRows } from '../support/tokens.js';

const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'rl_search.json');
const ENDINGS = ['max_tokens_reached', 'format', 'parse_error', 'context_overflow'];

describe('search_tool RL', { timeout: 300_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('a step of configs/rl_search.json: prompts with the declared tool, graded episodes in the summaries and the rollout browser', async () => {
    const run = testRun(stack, CONFIG, ['max_steps=1', 'eval_every=0', 'save_every=0', 'dataset.args.batch_size=2', 'dataset.args.group_size=2'], 'rl');
    const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as RunResult);
    expect(result.status).toBe('completed');
    const [row] = stepRows(metricsOf(run.run.logPath));
    expect(row['env/all/total_episodes']).toBe(4);

    const summaries = readFileSync(join(run.run.logPath, 'iteration_000000', 'train_rollout_summaries.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(summaries).toHaveLength(4);
    for (const e of summaries) {
      const last = e.steps.at(-1);
      expect(last.episode_done).toBe(true);
      // Ended by the sampler's token limit, graded (format/correct), or a broken tool call.
      expect(ENDINGS.filter((k) => k in last.metrics), JSON.stringify(last.metrics)).toHaveLength(1);
      if ('format' in last.metrics) expect(last.reward).toBeCloseTo(0.1 * (last.metrics.format - 1) + last.metrics.correct, 12);
    }

    const browser = (await loadRollouts(loadRun(run.run.logPath)))!;
    const groups = browser.iterations[0].groups;
    expect(groups).toHaveLength(2);
    for (const g of groups) {
      expect(['single_hop', 'multi_hop']).toContain(g.tags[0]);
      const ob = g.trajectories[0].transitions[0].ob;
      expect(ob).toContain(SEARCH_TASK_INSTRUCTIONS.split('\n')[0]);
      expect(ob).toContain('"name": "search"');
      expect(ob).toContain('A list of fully-formed semantic queries.');
    }

    const hygiene = await checkHistories(stack.client, run.workflowId, ['tml-test']);
    expect(hygiene.maxPayloadBytes).toBeLessThan(16 * 1024);
  });
});
