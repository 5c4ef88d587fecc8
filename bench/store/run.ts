// bench/store: what keeping a run in an S3 bucket costs per training step, beside the same run in a
// local folder. The S3 side is a real SeaweedFS server on loopback (test/support/s3-server.ts), so
// its figures are the run mirror's own cost (requests, bytes, the walk of the folder, the server's
// work), not a network's latency: on a real bucket add each request's round trip.
//
// 1. Store only (no engine): the files a training step writes, written through the real RunStore
//    by stand-ins of the step's activities, each wrapped as the worker wraps it (withStoreSync:
//    pull, run, push). An SL step is the pipelined pair of activities (slSubmit stores its timing
//    spans, slFinish reads them and writes the metrics row, the timing_spans row and a log line),
//    with a checkpoint activity every --checkpoint-every steps; an RL step is --groups rollout
//    activities at once (a trajectory-group blob and its timing spans each), then the train
//    activity (reads the blobs, writes the rollout record, the rows and a log line). The same steps
//    on a local folder and on an s3:// run, arms alternating round by round. Per arm: ms per step
//    (median, p90), S3 requests per step by kind (pull: LIST, GET; push: PUT, DELETE), bytes sent
//    and fetched per step, and the ratio S3 / local; then the same figures at step 10 and at the
//    last step, since the run's folder and bucket grow (a LIST, when another activity pushed since
//    this host's last pull, pages 1,000 objects a request; appended files are uploaded whole). A PUT of bytes the key already holds is counted: there should be none.
// 2. End to end (--no-e2e to skip): the same short SL run (configs/sl_demo.json, tiny overrides)
//    through the Temporal stack and an in-process worker, log_path local vs s3://, wall ms per step
//    and the ratio, and the time the S3 run's activities spent in the mirror's pull and push (the
//    engine's step time on a shared machine varies by more than the store costs).
//
// Goal: requests per step as mirror.ts states them (per activity a GET of the run's version marker,
// a LIST only when another host pushed since, one PUT per changed file and one of the marker, no GET
// of what this host wrote itself), and the S3 run's added wall time a
// small share of an SL step on the real stack.
//   npm run bench:store [-- --steps 40 --rounds 2 --groups 8 --blob-kb 16 --checkpoint-every 10]
//                       [-- --e2e-steps 8 --e2e-rounds 3] [-- --no-e2e | --e2e-only]
import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { withStoreSync } from '../../src/activities/store-sync.js';
import type { Activities } from '../../src/activities/types.js';
import { resolveRun, startRun } from '../../src/cli/train.js';
import { RunStore, type RunRef } from '../../src/cookbook/run-store.js';
import { mirrorOf } from '../../src/cookbook/stores/mirror.js';
import { s3Client } from '../../src/cookbook/stores/s3.js';
import { aggregateSpans, joinParts, nowMs, timingRow, type Span } from '../../src/cookbook/timing.js';
import { stepSpansFile, TimingStore } from '../../src/cookbook/timing-store.js';
import { metricsOf } from '../../test/support/runs.js';
import { startS3Server } from '../../test/support/s3-server.js';
import { startTestStack, testRun, withWorker } from '../../test/support/stack.js';

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '2' },
    groups: { type: 'string', default: '8' },
    'blob-kb': { type: 'string', default: '16' },
    'checkpoint-every': { type: 'string', default: '10' },
    'e2e-steps': { type: 'string', default: '8' },
    'e2e-rounds': { type: 'string', default: '3' },
    'no-e2e': { type: 'boolean', default: false },
    'e2e-only': { type: 'boolean', default: false },
  },
});
const STEPS = Number(values.steps);
const ROUNDS = Number(values.rounds);
const GROUPS = Number(values.groups);
const BLOB_BYTES = Number(values['blob-kb']) * 1024;
const CHECKPOINT_EVERY = Number(values['checkpoint-every']);
const E2E_STEPS = Number(values['e2e-steps']);
const E2E_ROUNDS = Number(values['e2e-rounds']);
/** "At step 10": the figures of steps 6–10, as the median of a window is steadier than one step. */
const EARLY = [5, 10] as const;
const BUCKET = 'bench';

const root = mkdtempSync(join(tmpdir(), 'cookbook-bench-store-'));
const s3 = await startS3Server({ buckets: [BUCKET] });
// The mirror and the worker's S3 client read these; the mirror lives in this bench's own folder.
Object.assign(process.env, s3.env, { COOKBOOK_STORE_CACHE: join(root, 'store-cache') });

// ---- what the S3 client sends: counted per command, bytes both ways, and PUTs of unchanged bytes ----

