// The offline run's record stream `run-<id>.wandb`, read back by wandb itself (its DataStore and
// Record protobuf class, wandb 0.22.3 in a cached venv) and by `wandb sync --view --verbose`: the
// config, every metrics row once at its step, the summary, the final checkpoint as a "model"
// artifact, exit and final; LevelDB-log framing across block boundaries; and exactly-once appends
// through a kill mid-write (a torn record past the cursor) and a crash before the cursor landed.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureWandbEnv } from '../../scripts/lib/wandb-venv.mjs';
import { RunStore } from '../../src/cookbook/run-store.js';
import { syncRun } from '../../src/cookbook/tracking/sync.js';
import { BLOCK_BYTES, RecordStream } from '../../src/cookbook/tracking/wandb-datastore.js';
import { manifestJson, modelArtifact } from '../../src/cookbook/tracking/wandb-artifact.js';
import { summaryOf, wandbRunId } from '../../src/cookbook/tracking/wandb-format.js';
import { historyRecord } from '../../src/cookbook/tracking/wandb-record.js';
import { itemsOf, readWandbStream, wandbSyncView, type WandbStreamRecord } from '../support/wandb-reader.js';

const FLOATS = new Set(['learning_rate', 'loss']);
const env = { WANDB_MODE: 'offline' };
const config = { wandb_project: 'cookbook-tests', wandb_name: 'sl-small', learning_rate: 0.01, model_name: 'tiny-qwen3', lora_rank: 8 };

