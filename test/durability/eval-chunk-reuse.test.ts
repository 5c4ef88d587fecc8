// The eval chunk activity's own recovery (an edge case the kill test cannot aim at): an attempt
// that wrote its chunk's blob and died before reporting is not sampled again; a damaged or
// mismatched blob is not trusted, and the chunk is sampled again. The backend is a stub that
// fails loudly, so any sampling shows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { evalActivities } from '../../src/activities/eval.js';
import type { TrainingBackend } from '../../src/backends/index.js';
import { EvalConfigSchema } from '../../src/cookbook/eval/benchmark-config.js';
import { chunkBlobPath, type ChunkBlob } from '../../src/cookbook/eval/results.js';
import { RunStore, type RunRef } from '../../src/cookbook/run-store.js';
import { flipBit } from '../support/damage.js';

const dir = mkdtempSync(join(tmpdir(), 'eval-chunk-reuse-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SAMPLED = 'the chunk was sampled again';
const acts = evalActivities({
  backendFor: () =>
    ({
      createSamplingSession: async () => {
        throw new Error(SAMPLED);
      },
    }) as unknown as TrainingBackend,
});
const env = new MockActivityEnvironment();

async function preparedRun(name: string): Promise<RunRef> {
  const run: RunRef = { workflowId: name, kind: 'eval', logPath: join(dir, name) };
  const config = EvalConfigSchema.parse({ model: 'tiny-qwen3', suite: 'gsm8k', chunk_size: 2, max_tokens: 8 });
  expect(await env.run(acts.evalPrepare, { run, config })).toMatchObject({ numExamples: 5, numChunks: 3, baseModel: 'tiny-qwen3', modelPath: null });
  return run;
}

const result = (index: number, correct: boolean) => ({ index, id: `gsm8k_${index}`, prompt: 'q', response: 'r', expected: '1', extracted: correct ? '1' : '', correct });
const writeChunk = (run: RunRef, chunk: number, results: ChunkBlob['results']) =>
  new RunStore(run.logPath).writeBlob(chunkBlobPath(chunk), JSON.stringify({ format: 'eval_chunk/v1', suite: 'gsm8k', chunk, results } satisfies ChunkBlob));
const chunkInput = (run: RunRef, chunk: number) => ({ run, chunk, baseModel: 'tiny-qwen3', modelPath: null });

describe('eval chunk activity', () => {
  it('returns a chunk a finished attempt already wrote, without sampling', async () => {
    const run = await preparedRun('reuse');
    writeChunk(run, 1, [result(2, true), result(3, false)]);
    expect(await env.run(acts.evalChunk, chunkInput(run, 1))).toEqual({ ref: chunkBlobPath(1), examples: 2, correct: 1 });
    // A chunk nobody finished is sampled (the stub shows it).
    await expect(env.run(acts.evalChunk, chunkInput(run, 0))).rejects.toThrow(SAMPLED);
  });

  it('samples again over a damaged blob or one that does not hold this chunk whole', async () => {
    const run = await preparedRun('distrust');
    writeChunk(run, 0, [result(0, true), result(1, true)]);
    flipBit(join(run.logPath, '.cookbook', 'store', chunkBlobPath(0)));
    await expect(env.run(acts.evalChunk, chunkInput(run, 0))).rejects.toThrow(SAMPLED);
    writeChunk(run, 1, [result(2, true)]); // one example short (another chunk_size wrote it)
    await expect(env.run(acts.evalChunk, chunkInput(run, 1))).rejects.toThrow(SAMPLED);
  });

  it('a chunk past the last example is a non-retryable config error', async () => {
    const run = await preparedRun('past-end');
    await expect(env.run(acts.evalChunk, chunkInput(run, 3))).rejects.toMatchObject({ type: 'ConfigError', nonRetryable: true });
  });
});
