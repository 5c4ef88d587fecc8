// True-Thinking Scores of a model's chains of thought (`cookbook tts`): prepare, then the problems
// in chunks, `concurrency` chunk activities at a time, then the aggregate. Each problem's CoT is
// sampled with a seed from (seed, problem index) and its perturbations drawn from the run's seed,
// so a chunk scored again after a crash gives the same scores; chunks already finished are in the
// history and never run again.
import { proxyActivities, setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { TtsActivities, TtsOutcome, TtsPlan } from '../activities/tts.js';
import type { TtsConfig } from '../cookbook/tts/config.js';
import type { RunRef } from '../cookbook/run-store.js';
import { chunkActivityOptions, inLanes } from './shared/lanes.js';
import { progressQuery, type Progress, type RunStatus } from './shared/messages.js';
import { StatusKey, StepKey } from './shared/search-attributes.js';
import type { RunResult } from './shared/training-run.js';

export interface TtsInput {
  run: RunRef;
  config: TtsConfig;
}

/** A training run's result shape too (steps = chunks), so `cookbook status` shows a finished TTS run. */
export interface TtsWorkflowResult extends TtsOutcome, RunResult {
  status: 'completed';
  numProblems: number;
}

export async function ttsWorkflow({ run, config }: TtsInput): Promise<TtsWorkflowResult> {
  const acts = proxyActivities<TtsActivities>(chunkActivityOptions(config.durability));

  let status: RunStatus = 'starting';
  let plan: TtsPlan | undefined;
  let chunksDone = 0;
  let problemsDone = 0;
  let stepsDone = 0;
  let correct = 0;
  let metrics: Record<string, number> = {};

  // The training runs' progress shape, so `cookbook status`, `watch` and `runs` show TTS runs too:
  // a "step" is a chunk of problems.
  setHandler(progressQuery, (): Progress => ({
    kind: 'tts',
    model: config.model,
    status,
    step: chunksDone,
    totalSteps: plan?.numChunks ?? 0,
    paused: false,
    stopRequested: false,
    lastMetrics: { problems_done: problemsDone, num_problems: plan?.numProblems ?? 0, steps_scored: stepsDone, num_correct: correct, ...metrics },
    hot: { lr_multiplier: 1, eval_every: 0, save_every: 0 },
    recoveries: 0,
    logPath: run.logPath,
  }));

  plan = await acts.ttsPrepare({ run, config });
  const { numChunks, baseModel, modelPath } = plan;
  status = 'running';
  upsertSearchAttributes([{ key: StatusKey, value: status }]);

  await inLanes(numChunks, config.concurrency, async (chunk) => {
    const r = await acts.ttsChunk.executeWithOptions({ summary: `tts chunk ${chunk + 1}/${numChunks}` }, [{ run, chunk, baseModel, modelPath }]);
    chunksDone++;
    problemsDone += r.problems;
    stepsDone += r.steps;
    correct += r.correct;
    setCurrentDetails(`tts: ${problemsDone}/${plan!.numProblems} problems, ${stepsDone} steps scored`);
  });
  upsertSearchAttributes([{ key: StepKey, value: chunksDone }]);

  const outcome = await acts.ttsFinish({ run, numChunks, baseModel, modelPath });
  const s = outcome.summary;
  metrics = { mean_tts: s.mean_tts, 'frac_high_tts_0.7': s['frac_high_tts_0.7'], 'frac_decorative_0.005': s['frac_decorative_0.005'], accuracy: s.accuracy };
  status = 'completed';
  upsertSearchAttributes([{ key: StatusKey, value: status }]);
  setCurrentDetails(`tts: mean TTS ${s.mean_tts.toFixed(4)} over ${s.n_steps_total} steps of ${plan.numProblems} problems`);
  return { status: 'completed', logPath: run.logPath, numProblems: plan.numProblems, steps: numChunks, lastMetrics: metrics, recoveries: 0, ...outcome };
}