function trackedRun() {
  const logPath = mkdtempSync(join(tmpdir(), 'cookbook-wandb-stream-'));
  const workflowId = `sl-stream-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const store = new RunStore(logPath);
  store.init({ workflowId, kind: 'sl', config }, FLOATS);
  return { logPath, workflowId, store };
}

function streamOf(logPath: string, workflowId: string) {
  const [dir] = readdirSync(join(logPath, 'wandb'));
  const location = join(logPath, 'wandb', dir);
  return { location, file: join(location, `run-${wandbRunId(workflowId)}.wandb`), cursor: join(logPath, '.cookbook', 'tracking', 'wandb-offline-stream.json') };
}

const historyOf = (records: WandbStreamRecord[]) => records.filter((r) => r.type === 'history').map((r) => ({ step: Number(r.body.step?.num ?? 0), row: itemsOf(r.body.item) }));
const asHistory = (rows: Array<Record<string, unknown>>) => rows.map((r) => ({ step: r.step, row: { ...r, _step: r.step } }));

// Each read starts Python and imports wandb (seconds), hence the generous timeouts.
describe('W&B offline record stream, read by wandb', () => {
  beforeAll(async () => {
    await ensureWandbEnv();
  }, 600_000);

  it('holds the run and its config, every metrics row once, the summary, the final checkpoint artifact, exit and final; `wandb sync --view` replays it', async () => {
    const { logPath, workflowId, store } = trackedRun();
    for (const step of [0, 1, 2, 3]) store.writeMetrics({ step, loss: 4 - step, learning_rate: 0.01, 'optim/entropy': step / 3 });
    await syncRun(logPath, env);
    // A restore replays steps 2..: wandb already holds them, nothing is logged twice.
    store.truncateMetrics(2);
    for (const step of [2, 3, 4]) store.writeMetrics({ step, loss: 4 - step, learning_rate: 0.01, 'optim/entropy': step / 3 });
    await syncRun(logPath, env);
    store.writeCheckpoint({ name: '000004', epoch: 0, batch: 4, state_path: 'tinker://r/weights/000004' });
    store.writeCheckpoint({ name: 'final', epoch: 1, batch: 0, state_path: 'tinker://r/weights/final', sampler_path: 'tinker://r/sampler_weights/final' });
    await syncRun(logPath, env);
    await syncRun(logPath, env);

    const { location, file } = streamOf(logPath, workflowId);
    const records = await readWandbStream(file);
    expect(records.map((r) => r.num)).toEqual(records.map((_, i) => i + 1));
    expect(records[0].type).toBe('run');
    expect(records[0].body).toMatchObject({ run_id: wandbRunId(workflowId), project: 'cookbook-tests', display_name: 'sl-small' });
    expect(itemsOf(records[0].body.config.update)).toEqual(new RunStore(logPath).read().config);

    const rows = store.readMetrics();
    expect(rows.map((r) => r.step)).toEqual([0, 1, 2, 3, 4]);
    expect(historyOf(records)).toEqual(asHistory(rows));

    const summaries = records.filter((r) => r.type === 'summary');
    const final = store.readCheckpoints().find((c) => c.name === 'final')!;
    expect(itemsOf(summaries.at(-1)!.body.update)).toEqual(summaryOf(rows, Object.fromEntries(Object.entries(final).map(([k, v]) => [`final_checkpoint/${k}`, v]))));

    const [artifact] = records.filter((r) => r.type === 'artifact');
    expect(artifact.body).toMatchObject({ type: 'model', name: `model-${wandbRunId(workflowId)}`, aliases: ['latest', 'final'], finalize: true });
    expect(JSON.parse(artifact.body.metadata)).toEqual(final);
    expect(artifact.body.digest).toBe(artifact.wandb_manifest_digest);
    // What an online run uploads as wandb_manifest.json is, byte for byte, what wandb writes for these entries.
    expect(manifestJson(modelArtifact(wandbRunId(workflowId), final, store.readCheckpoints().map((r) => `${JSON.stringify(r)}\n`).join('')).entries)).toBe(artifact.wandb_manifest_json);
    const entries = Object.fromEntries(artifact.body.manifest.contents.map((e: { path: string }) => [e.path, e]));
    expect(entries.state_path).toMatchObject({ ref: 'tinker://r/weights/final', digest: 'tinker://r/weights/final' });
    expect(entries.sampler_path).toMatchObject({ ref: 'tinker://r/sampler_weights/final' });
    const jsonl = readFileSync(entries['checkpoints.jsonl'].local_path, 'utf8');
    expect(jsonl.trim().split('\n').map((l) => JSON.parse(l).name)).toEqual(['000004', 'final']);
    expect(entries['checkpoints.jsonl'].local_path.startsWith(location)).toBe(true);

    expect(records.slice(-2).map((r) => r.type)).toEqual(['exit', 'final']);
    expect(records.filter((r) => r.type === 'exit' || r.type === 'final' || r.type === 'artifact')).toHaveLength(3);

    const view = await wandbSyncView(location);
    expect(view.code, view.output).toBe(0);
    expect(view.output.match(/^Record: /gm)).toHaveLength(records.length);
    expect(view.output).toContain('value_json: "\\"tinker://r/weights/final\\""');
  }, 300_000);

  it('frames records across 32 KiB blocks as wandb reads them: FULL, FIRST/MIDDLE/LAST, padded block tails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cookbook-wandb-frames-'));
    const stream = new RecordStream(join(dir, 'run-frames.wandb'), join(dir, 'cursor.json'));
    // Sizes that end blocks with 0..7 bytes left, straddle one boundary and span several blocks.
    const pads = [10, BLOCK_BYTES - 120, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100_000, 17, BLOCK_BYTES - 7 - 40, 3 * BLOCK_BYTES, 0];
    const rows = pads.map((n, step) => ({ step, pad: 'x'.repeat(n) }));
    // One record per append for the first half (the cursor's offset lands everywhere), the rest in one append.
    for (const row of rows.slice(0, 8)) stream.append((num) => [historyRecord(num, row)], { lastStep: row.step });
    stream.append((num) => rows.slice(8).map((row, i) => historyRecord(num + i, row)), { lastStep: rows.length - 1 });
    const records = await readWandbStream(stream.file);
    expect(historyOf(records)).toEqual(asHistory(rows));
    expect(stream.cursor()).toMatchObject({ offset: statSync(stream.file).size, records: rows.length, lastStep: rows.length - 1 });
  }, 300_000);

  it('appends stay exactly-once across a kill mid-write (torn record) and a crash before the cursor was saved', async () => {
    const { logPath, workflowId, store } = trackedRun();
    const write = (steps: number[]) => steps.forEach((step) => store.writeMetrics({ step, loss: 10 - step, learning_rate: 0.01, blob: 'y'.repeat(step * 9000) }));
    write([0, 1, 2]);
    await syncRun(logPath, env);
    const { file, cursor } = streamOf(logPath, workflowId);

    // Kill mid-write: the next append's bytes are on disk up to some point, its cursor never saved.
    const saved = readFileSync(cursor, 'utf8');
    const committed = statSync(file).size;
    write([3, 4]);
    await syncRun(logPath, env);
    const full = statSync(file).size;
    writeFileSync(cursor, saved);
    truncateSync(file, committed + Math.floor((full - committed) / 2));
    await expect(readWandbStream(file)).rejects.toThrow(); // wandb's reader chokes on the torn record…
    write([5]);
    await syncRun(logPath, env);
    // …the reopen cut it off and wrote steps 3-5 once.
    expect(historyOf(await readWandbStream(file))).toEqual(asHistory(store.readMetrics()));

    // A kill inside a fragment header (fewer than 7 bytes past the end).
    const saved1 = readFileSync(cursor, 'utf8');
    const end1 = statSync(file).size;
    write([6]);
    await syncRun(logPath, env);
    writeFileSync(cursor, saved1);
    truncateSync(file, end1 + 3);
    await syncRun(logPath, env);
    expect(historyOf(await readWandbStream(file)).map((h) => h.step)).toEqual([0, 1, 2, 3, 4, 5, 6]);

    // Crash after the bytes were fsynced but before the cursor landed: the batch is written again, once.
    const saved2 = readFileSync(cursor, 'utf8');
    write([7, 8]);
    await syncRun(logPath, env);
    const before = readFileSync(file);
    writeFileSync(cursor, saved2);
    await syncRun(logPath, env);
    expect(readFileSync(file).equals(before)).toBe(true);
    const records = await readWandbStream(file);
    expect(historyOf(records)).toEqual(asHistory(store.readMetrics()));
    expect(historyOf(records).map((h) => h.step)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);

    // A torn tail longer than what is appended next (a big row cut short, then a small one).
    const saved3 = readFileSync(cursor, 'utf8');
    const end3 = statSync(file).size;
    store.writeMetrics({ step: 9, loss: 1, learning_rate: 0.01, blob: 'z'.repeat(200_000) });
    await syncRun(logPath, env);
    writeFileSync(cursor, saved3);
    truncateSync(file, end3 + 190_000); // past what the next append (row 9 and a summary) writes
    store.truncateMetrics(9);
    store.writeMetrics({ step: 9, loss: 1, learning_rate: 0.01 });
    await syncRun(logPath, env);
    expect(historyOf(await readWandbStream(file))).toEqual(asHistory(store.readMetrics()));

    // A stream file shorter than its cursor (replaced, truncated by hand) is refused, naming both.
    truncateSync(file, 100);
    write([10]);
    await expect(syncRun(logPath, env)).rejects.toThrow(/run-.*\.wandb: 100 bytes, shorter than the \d+ committed ones .*wandb-offline-stream\.json/);
    expect(existsSync(cursor)).toBe(true);
  }, 300_000);

  it('a directory written before the stream existed gets one with every row on its next sync', async () => {
    const { logPath, workflowId, store } = trackedRun();
    for (const step of [0, 1]) store.writeMetrics({ step, loss: 1 - step, learning_rate: 0.01 });
    await syncRun(logPath, env);
    const { file, cursor } = streamOf(logPath, workflowId);
    // As an earlier version left it: the history file and metadata, no stream.
    rmSync(file);
    rmSync(cursor);
    store.writeMetrics({ step: 2, loss: -1, learning_rate: 0.01 });
    await syncRun(logPath, env);
    const records = await readWandbStream(file);
    expect(records[0].type).toBe('run');
    expect(historyOf(records)).toEqual(asHistory(store.readMetrics()));
  }, 300_000);
});
