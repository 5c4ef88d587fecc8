// Tool-use warm-ups under test: an SFT transcript replayed through the RL env (the same tokens on
// both sides), the warm-up pipeline run on the stack, and the tool calls its RL rollouts made, read
// back from the run store (each call and result as the trajectory logged them, the record
// durableToolCalls kept of it, and the text of the observation that followed).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { startRun } from '../../src/cli/train.js';
import { modelInputToInts } from '../../src/cookbook/model-input.js';
import { TrainOnWhat, type Message, type Renderer } from '../../src/cookbook/renderers/types.js';
import { deserializeTrajectoryGroup } from '../../src/cookbook/rl/serialize.js';
import type { Env, InitialObservation, StepResult, Trajectory } from '../../src/cookbook/rl/types.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import type { Tokenizer } from '../../src/cookbook/tokenizer.js';
import { toolCallsOf } from '../../src/report/rollouts.js';
import type { PipelineResult } from '../../src/workflows/pipeline.js';
import { metricsOf } from './runs.js';
import { testRun, withWorker, type TestStack } from './stack.js';

export interface LoggedToolCall {
  step: number;
  /** The group's index in its batch. */
  group: number;
  episode: number;
  turn: number;
  /** `name(arguments)`, as the env logs it. */
  call: string;
  result: string;
  /** What the run store recorded as the call's result (undefined: no record). */
  recorded: string | undefined;
  /** The decoded observation after the call's turn; null when the episode ended there. */
  nextObservation: string | null;
}

export interface RolloutToolCalls {
  steps: number[];
  episodes: number;
  /** Episodes whose first turn made a parsed tool call. */
  firstTurnCalls: number;
  calls: LoggedToolCall[];
  /** Every episode's trajectory, with its position, for checks of their own. */
  trajectories: Array<{ step: number; group: number; episode: number; trajectory: Trajectory }>;
}

const obText = (tok: Tokenizer, t: Trajectory['transitions'][number]) =>
  tok.decode(t.ob.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : [])), { skipSpecialTokens: false });

export function rolloutToolCalls(rlDir: string, tok: Tokenizer): RolloutToolCalls {
  const store = new RunStore(rlDir);
  const records = store.readRolloutRecords();
  const sideEffects = join(rlDir, '.cookbook', 'store', 'side_effects');
  const out: RolloutToolCalls = { steps: records.map((r) => r.step), episodes: 0, firstTurnCalls: 0, calls: [], trajectories: [] };
  for (const record of records) {
    for (const g of record.groups) {
      const group = deserializeTrajectoryGroup(store.readBlob(g.ref).toString('utf8'));
      // The group rollout's tool-call records: side_effects/<step>_<group>_<attempt>/tool_episode_*.json.
      const [step, groupIndex] = g.ref.match(/batch_(\d+)\/group_(\d+)/)!.slice(1).map(Number);
      const recordDir = readdirSync(sideEffects).find((d) => d.startsWith(`${step}_${groupIndex}_`));
      const recorded = new Map<string, string>();
      for (const f of recordDir ? readdirSync(join(sideEffects, recordDir)).filter((f) => f.startsWith('tool_episode_')) : []) {
        recorded.set(f, JSON.parse(readFileSync(join(sideEffects, recordDir!, f), 'utf8')).value.messages[0].content);
      }
      for (const [e, traj] of group.trajectoriesG.entries()) {
        out.episodes += 1;
        out.trajectories.push({ step, group: groupIndex, episode: e, trajectory: traj });
        if (toolCallsOf(traj.transitions[0].logs).length) out.firstTurnCalls += 1;
        for (const [t, tr] of traj.transitions.entries()) {
          const next = traj.transitions[t + 1];
          for (const c of toolCallsOf(tr.logs)) {
            out.calls.push({
              step,
              group: groupIndex,
              episode: e,
              turn: t,
              call: c.call,
              // A call logged without its result fails every comparison with the tool's answer.
              result: c.result ?? '',
              recorded: recorded.get(`tool_episode_${e}_turn_${t + 1}_call_${c.index}.json`),
              nextObservation: next ? obText(tok, next) : null,
            });
          }
        }
      }
    }
  }
  return out;
}

