// `cookbook tts`'s workflow on the real stack (Temporal dev server, the engine over HTTP, the real
// tokenizer): two problems on tiny-qwen3. The run's files hold every step of each sampled CoT as
// the reference splits it, each step's TTS is the formula of its four confidences, a confidence
// asked of the engine again is the stored one, the summary is the aggregate of the per-problem
// rows, the report renders the TTS section, and the history replays. A second run chunked
// differently scores the same.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '@temporalio/worker';
import { createTinkerBackend } from '../../src/backends/index.js';
import { resolveTts, startTts } from '../../src/cli/tts.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { aggregate, type ProblemSummary } from '../../src/cookbook/tts/analysis.js';
import { confidenceFromLogprobs, earlyExitInput, ttsOf } from '../../src/cookbook/tts/conditions.js';
import { planCot, thinkingText, type StepScore } from '../../src/cookbook/tts/score.js';
import { segmentCotSteps } from '../../src/cookbook/tts/steps.js';
import { TTS_FILES } from '../../src/cookbook/tts/results.js';
import { buildReportHtml } from '../../src/report/report.js';
import { workflowBundle } from '../../src/workers/worker.js';
import type { TtsWorkflowResult } from '../../src/workflows/tts.js';
import { startTestStack, withWorker, type TestStack } from '../support/stack.js';

const MODEL = 'tiny-qwen3';
let stack: TestStack;
let counter = 0;

const lines = <T>(path: string): T[] => readFileSync(path, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);

export async function ttsRun(s: TestStack, set: string[] = []): Promise<{ id: string; result: TtsWorkflowResult }> {
  const r = resolveTts(MODEL, { limit: '2', set: ['max_tokens=48', 'temperature=1.0', ...set] }, { runsDir: join(s.dir, 'runs'), workflowId: `tts-test-${process.pid}-${++counter}` });
  const result = (await (await startTts(s.client, r, s.taskQueue)).result()) as TtsWorkflowResult;
  return { id: r.workflowId, result };
}

describe('tts workflow', () => {
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('scores every step of each sampled CoT: files, formula, engine confidences, aggregate, report, replay', async () => {
    await withWorker(stack, async () => {
      const { id, result } = await ttsRun(stack);
      expect(result.status).toBe('completed');
      expect(result.numProblems).toBe(2);
      const dir = result.logPath;
      const cots = lines<{ problem_idx: number; question: string; answer: string; response: string; cot: string }>(join(dir, TTS_FILES.cots));
      const steps = lines<StepScore & { problem_idx: number }>(join(dir, TTS_FILES.steps));
      const rows = lines<ProblemSummary>(join(dir, TTS_FILES.perProblem));
      expect(cots.map((c) => c.problem_idx)).toEqual([0, 1]);
      for (const c of cots) {
        expect(c.response.length).toBeGreaterThan(0);
        expect(c.cot).toBe(thinkingText(c.response));
        const mine = steps.filter((s) => s.problem_idx === c.problem_idx);
        expect(mine.map((s) => s.step_text)).toEqual(segmentCotSteps(c.cot));
        for (const s of mine) expect(s.tts).toBe(ttsOf(s));
      }
      expect(steps.length).toBeGreaterThan(0);
      expect(result.summary).toEqual(aggregate(rows, MODEL, 'problems', 2));
      expect(result.summary.n_steps_total).toBe(steps.length);

      // The last step's S0(0) of problem 0, asked of the engine again: the stored confidence.
      const c0 = cots[0];
      const plans = planCot(c0.cot, 42);
      const last = plans[plans.length - 1];
      const { renderer, tokenizer } = await rendererForModel(MODEL);
      const input = earlyExitInput(renderer, tokenizer, c0.question, last.prefixes.s0_c0, c0.answer)!;
      const backend = createTinkerBackend({ baseUrl: stack.engine.baseUrl, apiKey: 'tml-test', env: {} });
      try {
        const sampler = await backend.createSamplingSession({ baseModel: MODEL });
        const again = confidenceFromLogprobs(await sampler.computeLogprobs(input.input), input.answerStart, input.answerTokens);
        expect(again).toBe(steps.filter((s) => s.problem_idx === 0)[last.index].s0_c0);
      } finally {
        await backend.close();
      }

      const html = await buildReportHtml([dir]);
      expect(html).toContain('id="tts"');
      expect(html).toContain('True-Thinking Score');
      expect(html).toContain(`problem 0: `);

      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, await stack.client.workflow.getHandle(id).fetchHistory(), id);

      // Chunked otherwise: the same CoTs, the same scores.
      const other = await ttsRun(stack, ['chunk_size=2', 'concurrency=1']);
      expect(lines(join(other.result.logPath, TTS_FILES.steps))).toEqual(steps);
      expect(other.result.summary).toEqual(result.summary);
    });
  });
});