type Kind = 'ListObjectsV2' | 'GetObject' | 'PutObject' | 'DeleteObject' | 'other';
interface Counts {
  ListObjectsV2: number;
  GetObject: number;
  PutObject: number;
  DeleteObject: number;
  other: number;
  bytesUp: number;
  /** PUTs whose bytes equal what the key got from the last PUT (a push that re-sends an unchanged file). */
  unchangedPuts: number;
}
const zero = (): Counts => ({ ListObjectsV2: 0, GetObject: 0, PutObject: 0, DeleteObject: 0, other: 0, bytesUp: 0, unchangedPuts: 0 });
const sent = zero();
const lastPut = new Map<string, string>();
/** Milliseconds of each request, by kind, from the client's send to its answer. */
const latency: Record<Kind, number[]> = { ListObjectsV2: [], GetObject: [], PutObject: [], DeleteObject: [], other: [] };
/** The LIST latencies in order, sliced by step (a LIST's time grows with the objects it pages through). */
const listMs: number[] = [];
const unchangedKeys = new Map<string, number>();
const bodyBytes = (body: unknown): Buffer | undefined => (typeof body === 'string' ? Buffer.from(body) : body instanceof Uint8Array ? Buffer.from(body) : undefined);
s3Client().middlewareStack.add(
  (next, context) => async (args) => {
    const name = (context as { commandName?: string }).commandName?.replace(/Command$/, '') ?? 'other';
    const kind: Kind = name in sent && name !== 'other' ? (name as Kind) : 'other';
    sent[kind]++;
    if (kind === 'PutObject') {
      const input = args.input as { Key: string; Body?: unknown };
      const body = bodyBytes(input.Body);
      if (body) {
        sent.bytesUp += body.length;
        const sum = createHash('sha256').update(body).digest('hex');
        if (lastPut.get(input.Key) === sum) {
          sent.unchangedPuts++;
          unchangedKeys.set(input.Key, (unchangedKeys.get(input.Key) ?? 0) + 1);
        }
        lastPut.set(input.Key, sum);
      }
    }
    const t0 = performance.now();
    try {
      return await next(args);
    } finally {
      latency[kind].push(performance.now() - t0);
      if (kind === 'ListObjectsV2') listMs.push(performance.now() - t0);
    }
  },
  { step: 'initialize', name: 'benchStoreCounter' },
);
const since = (before: Counts): Counts => Object.fromEntries(Object.entries(sent).map(([k, v]) => [k, v - before[k as keyof Counts]])) as unknown as Counts;

// ---- the step's activities: the writes the workflows make, through the real RunStore ----

const pad = (n: number, w = 6) => String(n).padStart(w, '0');
/** Spans as an activity stores them: a few named pieces of its own lane. */
function spansOf(lane: string, names: string[]): Span[] {
  const end = nowMs() / 1000;
  return names.map((name, i) => ({ name, duration: 0.01 * (i + 1), wall_start: end - 0.05 + 0.01 * i, wall_end: end - 0.04 + 0.01 * i, activity: lane, worker: `${process.pid}@bench` }));
}
/** A metrics row of an SL step's width: the reference's keys plus the tokens/* counters. */
function slMetrics(step: number): Record<string, number> {
  const row: Record<string, number> = { epoch: 0, progress: (step + 1) / STEPS, learning_rate: 0.005 * (1 - step / STEPS), num_sequences: 8, num_tokens: 1700 + step, num_loss_tokens: 380 + step, train_mean_nll: 2.5 / (1 + step / 10), train_mean_bpb: 3.1 / (1 + step / 10) };
  for (const k of ['trained', 'sampled', 'prefill_cached', 'prefill_uncached']) Object.assign(row, { [`tokens/${k}`]: step * 100, [`tokens/${k}_cumulative`]: step * 1700 });
  return row;
}
const logLine = (run: RunRef, step: number, msg: string) => `${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, run: run.workflowId, step, msg })}\n`;
/** The row writer's part: the step's stored spans read, merged with its own, the rows and a log line written. */
function writeStepRows(run: RunRef, step: number, metrics: Record<string, number>, own: Span[]): void {
  const store = new RunStore(run.logPath);
  const spans = joinParts([...new TimingStore(run.logPath).readStep(step), ...own]);
  store.writeMetrics({ step, ...metrics, ...aggregateSpans(spans) });
  store.writeTimingSpans(timingRow(step, spans));
  appendFileSync(store.logFile, logLine(run, step, 'step done'));
}
/** A serialized trajectory group's size, in JSON of the shape serializeTrajectoryGroup writes. */
function trajectoryBlob(step: number, group: number): string {
  const tokens: number[] = [];
  // About 7 bytes a token id in JSON: filled to --blob-kb.
  for (let i = 0; tokens.length * 7 < BLOB_BYTES; i++) tokens.push(100_000 + ((step * 7919 + group * 104729 + i * 31) % 51_000));
  return JSON.stringify({ format: 'trajectory_group/v1', step, group, tokens, rewards: [1, 0, 0, 1] });
}

