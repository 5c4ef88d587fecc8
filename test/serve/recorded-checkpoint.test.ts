// serve/chat on a sampler path whose format the server invents (SkyRL-tx: `tinker://<model>/<name>`,
// refused by its weights_info with a 400): the run that recorded the path gives the base model,
// renderer and tokenizer. The server is the in-process fake (its weights_info made to refuse as
// SkyRL-tx's does); the tokenizer and renderer are the real ones.
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openServedModel } from '../../src/serve/served-model.js';
import { findRecordedCheckpoint } from '../../src/serve/recorded-checkpoint.js';
import { type FakeTinkerServer, startFakeServer } from '../backends/fake-server.js';

const PATH = 'tinker://model_7/final';
let server: FakeTinkerServer;
let dir: string;
beforeEach(async () => {
  server = await startFakeServer();
  dir = mkdtempSync(join(tmpdir(), 'h58b-recorded-'));
});
afterEach(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

function writeRun(name: string, rows: object[], config: object = { model_name: 'tiny-qwen3' }): string {
  const run = join(dir, name);
  mkdirSync(run, { recursive: true });
  writeFileSync(join(run, 'config.json'), JSON.stringify(config));
  writeFileSync(join(run, 'checkpoints.jsonl'), `${rows.map((r) => JSON.stringify(r)).join('\n')}\n{"torn`);
  return run;
}
const refuseWeightsInfo = () =>
  server.fault({ path: '/api/v1/weights_info', times: 1, action: { status: 400, body: { detail: 'Invalid tinker path format. Expected: tinker://model_id/weights/checkpoint_id' } } });

describe('a checkpoint path the server invents', () => {
  it("is served with the base model, renderer and tokenizer its run recorded when weights_info refuses it", async () => {
    const run = writeRun('sl-run', [
      { name: '000010', batch: 10, sampler_path: 'tinker://model_7/000010', base_model: 'tiny-qwen3', renderer_name: 'qwen3', tokenizer: 'tiny-qwen3' },
      { name: 'final', final: true, sampler_path: PATH, base_model: 'tiny-qwen3', renderer_name: 'role_colon', tokenizer: 'tiny-qwen3' },
    ]);
    refuseWeightsInfo();
    const model = await openServedModel({ source: PATH, baseUrl: server.baseUrl, tinkerApiKey: 'tml-test', runDirs: [run] });
    try {
      expect([model.baseModel, model.renderer.name]).toEqual(['tiny-qwen3', 'role_colon']);
      expect(server.requestsTo('/api/v1/create_sampling_session')[0].json).toMatchObject({ model_path: PATH });
    } finally {
      await model.close();
    }
  });

  it('says which runs it searched and how to name the right one when none records the path', async () => {
    const run = writeRun('other', [{ name: 'final', sampler_path: 'tinker://elsewhere/final', base_model: 'tiny-qwen3' }]);
    refuseWeightsInfo();
    await expect(openServedModel({ source: PATH, baseUrl: server.baseUrl, tinkerApiKey: 'tml-test', runDirs: [run] })).rejects.toThrow(
      `the server's weights_info refused ${PATH} (Tinker weights_info failed: HTTP 400: Invalid tinker path format. Expected: tinker://model_id/weights/checkpoint_id), and no run in ${run} records it: pass --run`,
    );
  });

  it('finds the record among the runs under ./runs by default; a run-set tokenizer_path travels with it', () => {
    const cwd = process.cwd();
    writeRun('runs/a', [{ name: 'final', sampler_path: 'tinker://x/final', base_model: 'tiny-qwen3' }]);
    writeRun('runs/b', [{ name: 'final', state_path: PATH, base_model: 'Qwen/Qwen3-8B', tokenizer: '/models/tok', renderer_name: 'qwen3' }], { model_name: 'Qwen/Qwen3-8B' });
    process.chdir(dir);
    try {
      expect(findRecordedCheckpoint(PATH)).toEqual({ runDir: join(dir, 'runs', 'b'), baseModel: 'Qwen/Qwen3-8B', rendererName: 'qwen3', tokenizerPath: '/models/tok' });
      expect(findRecordedCheckpoint('tinker://nobody/final')).toBeUndefined();
    } finally {
      process.chdir(cwd);
    }
  });
});
