// The TTS chunk activity's own recovery (an edge case the kill test cannot aim at): an attempt
// that wrote its chunk's blob and died before reporting is not scored again; a damaged or
// mismatched blob is not trusted, and the chunk is scored again. The backend is a stub that fails
// loudly, so any sampling shows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { ttsActivities } from '../../src/activities/tts.js';
import type { TrainingBackend } from '../../src/backends/index.js';
import { RunStore, type RunRef } from '../../src/cookbook/run-store.js';
import { problemSummary } from '../../src/cookbook/tts/analysis.js';
import { TtsConfigSchema } from '../../src/cookbook/tts/config.js';
import type { ProblemRecord } from '../../src/cookbook/tts/problem.js';
import { ttsChunkBlobPath, type TtsChunkBlob } from '../../src/cookbook/tts/results.js';
import { flipBit } from '../support/damage.js';

const dir = mkdtempSync(join(tmpdir(), 'tts-chunk-reuse-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SAMPLED = 'the chunk was scored again';
const acts = ttsActivities({
  backendFor: () =>
    ({
      createSamplingSession: async () => {
        throw new Error(SAMPLED);
      },
    }) as unknown as TrainingBackend,
});
const env = new MockActivityEnvironment();

async function preparedRun(name: string): Promise<RunRef> {
  const run: RunRef = { workflowId: name, kind: 'tts', logPath: join(dir, name) };
  const config = TtsConfigSchema.parse({ model: 'tiny-qwen3', chunk_size: 2, max_tokens: 8 });
  expect(await env.run(acts.ttsPrepare, { run, config })).toMatchObject({ numProblems: 4, numChunks: 2, baseModel: 'tiny-qwen3', modelPath: null });
  return run;
}

const step = { step_index: 0, step_text: 'So 1 + 1 = 2 here.', tts: 0.25, s1_c1: 0.75, s0_c1: 0.25, s1_c0: 0.5, s0_c0: 0.5, is_self_verification: false };
const record = (i: number): ProblemRecord => ({ problem_idx: i, question: 'q', answer: '2', response: 'r', cot: 'c', steps: [step], outcome: problemSummary('q', '2', [step], true, i) });
const writeChunk = (run: RunRef, chunk: number, records: ProblemRecord[]) =>
  new RunStore(run.logPath).writeBlob(ttsChunkBlobPath(chunk), JSON.stringify({ format: 'tts_chunk/v1', chunk, records } satisfies TtsChunkBlob));
const chunkInput = (run: RunRef, chunk: number) => ({ run, chunk, baseModel: 'tiny-qwen3', modelPath: null });

describe('tts chunk activity', () => {
  it('returns a chunk a finished attempt already wrote, without scoring', async () => {
    const run = await preparedRun('reuse');
    writeChunk(run, 1, [record(2), record(3)]);
    expect(await env.run(acts.ttsChunk, chunkInput(run, 1))).toEqual({ ref: ttsChunkBlobPath(1), problems: 2, steps: 2, correct: 2 });
    // A chunk nobody finished is scored (the stub shows it).
    await expect(env.run(acts.ttsChunk, chunkInput(run, 0))).rejects.toThrow(SAMPLED);
  });

  it('scores again over a damaged blob or one that does not hold this chunk whole', async () => {
    const run = await preparedRun('distrust');
    writeChunk(run, 0, [record(0), record(1)]);
    flipBit(join(run.logPath, '.cookbook', 'store', ttsChunkBlobPath(0)));
    await expect(env.run(acts.ttsChunk, chunkInput(run, 0))).rejects.toThrow(SAMPLED);
    writeChunk(run, 1, [record(2)]); // one problem short (another chunk_size wrote it)
    await expect(env.run(acts.ttsChunk, chunkInput(run, 1))).rejects.toThrow(SAMPLED);
    writeChunk(run, 1, [record(0), record(1)]); // whole, but other problems'
    await expect(env.run(acts.ttsChunk, chunkInput(run, 1))).rejects.toThrow(SAMPLED);
  });

  it('a chunk past the last problem is a non-retryable config error', async () => {
    const run = await preparedRun('past-end');
    await expect(env.run(acts.ttsChunk, chunkInput(run, 2))).rejects.toMatchObject({ type: 'ConfigError', nonRetryable: true });
  });
});