interface StepInput {
  run: RunRef;
  step: number;
  group?: number;
}
const activities = withStoreSync({
  async slSubmit({ run, step }: StepInput) {
    new TimingStore(run.logPath).write(stepSpansFile(step, 'slSubmit'), spansOf('slSubmit', ['get_batch', 'submit_batch']));
  },
  async slFinish({ run, step }: StepInput) {
    writeStepRows(run, step, slMetrics(step), spansOf('slFinish', ['step', 'finish_batch']));
  },
  async saveCheckpoint({ run, step }: StepInput) {
    const name = pad(step);
    new TimingStore(run.logPath).write(stepSpansFile(step, `saveCheckpoint-${name}`), spansOf(`saveCheckpoint ${name}`, ['save_checkpoint']));
    new RunStore(run.logPath).writeCheckpoint({ name, batch: step, epoch: 0, state_path: `tinker://bench/weights/${name}`, sampler_path: `tinker://bench/sampler_weights/${name}`, next_step: step });
  },
  async rlRolloutGroup({ run, step, group }: StepInput) {
    const name = `rollouts/batch_${pad(step)}/group_${pad(group!, 4)}.json`;
    new RunStore(run.logPath).writeBlob(name, trajectoryBlob(step, group!));
    new TimingStore(run.logPath).write(stepSpansFile(step, `rlRolloutGroup-g${group}`), spansOf(`rlRolloutGroup g${group}`, ['sampling']));
  },
  async rlTrain({ run, step }: StepInput) {
    const store = new RunStore(run.logPath);
    const refs = Array.from({ length: GROUPS }, (_, g) => `rollouts/batch_${pad(step)}/group_${pad(g, 4)}.json`);
    for (const ref of refs) store.readBlob(ref);
    store.writeRolloutRecord({
      format: 'rollout_record/v1',
      step,
      split: 'train',
      groups: refs.map((ref, group) => ({ ref, batch: step, group, sampling_step: step, tags: [], advantages: [0.5, -0.5, -0.5, 0.5] })),
    });
    writeStepRows(run, step, { ...slMetrics(step), 'env/all/reward/total': 0.5, 'optim/kl_sample_train_v1': 0.001 }, spansOf('rlTrain', ['train_step', 'prepare_minibatch']));
  },
} as unknown as Activities) as unknown as Record<string, (input: StepInput) => Promise<void>>;

type Shape = 'sl' | 'rl';
async function trainStep(shape: Shape, run: RunRef, step: number): Promise<void> {
  if (shape === 'sl') {
    await activities.slSubmit({ run, step });
    await activities.slFinish({ run, step });
  } else {
    // The workflow starts a step's rollouts together; the worker runs them at once.
    await Promise.all(Array.from({ length: GROUPS }, (_, group) => activities.rlRolloutGroup({ run, step, group })));
    await activities.rlTrain({ run, step });
  }
  if (step > 0 && step % CHECKPOINT_EVERY === 0) await activities.saveCheckpoint({ run, step });
}

interface StepFigures {
  ms: number;
  counts: Counts;
  bytesDown: number;
  /** Objects the run had in the bucket after the step. */
  objects: number;
  /** Milliseconds of each LIST request of the step. */
  lists: number[];
}
let runs = 0;
/** One run of STEPS steps on a local folder or an s3:// URI, its figures step by step. */
async function storeRun(shape: Shape, where: 'local' | 's3'): Promise<StepFigures[]> {
  const id = `${shape}-${where}-${++runs}`;
  const logPath = where === 'local' ? join(root, 'local', id) : `s3://${BUCKET}/store/${id}`;
  const run: RunRef = { workflowId: id, kind: shape, logPath };
  const mirror = where === 's3' ? mirrorOf(logPath) : undefined;
  new RunStore(logPath).init({ workflowId: id, kind: shape, config: { bench: true } }, new Set());
  await mirror?.push();
  const out: StepFigures[] = [];
  for (let step = 0; step < STEPS; step++) {
    const before = { ...sent };
    const bytesBefore = mirror?.stats.bytes ?? 0;
    const listsBefore = listMs.length;
    const t0 = performance.now();
    await trainStep(shape, run, step);
    const ms = performance.now() - t0;
    const counts = since(before);
    out.push({ ms, counts, bytesDown: (mirror?.stats.bytes ?? 0) - bytesBefore - counts.bytesUp, objects: mirror ? lastPutKeysOf(id) : 0, lists: listMs.slice(listsBefore) });
  }
  return out;
}
const lastPutKeysOf = (id: string) => [...lastPut.keys()].filter((k) => k.startsWith(`store/${id}/`)).length;

