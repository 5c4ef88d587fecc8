// `cookbook tts` through a worker SIGKILLed inside a chunk: the chunk is retried on a new worker
// and the run's files (every CoT, every step's four confidences and TTS, the per-problem rows and
// the summary) equal those of an uninterrupted run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveTts, startTts } from '../../src/cli/tts.js';
import { TTS_FILES } from '../../src/cookbook/tts/results.js';
import type { TtsWorkflowResult } from '../../src/workflows/tts.js';
import { retriedActivities } from '../support/history.js';
import { startTestStack, untilActivityRunning, workerProcess, type TestStack } from '../support/stack.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ own: true });
});
afterAll(async () => {
  await stack?.stop();
});

// Long enough CoTs that the kill lands while a chunk samples or scores; a short heartbeat timeout
// so the lost attempt is handed on in seconds.
const SET = ['max_tokens=160', 'temperature=1.0', 'durability.heartbeat_timeout_s=4'];
const resolve = (name: string) => resolveTts('tiny-qwen3', { limit: '2', set: SET }, { runsDir: join(stack.dir, 'runs'), workflowId: `tts-kill-${name}` });
const files = (dir: string) => Object.fromEntries(Object.values(TTS_FILES).map((f) => [f, readFileSync(join(dir, f), 'utf8')]));

describe('tts workflow under a worker kill', { timeout: 600_000 }, () => {
  it('a worker SIGKILLed inside a chunk: the run ends with the files of an uninterrupted run', async () => {
    let worker = await workerProcess(stack, 'worker-clean');
    try {
      const clean = resolve('clean');
      const cleanResult = (await (await startTts(stack.client, clean, stack.taskQueue)).result()) as TtsWorkflowResult;

      const crashed = resolve('crashed');
      const handle = await startTts(stack.client, crashed, stack.taskQueue);
      await untilActivityRunning(handle, 'ttsChunk');
      await worker.kill();
      worker = await workerProcess(stack, 'worker-2');
      const crashedResult = (await handle.result()) as TtsWorkflowResult;

      expect(crashedResult.status).toBe('completed');
      expect(await retriedActivities(stack.client, crashed.workflowId, 'ttsChunk')).toBeGreaterThanOrEqual(1);
      expect(crashedResult.summary).toEqual(cleanResult.summary);
      expect(files(crashedResult.logPath)).toEqual(files(cleanResult.logPath));
    } finally {
      await worker.stop();
    }
  });
});
