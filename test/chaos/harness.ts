// Chaos harness: fixed-seed runs during which the worker, the engine or the Temporal dev server
// is SIGKILLed at seeded random moments and restarted; each trial's final weights (fingerprint),
// metrics.jsonl and checkpoints.jsonl must equal those of an uninterrupted run of the same seed.
import { join } from 'node:path';
import type { Service } from '../../src/cli/services.js';
import { startRun, type ResolvedRun } from '../../src/cli/train.js';
import { stopSignal } from '../../src/workflows/shared/messages.js';
import type { PipelineResult } from '../../src/workflows/pipeline.js';
import type { SweepResult } from '../../src/workflows/sweep.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { rng } from '../support/rng.js';
import { RunStore } from '../../src/cookbook/run-store.js';
import { checkpointsOf, metricsOf, weightsFingerprint } from '../support/runs.js';
import { startTestStack, testRun, workerProcess, type TestStack } from '../support/stack.js';
import { timed } from '../support/timing.js';

export type Target = 'worker' | 'engine' | 'temporal';

export interface TrialOutcome {
  seed: number;
  kills: Array<{ target: Target; atMs: number }>;
  equal: boolean;
  differences: string[];
  recoveries: number;
}

export interface Baseline {
  metrics: Array<Record<string, unknown>>;
  checkpoints: Array<Record<string, unknown>>;
  fingerprint: string;
  steps: number;
  /** Per run: the steps of its timing_spans.jsonl rows and of its metrics rows with `time/*` keys (their values differ per run). */
  timing: Array<{ rows: number[]; timed: number[] }>;
}

export interface TrialOptions {
  kills: number;
  targets: Target[];
  maxGapMs: number;
  overrides?: string[];
}

export const CHAOS_CONFIG = join(import.meta.dirname, '..', 'fixtures', 'sl_chaos.json');

/** Which runs a lab drives: a run kind and its fixed-seed config. */
export interface ChaosRun {
  kind: string;
  config: string;
  /** How the chaos command and suite name it, when not by its kind. */
  name?: string;
}
export const SL_CHAOS: ChaosRun = { kind: 'sl', config: CHAOS_CONFIG };
export const RL_CHAOS: ChaosRun = { kind: 'rl', config: join(import.meta.dirname, '..', 'fixtures', 'rl_small.json') };
/** Multi-turn RL: twenty questions with the policy's base weights answering, episodes cut by rollout_limits. */
export const MULTITURN_CHAOS: ChaosRun = { kind: 'rl', name: 'multiturn', config: join(import.meta.dirname, '..', 'fixtures', 'rl_twenty_questions_small.json') };
export const DPO_CHAOS: ChaosRun = { kind: 'dpo', config: join(import.meta.dirname, '..', 'fixtures', 'dpo_small.json') };
export const DISTILL_CHAOS: ChaosRun = { kind: 'distill', config: join(import.meta.dirname, '..', 'fixtures', 'distill_small.json') };
/** SFT then DPO from its final checkpoint, as child workflows of one pipeline. */
export const PIPELINE_CHAOS: ChaosRun = { kind: 'pipeline', config: join(import.meta.dirname, '..', 'fixtures', 'pipeline_small.json') };
/** Three SL points, two at a time, as child workflows of one sweep that continues as new after two points. */
export const SWEEP_CHAOS: ChaosRun = { kind: 'sweep', config: join(import.meta.dirname, '..', 'fixtures', 'sweep_chaos.json') };

export class ChaosLab {
  private worker?: Service;
  private constructor(
    readonly stack: TestStack,
    readonly subject: ChaosRun,
  ) {}

  static async start(subject: ChaosRun = SL_CHAOS): Promise<ChaosLab> {
    const lab = new ChaosLab(await startTestStack({ persist: true }), subject);
    lab.worker = await workerProcess(lab.stack, 'worker-0');
    return lab;
  }

  async stop(): Promise<void> {
    await this.worker?.stop();
    await this.stack.stop();
  }

  run(overrides: string[] = []): ResolvedRun {
    return testRun(this.stack, this.subject.config, overrides, this.subject.kind);
  }

  baseline(overrides: string[] = []): Promise<Baseline> {
    return timed('chaos baseline', async () => {
      const run = this.run(overrides);
      const result = await this.finish(run, await this.startAndWaitForStart(run));
      return this.observe(run, result);
    });
  }

  async kill(target: Target): Promise<void> {
    if (target === 'worker') {
      await this.worker!.kill();
      this.worker = await workerProcess(this.stack, `worker-${Date.now()}`);
    } else if (target === 'engine') {
      await this.stack.restartEngine();
    } else {
      await this.stack.restartTemporal();
    }
  }

  /** One trial: `kills` SIGKILLs at seeded moments while the run goes on, then compare. */
  trial(seed: number, baseline: Baseline, opts: TrialOptions): Promise<TrialOutcome> {
    return timed('chaos trials', () => this.untimedTrial(seed, baseline, opts));
  }

  private async untimedTrial(seed: number, baseline: Baseline, opts: TrialOptions): Promise<TrialOutcome> {
    const random = rng(seed);
    const run = this.run(opts.overrides);
    const t0 = Date.now();
    await this.startAndWaitForStart(run);
    const kills: TrialOutcome['kills'] = [];
    for (let i = 0; i < opts.kills; i++) {
      await sleep(200 + random() * opts.maxGapMs);
      if (await this.closed(run.workflowId)) break;
      const target = opts.targets[Math.floor(random() * opts.targets.length)];
      kills.push({ target, atMs: Date.now() - t0 });
      await this.kill(target);
    }
    let result: RunResult;
    try {
      result = await this.finish(run);
    } catch (err) {
      // A run that failed is a trial that differs; the long command reports it and goes on.
      return { seed, kills, recoveries: 0, equal: false, differences: [`the run failed: ${failureMessage(err)}`] };
    }
    const observed = await this.observe(run, result);
    return { seed, kills, recoveries: result.recoveries, ...compare(baseline, observed) };
  }

