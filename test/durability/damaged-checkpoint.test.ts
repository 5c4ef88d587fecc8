// A checkpoint damaged on the engine's disk: restoring it fails with the non-retryable
// `CheckpointDamaged` failure naming the file (what the workflow falls back on), never with a
// retryable error and never by loading it; an intact older checkpoint still restores, exactly.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend, type Datum, type TrainingBackend } from '../../src/backends/index.js';
import { trainingActivities } from '../../src/activities/training.js';
import { ErrorTypes, NON_RETRYABLE_ERROR_TYPES, type ModelRef } from '../../src/activities/types.js';
import { RunStore, type RunRef } from '../../src/cookbook/run-store.js';
import { flipBit } from '../support/damage.js';
import { startEngine, type EngineHandle } from '../support/engine.js';

let engine: EngineHandle;
let backend: TrainingBackend;

beforeAll(async () => {
  engine = await startEngine();
  backend = createTinkerBackend({ baseUrl: engine.baseUrl, apiKey: 'tml-test' });
});

afterAll(async () => {
  await backend?.close();
  await engine?.stop();
});

const datum = (tokens: number[]): Datum => ({
  model_input: { chunks: [{ type: 'encoded_text', tokens: tokens.slice(0, -1) }] },
  loss_fn_inputs: {
    target_tokens: { data: tokens.slice(1), dtype: 'int64' },
    weights: { data: tokens.slice(1).map(() => 1), dtype: 'float32' },
  },
});
const TRAIN = [datum([5, 9, 13, 17, 21, 25, 29, 33]), datum([40, 41, 42, 43, 44, 45])];
const PROBE = [datum([700, 701, 702, 703, 704, 705, 706])];

describe('restoring a damaged checkpoint', () => {
  it('fails with CheckpointDamaged naming the file, non-retryable; the last good checkpoint restores exactly', async () => {
    const logPath = mkdtempSync(join(tmpdir(), 'cookbook-damaged-ckpt-'));
    const run: RunRef = { workflowId: 'damaged-ckpt', kind: 'sl', logPath };
    new RunStore(logPath).init({ workflowId: run.workflowId, kind: 'sl', config: { model_name: 'tiny-qwen3', lora_rank: 4, seed: 0, base_url: engine.baseUrl, load_checkpoint_path: null } }, new Set());
    const session = await backend.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4, seed: 3 } });
    await (await session.forwardBackward(TRAIN, 'cross_entropy', { seqId: 1 })).result();
    await (await session.optimStep({ learning_rate: 5e-2 }, { seqId: 2 })).result();
    const good = (await (await session.saveState('good', { seqId: 3 })).result()).path;
    const atGood = (await (await session.forward(PROBE, 'cross_entropy', { seqId: 4 })).result()).loss_fn_outputs;
    await (await session.forwardBackward(TRAIN, 'cross_entropy', { seqId: 5 })).result();
    await (await session.optimStep({ learning_rate: 5e-2 }, { seqId: 6 })).result();
    const latest = (await (await session.saveState('latest', { seqId: 7 })).result()).path;

    const [runId, , name] = latest.slice('tinker://'.length).split('/');
    const damagedFile = join(engine.dataDir, 'runs', runId, 'weights', name, 'adapter_model.safetensors');
    flipBit(damagedFile);

    const acts = trainingActivities({ backendFor: () => backend });
    const env = new MockActivityEnvironment();
    const failure = await env.run(acts.restoreModel, { run, statePath: latest, withOptimizer: true }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    const f = failure as ApplicationFailure;
    expect(f.type).toBe(ErrorTypes.checkpointDamaged);
    expect(f.nonRetryable).toBe(true);
    expect(NON_RETRYABLE_ERROR_TYPES).toContain(f.type);
    expect(f.message).toContain(`checkpoint ${latest} is damaged: ${damagedFile}`);
    expect(f.details).toEqual([{ statePath: latest }]);

    // The fallback: the checkpoint before it restores, with its exact weights.
    const restored = (await env.run(acts.restoreModel, { run, statePath: good, withOptimizer: true })) as ModelRef;
    expect(restored.nextSeqId).toBe(2);
    const again = backend.openTrainingSession(restored.modelId);
    const atRestore = (await (await again.forward(PROBE, 'cross_entropy', { seqId: restored.nextSeqId })).result()).loss_fn_outputs;
    expect(atRestore).toEqual(atGood);
  });
});
