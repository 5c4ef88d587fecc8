// Async (off-policy) RL sampling (cookbook-spec §2.9 "Async"): `groups_per_batch` rollouts are
// always in flight, each sampling from whatever sampler weights are current when it starts, so
// sampling of later batches overlaps training. The trainer takes completed groups in completion
// order; a group sampled more than `max_steps_off_policy` steps ago is stale: discarded and its
// builder requeued (only discarded once the dataset is exhausted).
//
// Durability: the queue (cursor, requeued and ready groups, builders in flight) is plain state that
// is snapshotted with each checkpoint. In-flight rollouts are tagged with the recovery generation;
// after a restore, results of the old generation are ignored and the builders that were in flight
// at the snapshot are sampled again. Before continue-as-new, in-flight rollouts are drained.
import type { RolloutGroupResult } from '../activities/types.js';

export interface OffPolicyState {
  /** Next builder (flat index over batches × groups) the dataloader hands out. */
  next: number;
  /** Builders to sample again (stale, or in flight when a recovery rolled the run back). */
  requeue: number[];
  /** Completed groups not yet trained on. */
  ready: RolloutGroupResult[];
  /** Builders whose rollout is running. */
  inflight: number[];
  /** How often each builder has been handed out, for distinct sampling seeds per attempt. */
  attempts: Record<number, number>;
  generation: number;
}

export const emptyOffPolicyState = (): OffPolicyState => ({ next: 0, requeue: [], ready: [], inflight: [], attempts: {}, generation: 0 });

export interface OffPolicyOptions {
  totalBuilders: number;
  groupsPerDatasetBatch: number;
  concurrency: number;
  maxStepsOffPolicy: number;
  launch(batch: number, group: number, attempt: number): Promise<RolloutGroupResult>;
}

export interface Collected {
  groups: RolloutGroupResult[];
  dropped: RolloutGroupResult[];
  staleDiscarded: number;
  maxStaleness: number;
}

export class OffPolicyRollouts {
  private running = new Map<number, Promise<{ builder: number; generation: number; result: RolloutGroupResult }>>();

  constructor(
    readonly state: OffPolicyState,
    private readonly opts: OffPolicyOptions,
  ) {}

  /** After a recovery (new generation), builders in flight at the snapshot are sampled again. */
  resync(generation: number): void {
    if (requeueInflight(this.state, generation)) this.running.clear();
  }

  /** Keeps `concurrency` rollouts running on the current sampler. */
  fill(): void {
    while (this.state.inflight.length < this.opts.concurrency) {
      const builder = this.state.requeue.length > 0 ? this.state.requeue.shift()! : this.state.next < this.opts.totalBuilders ? this.state.next++ : undefined;
      if (builder === undefined) return;
      const attempt = this.state.attempts[builder] ?? 0;
      this.state.attempts[builder] = attempt + 1;
      this.state.inflight.push(builder);
      const generation = this.state.generation;
      const batch = Math.floor(builder / this.opts.groupsPerDatasetBatch);
      const group = builder % this.opts.groupsPerDatasetBatch;
      this.running.set(
        builder,
        this.opts.launch(batch, group, attempt).then((result) => ({ builder, generation, result })),
      );
    }
  }

  private get exhausted(): boolean {
    return this.state.next >= this.opts.totalBuilders && this.state.requeue.length === 0;
  }

  /** Waits for `want` fresh groups for training step `step` (fewer only when the data runs out). */
  async collect(step: number, want: number): Promise<Collected> {
    const out: Collected = { groups: [], dropped: [], staleDiscarded: 0, maxStaleness: 0 };
    for (;;) {
      // Ready groups first (completed earlier, or carried across continue-as-new).
      while (this.state.ready.length > 0 && out.groups.length < want) this.admit(this.state.ready.shift()!, step, out);
      if (out.groups.length >= want) return out;
      this.fill();
      if (this.running.size === 0) return out;
      const done = await Promise.race(this.running.values());
      this.running.delete(done.builder);
      if (done.generation !== this.state.generation) continue;
      this.state.inflight = this.state.inflight.filter((b) => b !== done.builder);
      this.state.ready.push(done.result);
    }
  }

  private admit(result: RolloutGroupResult, step: number, out: Collected): void {
    const staleness = step - result.samplingStep;
    if (staleness > this.opts.maxStepsOffPolicy) {
      out.staleDiscarded += 1;
      if (!this.exhausted) this.state.requeue.push(result.batch * this.opts.groupsPerDatasetBatch + result.group);
      return;
    }
    if (result.ref === null) {
      out.dropped.push(result);
      return;
    }
    out.maxStaleness = Math.max(out.maxStaleness, staleness);
    out.groups.push(result);
  }

  /** Waits for every rollout in flight and keeps the results (before continue-as-new). */
  async drain(): Promise<void> {
    const pending = [...this.running.values()];
    this.running.clear();
    for (const done of await Promise.all(pending)) {
      if (done.generation !== this.state.generation) continue;
      this.state.inflight = this.state.inflight.filter((b) => b !== done.builder);
      this.state.ready.push(done.result);
    }
  }
}

/**
 * After a recovery (a new generation), the builders in flight at the restored snapshot go back to
 * the front of the queue, to be sampled again. False: same generation, nothing to do.
 */
export function requeueInflight(state: OffPolicyState, generation: number): boolean {
  if (state.generation === generation) return false;
  state.requeue = [...state.inflight, ...state.requeue];
  state.inflight = [];
  state.generation = generation;
  return true;
}