// ---- figures ----

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i));
};
const median = (xs: number[]) => quantile(xs, 0.5);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

function summary(figs: StepFigures[]) {
  const c = (k: keyof Counts) => mean(figs.map((f) => f.counts[k]));
  return {
    ms: median(figs.map((f) => f.ms)),
    p90: quantile(figs.map((f) => f.ms), 0.9),
    list: c('ListObjectsV2'),
    get: c('GetObject'),
    put: c('PutObject'),
    del: c('DeleteObject'),
    other: c('other'),
    up: c('bytesUp'),
    down: mean(figs.map((f) => f.bytesDown)),
    unchanged: c('unchangedPuts'),
    objects: Math.max(...figs.map((f) => f.objects)),
    listMs: figs.some((f) => f.lists.length) ? median(figs.flatMap((f) => f.lists)) : 0,
  };
}

const activitiesPerStep = (shape: Shape) => (shape === 'sl' ? 2 : GROUPS + 1);
async function storeOnly(shape: Shape): Promise<void> {
  const local: StepFigures[][] = [];
  const onS3: StepFigures[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Local first in even rounds, S3 first in odd ones: drift over the bench favours neither.
    for (const where of round % 2 === 0 ? (['local', 's3'] as const) : (['s3', 'local'] as const)) (where === 'local' ? local : onS3).push(await storeRun(shape, where));
  }
  const all = (runs: StepFigures[][], from = 0, to = STEPS) => runs.flatMap((r) => r.slice(from, to));
  const l = summary(all(local));
  const s = summary(all(onS3));
  const what = shape === 'sl' ? 'SL step (slSubmit + slFinish)' : `RL step (${GROUPS} rollout groups of ${kb(BLOB_BYTES)} + rlTrain)`;
  console.log(`\n== store only: ${what}, ${STEPS} steps × ${ROUNDS} rounds, a checkpoint every ${CHECKPOINT_EVERY} steps, ${activitiesPerStep(shape)} activities per step ==`);
  console.log(`local folder: ${l.ms.toFixed(2)} ms/step (p90 ${l.p90.toFixed(2)})`);
  console.log(`s3 (mirror):  ${s.ms.toFixed(2)} ms/step (p90 ${s.p90.toFixed(2)}); ratio s3 / local ${(s.ms / l.ms).toFixed(1)}, added ${(s.ms - l.ms).toFixed(2)} ms/step`);
  console.log(`  requests per step: pull ${(s.list + s.get).toFixed(2)} (LIST ${s.list.toFixed(2)}, GET ${s.get.toFixed(2)}), push ${(s.put + s.del).toFixed(2)} (PUT ${s.put.toFixed(2)}, DELETE ${s.del.toFixed(2)})${s.other ? `, other ${s.other.toFixed(2)}` : ''}`);
  console.log(`  bytes per step: sent ${kb(s.up)}, fetched ${kb(s.down)}; PUTs of unchanged bytes per step: ${s.unchanged.toFixed(2)}`);
  for (const [label, from, to] of [[`steps ${EARLY[0] + 1}-${EARLY[1]}`, EARLY[0], EARLY[1]], [`steps ${STEPS - 4}-${STEPS}`, STEPS - 5, STEPS]] as const) {
    const el = summary(all(local, from, to));
    const es = summary(all(onS3, from, to));
    console.log(
      `  ${label.padEnd(11)}: ${es.objects} objects; local ${el.ms.toFixed(2)} ms, s3 ${es.ms.toFixed(2)} ms/step (ratio ${(es.ms / el.ms).toFixed(1)}); ` +
        `LIST ${es.list.toFixed(2)}/step (${(es.list / activitiesPerStep(shape)).toFixed(2)} per activity, ${es.listMs.toFixed(1)} ms each), GET ${es.get.toFixed(2)}, PUT ${es.put.toFixed(2)}; sent ${kb(es.up)}/step`,
    );
  }
}