/** A code_rl verdict as text with the sandbox's measured `execution_time` masked, the one part a rerun changes (also inside JSON strings). */
export const maskSandboxTimes = (text: string) => text.replace(/("|\\")execution_time\1: [0-9.e-]+/g, '$1execution_time$1: T');

/** One assistant turn of a tool-use SFT transcript, replayed through an RL env. */
export interface ReplayedTurn {
  turn: number;
  /** The env's observation before the turn, and the SFT datum's tokens before the turn's trained span. */
  observation: number[];
  datumPrefix: number[];
  assistant: Message;
  /** The tool message the transcript has after this turn (undefined: the turn calls no tool). */
  toolResult: Message | undefined;
  /** What the env did with the turn's trained tokens as the action. */
  step: StepResult;
}

/**
 * Steps `env` through a transcript with each assistant turn's trained tokens (its SFT datum under
 * all_assistant_messages) as the action, so a test can check that SFT and RL see the same tokens
 * and that the env does what the transcript says.
 */
export async function* replayTranscript(env: Env, renderer: Renderer, messages: Message[]): AsyncGenerator<ReplayedTurn> {
  const { modelInput, weights } = renderer.buildSupervisedExample(messages, TrainOnWhat.ALL_ASSISTANT_MESSAGES);
  const tokens = modelInputToInts(modelInput);
  // The trained spans of the datum, one per assistant turn.
  const spans: Array<[number, number]> = [];
  weights.forEach((w, i) => {
    if (w > 0 && (i === 0 || weights[i - 1] === 0)) spans.push([i, i + 1]);
    else if (w > 0) spans.at(-1)![1] = i + 1;
  });
  const assistants = messages.filter((m) => m.role === 'assistant');
  if (spans.length !== assistants.length) throw new Error(`${spans.length} trained spans for ${assistants.length} assistant turns`);
  let ob = ((await env.initialObservation()) as InitialObservation).ob;
  for (const [turn, [start, end]] of spans.entries()) {
    const assistant = assistants[turn];
    const observation = modelInputToInts(ob);
    const step = await env.step(tokens.slice(start, end));
    const toolResult = assistant.tool_calls?.length ? messages[messages.indexOf(assistant) + 1] : undefined;
    yield { turn, observation, datumPrefix: tokens.slice(0, start), assistant, toolResult, step };
    ob = step.nextObservation;
  }
}

export interface WarmupPipelineRun {
  slDir: string;
  rlDir: string;
  /** The RL stage's resolved config. */
  rlConfig: Record<string, any>;
  /** The SFT stage's train_mean_nll per step. */
  nll: number[];
  seconds: number;
  /** The pipeline's own log dir (both stages: what `cookbook report` reads). */
  logPath: string;
}

/** Runs a two-stage warm-up pipeline config (SFT → RL) on the stack with `rlSteps` RL steps, and checks that the RL stage starts from the SFT's weights. */
export async function runWarmupPipeline(stack: TestStack, config: string, rlSteps: number): Promise<WarmupPipelineRun> {
  const run = testRun(stack, config, [`stages.1.config.max_steps=${rlSteps}`, 'stages.1.config.save_every=0', 'stages.1.config.eval_every=0'], 'pipeline');
  const started = Date.now();
  const result = await withWorker(stack, async () => (await (await startRun(stack.client, run, stack.taskQueue)).result()) as PipelineResult);
  expect(result.status).toBe('completed');
  expect(result.stages.map((s) => [s.kind, s.result.status])).toEqual([
    ['sl', 'completed'],
    ['rl', 'completed'],
  ]);
  const [slDir, rlDir] = result.stages.map((s) => s.logPath);
  const rlConfig = JSON.parse(readFileSync(join(rlDir, 'config.json'), 'utf8'));
  expect(rlConfig.load_checkpoint_path).toBe(result.stages[0].result.finalCheckpoint!.statePath);
  const nll = metricsOf(slDir).map((r) => r.train_mean_nll as number);
  return { slDir, rlDir, rlConfig, nll, seconds: (Date.now() - started) / 1000, logPath: run.run.logPath };
}
