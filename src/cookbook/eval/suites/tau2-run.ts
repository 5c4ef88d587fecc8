// A tau2_bench task as the agentic eval runs it (eval-terminal.ts's chunks): the conversation of
// tau2-episode.ts with the policy's session as the agent — each turn seeded by (seed, suite,
// example index, turn), so a retried chunk samples the same turns — and the judge as the customer,
// whose replies are recorded at the example's position. A turn cut by max_tokens ends the episode
// with reward 0, as the reference's message env does. The result has the terminal suites'
// shape: the reward is the action score, PASS when it is above 0 (the reference's default
// aggregate counts an example correct when its reward is above 0); reward_details holds the
// reference's metrics (correct is the full match). Trouble with the sampler, the judge or the run
// store is thrown, so the chunk is tried again; an agent calling a tool the domain lacks is the
// task's ERROR, as the reference's episode fails there.
import type { Message } from '../../renderers/types.js';
import { sequentialSeeds } from '../../rl/seeds.js';
import type { Judge } from '../judge.js';
import { exampleSeed } from '../benchmark-run.js';
import { taskStatus, type TerminalTaskResult } from './terminal-results.js';
import type { TerminalEpisodeSetup } from './terminal-run.js';
import { TAU2_BENCH_SUITE, type Tau2Task } from './tau2-data.js';
import { runTau2Episode } from './tau2-episode.js';

export type Tau2Setup = Pick<TerminalEpisodeSetup, 'session' | 'renderer' | 'sampling' | 'terminal' | 'onceFor' | 'writeTrajectory'> & {
  /** The customer of example `index`. */
  userFor(index: number): Judge;
};

export async function evaluateTau2Task(index: number, task: Tau2Task, s: Tau2Setup): Promise<TerminalTaskResult> {
  const start = performance.now();
  const seed = exampleSeed(s.sampling.seed, TAU2_BENCH_SUITE.name, index);
  const seeds = sequentialSeeds(seed);
  const stop = s.renderer.getStopSequences();
  const agent = async (messages: Message[]): Promise<Message | null> => {
    const res = await s.session.sample(s.renderer.buildGenerationPrompt(messages), 1, { stop, max_tokens: s.sampling.max_tokens, temperature: s.sampling.temperature, seed: seeds() });
    const seq = res.sequences[0];
    if (!seq) throw new Error('sampler returned no sequences');
    if (seq.stop_reason === 'length') return null;
    const { message } = s.renderer.parseResponse(seq.tokens);
    return { role: 'assistant', content: message.content, ...(message.tool_calls?.length ? { tool_calls: message.tool_calls } : {}) };
  };
  const out = await runTau2Episode(task, {
    agent,
    prefixWithTools: (tools, systemPrompt) => s.renderer.createConversationPrefixWithTools(tools, systemPrompt),
    user: s.userFor(index),
    once: s.onceFor(index),
    maxTurns: s.terminal.max_turns,
  });
  const trajectory = s.writeTrajectory(task.taskName, `${JSON.stringify({ stop_reason: out.stopReason, calls: out.calls, expected_actions: task.expectedActions, messages: out.history }, null, 2)}\n`);
  return {
    index,
    id: task.taskName,
    status: taskStatus({ error: out.error, reward: out.score }),
    correct: out.error === null && out.score > 0,
    reward: out.score,
    reward_details: out.metrics,
    turns: out.turns,
    seconds: Math.round((performance.now() - start) / 100) / 10,
    test_verdict: null,
    error: out.error,
    stop_reason: out.stopReason,
    trajectory,
  };
}