  /** A stop signal sent while the run is recovering from an engine crash still ends cleanly. */
  async stopDuringRecovery(overrides: string[] = []): Promise<{ result: RunResult; run: ResolvedRun }> {
    const run = this.run(overrides);
    await this.startAndWaitForStart(run);
    await sleep(1500);
    await this.stack.engine.kill();
    await this.stack.client.workflow.getHandle(run.workflowId).signal(stopSignal, 'chaos: stop during recovery');
    await this.stack.restartEngine();
    return { result: await this.finish(run), run };
  }

  private async startAndWaitForStart(run: ResolvedRun) {
    return startRun(this.stack.client, run, this.stack.taskQueue);
  }

  private async closed(workflowId: string): Promise<boolean> {
    try {
      return (await this.stack.client.workflow.getHandle(workflowId).describe()).status.name !== 'RUNNING';
    } catch {
      return false;
    }
  }

  /** Waits for the result, riding out a Temporal server restart under the client. */
  async finish(run: ResolvedRun, _handle?: unknown): Promise<RunResult> {
    for (;;) {
      try {
        return (await this.stack.client.workflow.getHandle(run.workflowId).result()) as RunResult;
      } catch (err) {
        const status = await this.stack.client.workflow
          .getHandle(run.workflowId)
          .describe()
          .then((d) => d.status.name)
          .catch(() => 'UNKNOWN');
        if (status !== 'RUNNING' && status !== 'UNKNOWN' && status !== 'COMPLETED') throw err;
        await sleep(500);
      }
    }
  }

  async observe(run: ResolvedRun, result: RunResult): Promise<Baseline> {
    if ((result as SweepResult).points) return this.observeSweep(result as SweepResult);
    // A pipeline's files are its stages' files, each stage in its own log dir.
    const stages = (result as PipelineResult).stages;
    const logPaths = stages ? stages.map((s) => s.logPath) : [run.run.logPath];
    const tagged = (rows: Array<Record<string, unknown>>, i: number) => (stages ? rows.map((r) => ({ stage: i, ...r })) : rows);
    return {
      metrics: logPaths.flatMap((p, i) => tagged(metricsOf(p), i)),
      checkpoints: logPaths.flatMap((p, i) => tagged(checkpointsOf(p), i)),
      fingerprint: await weightsFingerprint(this.stack.engine.baseUrl, result.finalCheckpoint!.samplerPath!),
      steps: result.steps,
      timing: logPaths.map(timingSteps),
    };
  }

  /** A sweep's files are its points' files; its weights, every point's final weights; plus its results table. */
  private async observeSweep(result: SweepResult): Promise<Baseline> {
    const dirs = result.points.map((p) => join(result.logPath, p.name));
    const fingerprints: string[] = [];
    for (const p of result.points) {
      const child = (await this.stack.client.workflow.getHandle(p.workflowId).result()) as RunResult;
      fingerprints.push(await weightsFingerprint(this.stack.engine.baseUrl, child.finalCheckpoint!.samplerPath!));
    }
    const table = result.points.map((p) => ({ point: p.name, status: p.status, steps: p.steps, value: p.value, best: p.index === result.best }));
    return {
      metrics: [...table, ...dirs.flatMap((d, i) => metricsOf(d).map((r) => ({ point: i, ...r })))],
      checkpoints: dirs.flatMap((d, i) => checkpointsOf(d).map((r) => ({ point: i, ...r }))),
      fingerprint: fingerprints.join(':'),
      steps: result.steps,
      timing: dirs.map(timingSteps),
    };
  }
}

/** Which steps a run timed: once each in an uninterrupted run, and so in a crashed one. */
function timingSteps(logPath: string): { rows: number[]; timed: number[] } {
  const store = new RunStore(logPath);
  return {
    rows: store.readTimingSpans().map((r) => r.step),
    timed: store.readMetrics().filter((r) => Object.keys(r).some((k) => k.startsWith('time/'))).map((r) => r.step as number),
  };
}

export function compare(expected: Baseline, got: Baseline): { equal: boolean; differences: string[] } {
  const differences: string[] = [];
  if (got.steps !== expected.steps) differences.push(`steps ${got.steps} ≠ ${expected.steps}`);
  if (got.fingerprint !== expected.fingerprint) differences.push('final weights differ');
  if (JSON.stringify(got.metrics) !== JSON.stringify(expected.metrics)) {
    const i = got.metrics.findIndex((row, k) => JSON.stringify(row) !== JSON.stringify(expected.metrics[k]));
    differences.push(`metrics.jsonl differs (first at row ${i === -1 ? Math.min(got.metrics.length, expected.metrics.length) : i})`);
  }
  if (JSON.stringify(got.checkpoints) !== JSON.stringify(expected.checkpoints)) differences.push('checkpoints.jsonl differs');
  if (JSON.stringify(got.timing) !== JSON.stringify(expected.timing)) differences.push(`timed steps differ: ${JSON.stringify(got.timing)} ≠ ${JSON.stringify(expected.timing)}`);
  return { equal: differences.length === 0, differences };
}

/** The innermost message of a failure chain (workflow → child → activity → application). */
function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && typeof e === 'object' && e.cause) e = e.cause as typeof e;
  return e?.message ?? String(err);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
