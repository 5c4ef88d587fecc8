// Experiment tracking on real run directories: the W&B offline run directory, and the online
// HTTP path against a local fake W&B server that checks every request. Each metrics row is
// mirrored exactly once through rollbacks (a restore replays steps), torn appends, concurrent
// syncs, a crash between a send and its cursor, and W&B being down.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunStore } from '../../src/cookbook/run-store.js';
import { syncRun } from '../../src/cookbook/tracking/sync.js';
import { manifestJson, modelArtifact } from '../../src/cookbook/tracking/wandb-artifact.js';
import { wandbRunId } from '../../src/cookbook/tracking/wandb-format.js';
import { OfflineWandbRun } from '../../src/cookbook/tracking/wandb-offline.js';
import { startFakeWandb, type FakeWandb } from '../support/fake-wandb.js';

const FLOATS = new Set(['learning_rate', 'loss']);

function trackedRun(config: Record<string, unknown> = { wandb_project: 'cookbook-tests', wandb_name: 'sl-small', learning_rate: 0.01, model_name: 'tiny-qwen3' }) {
  const logPath = mkdtempSync(join(tmpdir(), 'cookbook-tracking-'));
  const workflowId = `sl-tracking-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const store = new RunStore(logPath);
  store.init({ workflowId, kind: 'sl', config }, FLOATS);
  return { logPath, workflowId, store };
}

const rowsOf = (store: RunStore) => store.readMetrics();
const stepsOf = (lines: Array<Record<string, unknown>>) => lines.map((l) => l._step);

describe('W&B offline run directory', () => {
  const env = { WANDB_MODE: 'offline' };

  it('holds the config, every row once as history, the summary and the final checkpoint, in wandb\'s layout', async () => {
    const { logPath, workflowId, store } = trackedRun();
    for (const step of [0, 1, 2]) store.writeMetrics({ step, loss: 3 - step, learning_rate: 0.01 });
    await syncRun(logPath, env);

    const [dir] = readdirSync(join(logPath, 'wandb'));
    expect(dir).toMatch(new RegExp(`^offline-run-\\d{8}_\\d{6}-${wandbRunId(workflowId)}$`));
    const files = join(logPath, 'wandb', dir, 'files');
    expect(readFileSync(join(files, 'config.yaml'), 'utf8')).toContain('"learning_rate":\n  desc: null\n  value: 0.01\n');
    expect(JSON.parse(readFileSync(join(files, 'wandb-metadata.json'), 'utf8'))).toMatchObject({ project: 'cookbook-tests', display_name: 'sl-small', workflow_id: workflowId });
    expect(existsSync(join(logPath, 'wandb', dir, 'logs'))).toBe(true);

    const offline = new OfflineWandbRun({ workflowId, logPath, project: 'cookbook-tests', name: null, config: {} });
    expect(offline.readHistory()).toEqual(rowsOf(store).map((r) => ({ ...r, _step: r.step })));
    expect(offline.readSummary()).toMatchObject({ loss: 1, _step: 2 });

    // A restore rolls back steps 1.. and replays them: W&B has them already, nothing is logged twice.
    store.truncateMetrics(1);
    for (const step of [1, 2, 3]) store.writeMetrics({ step, loss: 3 - step, learning_rate: 0.01 });
    await syncRun(logPath, env);
    expect(stepsOf(offline.readHistory())).toEqual([0, 1, 2, 3]);

    // A crash mid-append leaves a torn, unrecorded tail: it is not counted, and the row is written whole.
    appendFileSync(join(files, 'wandb-history.jsonl'), '{"step": 4, "lo');
    store.writeMetrics({ step: 4, loss: -1, learning_rate: 0.01 });
    await syncRun(logPath, env);
    expect(stepsOf(offline.readHistory())).toEqual([0, 1, 2, 3, 4]);
    expect(readFileSync(join(files, 'wandb-history.jsonl'), 'utf8').trim().split('\n')).toHaveLength(5);

    // Syncs racing each other (activities of one run finishing together) still write each row once.
    for (const step of [5, 6]) store.writeMetrics({ step, loss: -step, learning_rate: 0.01 });
    await Promise.all([1, 2, 3, 4].map(() => syncRun(logPath, env)));
    expect(stepsOf(offline.readHistory())).toEqual([0, 1, 2, 3, 4, 5, 6]);

    store.writeCheckpoint({ name: 'final', epoch: 1, batch: 0, state_path: 'tinker://r/weights/final', sampler_path: 'tinker://r/sampler_weights/final' });
    await syncRun(logPath, env);
    expect(JSON.parse(readFileSync(join(files, 'final_checkpoint.json'), 'utf8'))).toMatchObject({ name: 'final', state_path: 'tinker://r/weights/final' });
    expect(offline.readSummary()).toMatchObject({ _step: 6, 'final_checkpoint/sampler_path': 'tinker://r/sampler_weights/final' });
    // Still one directory: later syncs (another worker) find it by the run id.
    expect(readdirSync(join(logPath, 'wandb'))).toEqual([dir]);
  });

  it('untracked runs (no wandb_project, or WANDB_MODE=disabled) write nothing', async () => {
    const plain = trackedRun({ learning_rate: 0.01 });
    plain.store.writeMetrics({ step: 0, loss: 1 });
    expect(await syncRun(plain.logPath, env)).toBeUndefined();
    const disabled = trackedRun();
    disabled.store.writeMetrics({ step: 0, loss: 1 });
    expect(await syncRun(disabled.logPath, { WANDB_MODE: 'disabled', WANDB_API_KEY: 'k' })).toBeUndefined();
    expect(existsSync(join(plain.logPath, 'wandb'))).toBe(false);
    expect(existsSync(join(disabled.logPath, 'wandb'))).toBe(false);
  });
});

describe('W&B online (HTTP API, against a fake server)', () => {
  const key = 'wandb-test-key-0123456789';
  let wandb: FakeWandb;
  beforeAll(async () => {
    wandb = await startFakeWandb(key);
  });
  afterAll(async () => {
    await wandb?.close();
  });

  it('creates the run with its config, streams each row once at its offset, survives a lost cursor and an outage, and completes with the final checkpoint', async () => {
    const env = { WANDB_API_KEY: key, WANDB_BASE_URL: wandb.baseUrl };
    const { logPath, workflowId, store } = trackedRun();
    const runId = wandbRunId(workflowId);
    for (const step of [0, 1, 2]) store.writeMetrics({ step, loss: 3 - step, learning_rate: 0.01 });
    await syncRun(logPath, env);
    const run = wandb.runs.get(runId)!;
    expect(run.project).toBe('cookbook-tests');
    expect(run.displayName).toBe('sl-small');
    expect(run.config?.learning_rate).toEqual({ desc: null, value: 0.01 });
    expect(run.history.map((l) => JSON.parse(l)._step)).toEqual([0, 1, 2]);

    // A crash after W&B took rows 3-4 but before the cursor moved: they are resent at the same offsets.
    const cursorFile = join(logPath, '.cookbook', 'tracking', 'wandb-online.json');
    const before = readFileSync(cursorFile, 'utf8');
    for (const step of [3, 4]) store.writeMetrics({ step, loss: 3 - step, learning_rate: 0.01 });
    await syncRun(logPath, env);
    writeFileSync(cursorFile, before);
    store.writeMetrics({ step: 5, loss: -2, learning_rate: 0.01 });
    await syncRun(logPath, env);
    expect(run.history.map((l) => JSON.parse(l)._step)).toEqual([0, 1, 2, 3, 4, 5]);

    // W&B down: the sync fails, the cursor stays, the next sync catches up.
    store.writeMetrics({ step: 6, loss: -3, learning_rate: 0.01 });
    wandb.failNext(1);
    await expect(syncRun(logPath, env)).rejects.toThrow(/W&B file_stream: HTTP 503/);
    await syncRun(logPath, env);
    expect(run.history.map((l) => JSON.parse(l)._step)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(run.history.map((l) => JSON.parse(l))).toEqual(rowsOf(store).map((r) => ({ ...r, _step: r.step })));

    store.writeCheckpoint({ name: 'final', epoch: 1, batch: 0, state_path: 'tinker://r/weights/final', sampler_path: 'tinker://r/sampler_weights/final' });
    await syncRun(logPath, env);
    await syncRun(logPath, env);
    expect(run.complete).toBe(true);
    expect(run.summary).toMatchObject({ _step: 6, loss: -3, 'final_checkpoint/state_path': 'tinker://r/weights/final' });
    expect(JSON.parse(run.files['final_checkpoint.json'][0])).toMatchObject({ name: 'final', sampler_path: 'tinker://r/sampler_weights/final' });
    expect(wandb.rejected).toEqual([]);
  });

  it('logs the final checkpoint as the run\'s "model" artifact in wandb\'s call order, uploaded and committed once through a failed upload and a crash after the commit', async () => {
    const env = { WANDB_API_KEY: key, WANDB_BASE_URL: wandb.baseUrl };
    const { logPath, workflowId, store } = trackedRun();
    const runId = wandbRunId(workflowId);
    store.writeMetrics({ step: 0, loss: 1, learning_rate: 0.01 });
    await syncRun(logPath, env);
    store.writeCheckpoint({ name: '000001', epoch: 0, batch: 1, state_path: 'tinker://r/weights/000001' });
    const final = { name: 'final', epoch: 1, batch: 0, state_path: 'tinker://r/weights/final', sampler_path: 'tinker://r/sampler_weights/final' };
    store.writeCheckpoint(final);
    const jsonl = store.readCheckpoints().map((r) => `${JSON.stringify(r)}\n`).join('');
    const expected = modelArtifact(runId, store.readCheckpoints().at(-1)!, jsonl);
    const ours = (from: number) => wandb.calls.slice(from).filter((c) => /Artifact|^PUT|file_stream/.test(c));

    // The manifest upload fails: the run is not completed, the next sync picks the artifact up again.
    const cursorFile = join(logPath, '.cookbook', 'tracking', 'wandb-online.json');
    let from = wandb.calls.length;
    wandb.failNextCall(/^PUT wandb_manifest\.json$/);
    await expect(syncRun(logPath, env)).rejects.toThrow(/upload wandb_manifest\.json: HTTP 500/);
    expect(ours(from)).toEqual([
      `POST /files/test-entity/cookbook-tests/${runId}/file_stream`,
      'CreateArtifact', 'CreateArtifactManifest', 'CreateArtifactFiles', 'PUT checkpoints.jsonl', 'CreateArtifactManifest',
    ]);
    expect(wandb.runs.get(runId)!.complete).toBe(false);
    from = wandb.calls.length;
    await syncRun(logPath, env);
    // Same artifact (same digest, still PENDING); checkpoints.jsonl is already stored, so no second PUT.
    expect(ours(from)).toEqual([
      `POST /files/test-entity/cookbook-tests/${runId}/file_stream`,
      'CreateArtifact', 'CreateArtifactManifest', 'CreateArtifactFiles', 'CreateArtifactManifest', 'PUT wandb_manifest.json', 'CommitArtifact',
      `POST /files/test-entity/cookbook-tests/${runId}/file_stream`,
    ]);
    const artifacts = [...wandb.artifacts.values()].filter((a) => a.runName === runId);
    expect(artifacts).toHaveLength(1);
    const [artifact] = artifacts;
    expect(artifact).toMatchObject({ type: 'model', collection: `model-${runId}`, digest: expected.digest, aliases: ['latest', 'final'], project: 'cookbook-tests', state: 'COMMITTED', commits: 1 });
    expect(artifact.metadata).toEqual(store.readCheckpoints().at(-1));
    expect(artifact.files['checkpoints.jsonl']).toBe(jsonl);
    expect(artifact.files['wandb_manifest.json']).toBe(manifestJson(expected.entries));
    expect(JSON.parse(artifact.files['wandb_manifest.json']).contents).toEqual({
      'checkpoints.jsonl': { digest: expected.entries[0].digest, size: Buffer.byteLength(jsonl) },
      state_path: { digest: final.state_path, ref: final.state_path },
      sampler_path: { digest: final.sampler_path, ref: final.sampler_path },
    });
    expect(wandb.runs.get(runId)!.complete).toBe(true);

    // A crash after the commit, before the cursor recorded it: W&B answers the digest COMMITTED, nothing is redone.
    const committed = JSON.parse(readFileSync(cursorFile, 'utf8'));
    writeFileSync(cursorFile, JSON.stringify({ ...committed, artifactId: undefined, finished: false }));
    from = wandb.calls.length;
    await syncRun(logPath, env);
    expect(ours(from).filter((c) => c !== `POST /files/test-entity/cookbook-tests/${runId}/file_stream`)).toEqual(['CreateArtifact']);
    expect(artifact.commits).toBe(1);
    expect(JSON.parse(readFileSync(cursorFile, 'utf8'))).toMatchObject({ artifactId: artifact.id, finished: true });
    expect(wandb.rejected).toEqual([]);
  });

  it('a wrong key is refused by W&B and reported; nothing is counted as sent', async () => {
    const { logPath, store } = trackedRun();
    store.writeMetrics({ step: 0, loss: 1 });
    await expect(syncRun(logPath, { WANDB_API_KEY: 'wrong', WANDB_BASE_URL: wandb.baseUrl })).rejects.toThrow(/upsertBucket: HTTP 401/);
    expect(existsSync(join(logPath, '.cookbook', 'tracking', 'wandb-online.json'))).toBe(false);
  });

  it('`cookbook track <log dir>` uploads an offline-tracked run from the CLI, each row once', async () => {
    const { logPath, workflowId, store } = trackedRun();
    for (const step of [0, 1]) store.writeMetrics({ step, loss: 2 - step });
    await syncRun(logPath, { WANDB_MODE: 'offline' });
    store.writeMetrics({ step: 2, loss: 0.5 });
    store.writeCheckpoint({ name: 'final', epoch: 1, batch: 0, state_path: 'tinker://r/weights/final' });
    const bin = join(import.meta.dirname, '..', '..', 'bin', 'cookbook.mjs');
    const env = { ...process.env, WANDB_API_KEY: key, WANDB_BASE_URL: wandb.baseUrl, WANDB_MODE: '' };
    const cli = () => promisify(execFile)(process.execPath, [bin, 'track', logPath], { env });
    expect((await cli()).stdout).toContain(`mirrored to ${wandb.baseUrl} cookbook-tests/${wandbRunId(workflowId)}`);
    await cli();
    const run = wandb.runs.get(wandbRunId(workflowId))!;
    expect(run.history.map((l) => JSON.parse(l)._step)).toEqual([0, 1, 2]);
    expect(run.complete).toBe(true);
    const untracked = trackedRun({ learning_rate: 0.01 });
    expect((await promisify(execFile)(process.execPath, [bin, 'track', untracked.logPath], { env })).stdout).toContain('not tracked');
  });
});
