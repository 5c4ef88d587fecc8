// The reference's prompt_distillation recipe as a pipeline on the real stack (Temporal dev server,
// the engine over HTTP, the tiny model's tokenizer): a data stage where the teacher answers each
// query behind the classification prompt, chunk by chunk, then SFT of the student on the bare
// queries. A worker killed mid-generation is replaced; the data file and the SFT metrics equal an
// uninterrupted run's, and a chunk already written is read back rather than sampled again.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promptDistillationActivities } from '../../src/activities/prompt-distillation.js';
import type { ActivityDeps } from '../../src/activities/context.js';
import { resolveRun, startRun } from '../../src/cli/train.js';
import { parseQueries } from '../../src/cookbook/distillation/prompt-distillation.js';
import { progressQuery } from '../../src/workflows/shared/messages.js';
import type { PipelineResult } from '../../src/workflows/pipeline.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
const config = join(fixtures, 'pipeline_prompt_distill_small.json');

describe('prompt distillation pipeline', { timeout: 900_000 }, () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the shipped pipeline resolves: a prompt_distill stage feeding an SL stage with the reference\'s defaults', () => {
    const r = resolveRun('pipeline', join(import.meta.dirname, '..', '..', 'configs', 'pipeline_prompt_distillation.json'), []);
    const [data, sl] = r.config.stages;
    expect(data.kind).toBe('prompt_distill');
    expect(data.config).toMatchObject({ temperature: 0.15, output_name: 'prompt_distillation_lang.jsonl' });
    expect(sl.config).toMatchObject({ learning_rate: 1e-4, lr_schedule: 'linear', num_epochs: 4, lora_rank: 32, save_every: 20, eval_every: 5 });
    expect(sl.config.dataset).toMatchObject({ file_path: '@previous_stage', batch_size: 128, train_on_what: 'all_assistant_messages' });
  });

  it('a worker killed mid-generation: identical data file and identical SFT run to an uninterrupted pipeline', async () => {
    const clean = testRun(stack, config, [], 'pipeline');
    const crashed = testRun(stack, config, [], 'pipeline');
    let w = await workerProcess(stack, 'prompt-distill-1');
    try {
      const cleanResult = (await (await startRun(stack.client, clean, stack.taskQueue)).result()) as PipelineResult;
      expect(cleanResult.status).toBe('completed');
      const handle = await startRun(stack.client, crashed, stack.taskQueue);
      const dataStage = stack.client.workflow.getHandle(`${crashed.workflowId}/0-prompt_distill`);
      await waitUntil('chunk 2 of the data stage', async () => ((await dataStage.query(progressQuery).catch(() => undefined))?.step ?? 0) >= 2, 300_000, 25);
      await w.kill();
      w = await workerProcess(stack, 'prompt-distill-2');
      const crashedResult = (await handle.result()) as PipelineResult;
      expect(crashedResult.status).toBe('completed');
      expect((await dataStage.query(progressQuery)).step).toBe(6);
      // The kill landed mid-chunk: a chunk activity ran again on the new worker.
      const history = await dataStage.fetchHistory();
      expect((history.events ?? []).filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1).length).toBeGreaterThan(0);

      const [cleanData, cleanSl] = cleanResult.stages;
      const [crashedData, crashedSl] = crashedResult.stages;
      const dataOf = (s: typeof cleanData) => readFileSync((s.result as unknown as { outputPath: string }).outputPath, 'utf8');
      // The data: bare query → the teacher's parsed answer, in query order (unparsable replies dropped).
      const queries = parseQueries(readFileSync(join(fixtures, 'prompt_distill_queries.txt'), 'utf8'));
      const rows = dataOf(cleanData).trim().split('\n').map((l) => JSON.parse(l));
      expect(rows.length).toBeGreaterThan(1);
      let at = 0;
      for (const row of rows) {
        expect(row.messages).toHaveLength(2);
        expect(row.messages[1].role).toBe('assistant');
        expect(row.messages[1].content).toMatch(/^\S+$/);
        at = queries.indexOf(row.messages[0].content, at) + 1;
        expect(at).toBeGreaterThan(0);
      }
      expect(dataOf(crashedData)).toBe(dataOf(cleanData));

      // The SFT stage trained on that file; the crashed pipeline's equals the clean one's.
      expect(metricsOf(cleanSl.logPath).map((r) => r.step)).toEqual([0, 1, 2]);
      expect(metricsOf(crashedSl.logPath)).toEqual(metricsOf(cleanSl.logPath));
      expect(checkpointsOf(crashedSl.logPath).map((c) => c.name)).toEqual(checkpointsOf(cleanSl.logPath).map((c) => c.name));
      expect(await weightsFingerprint(stack.engine.baseUrl, crashedSl.result.finalCheckpoint!.samplerPath!)).toBe(
        await weightsFingerprint(stack.engine.baseUrl, cleanSl.result.finalCheckpoint!.samplerPath!),
      );

      // A written chunk is read back: the activity answers without a backend.
      const noBackend = { backendFor: () => { throw new Error('a written chunk must not be sampled again'); } } as unknown as ActivityDeps;
      const acts = promptDistillationActivities(noBackend);
      const ref = { ...crashed.run, logPath: crashedData.logPath };
      for (let chunk = 0; chunk < 6; chunk++) expect(await acts.promptDistillChunk({ run: ref, chunk })).toMatchObject({ chunk, reused: true });
    } finally {
      await w.stop();
    }
  });
});