async function endToEnd(): Promise<void> {
  const config = join(import.meta.dirname, '..', '..', 'configs', 'sl_demo.json');
  const overrides = ['dataset.batch_size=8', 'dataset.max_length=128', 'dataset.test_size=0', `max_steps=${E2E_STEPS}`, 'num_epochs=100', 'eval_every=0', 'save_every=0'];
  const stack = await startTestStack();
  try {
    let n = 0;
    const once = async (where: 'local' | 's3'): Promise<{ ms: number; syncMs: number; requests: number }> => {
      const id = `sl-e2e-${where}-${Date.now()}-${++n}`;
      const run = where === 'local' ? testRun(stack, config, overrides) : resolveRun('sl', config, [...overrides, `log_path=s3://${BUCKET}/e2e/${id}`], { workflowId: id });
      const before = { ...sent };
      // The worker runs in this process: its mirror of the run is this one, its pulls and pushes timed here.
      let syncMs = 0;
      if (where === 's3') {
        const mirror = mirrorOf(run.run.logPath);
        for (const method of ['pull', 'push'] as const) {
          const original = mirror[method].bind(mirror) as (opts?: object) => Promise<unknown>;
          Object.assign(mirror, {
            [method]: async (opts?: object) => {
              const t0 = performance.now();
              try {
                return await original(opts);
              } finally {
                syncMs += performance.now() - t0;
              }
            },
          });
        }
      }
      const ms = await withWorker(stack, async () => {
        const t0 = performance.now();
        await (await startRun(stack.client, run, stack.taskQueue)).result();
        return performance.now() - t0;
      });
      const c = since(before);
      // This process is the worker's host too: its mirror holds what the run pushed.
      const rows = metricsOf(run.run.logPath);
      if (rows.length !== E2E_STEPS) throw new Error(`${where}: the run wrote ${rows.length} rows, not ${E2E_STEPS}`);
      return { ms, syncMs, requests: c.ListObjectsV2 + c.GetObject + c.PutObject + c.DeleteObject + c.other };
    };
    await once('local'); // warm-up: tokenizer, dataset, engine, workflow bundle
    await once('s3');
    const l: number[] = [];
    const s: number[] = [];
    const sync: number[] = [];
    let requests = 0;
    for (let round = 0; round < E2E_ROUNDS; round++) {
      for (const where of round % 2 === 0 ? (['local', 's3'] as const) : (['s3', 'local'] as const)) {
        const r = await once(where);
        (where === 'local' ? l : s).push(r.ms);
        if (where === 's3') sync.push(r.syncMs);
        if (where === 's3') requests += r.requests;
      }
      console.log(`e2e round ${round + 1}: local ${(l[round] / E2E_STEPS).toFixed(1)} ms/step, s3 ${(s[round] / E2E_STEPS).toFixed(1)} ms/step (ratio ${(s[round] / l[round]).toFixed(3)}); s3 pull + push ${(sync[round] / E2E_STEPS).toFixed(1)} ms/step`);
    }
    const lm = median(l) / E2E_STEPS;
    const sm = median(s) / E2E_STEPS;
    console.log(`\n== end to end: SL run (sl_demo, batch 8 × max_length 128, tiny-qwen3), ${E2E_STEPS} steps × ${E2E_ROUNDS} rounds, in-process worker (medians) ==`);
    console.log(`local log_path: ${lm.toFixed(1)} ms/step; s3:// log_path: ${sm.toFixed(1)} ms/step (incl. model creation and final save)`);
    console.log(`time in the mirror's pull and push (the activities wait on them): ${(median(sync) / E2E_STEPS).toFixed(1)} ms/step, ${((100 * median(sync)) / median(s)).toFixed(1)} % of the s3 run's wall time`);
    console.log(`ratio s3 / local ${(sm / lm).toFixed(3)}, added ${(sm - lm).toFixed(1)} ms/step; ${(requests / E2E_ROUNDS / E2E_STEPS).toFixed(1)} S3 requests per step (whole run, its start and end included)`);
  } finally {
    await stack.stop();
  }
}

try {
  if (!values['e2e-only']) {
    await storeOnly('sl');
    await storeOnly('rl');
  }
  const ms = (k: Kind) => (latency[k].length ? `${median(latency[k]).toFixed(1)} ms (p90 ${quantile(latency[k], 0.9).toFixed(1)}, ${latency[k].length} requests)` : 'none');
  if (!values['e2e-only']) console.log(`\nS3 request latency on this machine (loopback SeaweedFS): LIST ${ms('ListObjectsV2')}, PUT ${ms('PutObject')}, GET ${ms('GetObject')}`);
  if (sent.unchangedPuts > 0) console.log(`\nPUTs of bytes the key already held: ${[...unchangedKeys].map(([k, n]) => `${k} ×${n}`).slice(0, 10).join(', ')}`);
  if (!values['no-e2e']) await endToEnd();
} finally {
  await s3.close();
  rmSync(root, { recursive: true, force: true });
}
