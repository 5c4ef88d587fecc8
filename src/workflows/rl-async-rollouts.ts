// Async RL sampling as tinker-cookbook 0.6.1's do_async_training runs it (rl/train.py):
// - a rollout takes one of `groups_per_batch × (max_steps_off_policy + 1)` slots when it starts;
//   a group that is filtered out (no datum survived) frees its slot when it completes, a trained
//   group only once its step has trained (the next rollout on that slot samples the new weights);
// - no group is discarded for staleness: each step waits for `groups_per_batch` completed groups,
//   also takes every group already completed, and trains the oldest (lowest sampler step, ties in
//   completion order) first; the rest carry over to later steps;
// - the dataloader hands out the builders of dataset batches [start, end_batch) only, so no
//   rollout is launched for data past the last step;
// - with streaming minibatches, a step takes groups in the order they complete (`take`).
//
// Durability, as OffPolicyRollouts: the queue is plain state snapshotted with each checkpoint;
// rollouts carry the recovery generation (results of an older one are ignored and the builders in
// flight at the snapshot are sampled again); in-flight rollouts are drained before continue-as-new.
import type { RolloutGroupResult } from '../activities/types.js';
import { requeueInflight, type OffPolicyState } from './rl-off-policy.js';

export interface AsyncRolloutOptions {
  /** Builders handed out in all: end_batch dataset batches' worth (fewer if the data is shorter). */
  totalBuilders: number;
  groupsPerDatasetBatch: number;
  /** groups_per_batch × (max_steps_off_policy + 1). */
  slots: number;
  launch(batch: number, group: number, attempt: number): Promise<RolloutGroupResult>;
}

export interface AsyncBatch {
  /** The step's groups, oldest sampler first. */
  groups: RolloutGroupResult[];
  /** Groups filtered out since the last step (counted for errors, never trained). */
  dropped: RolloutGroupResult[];
}

const trainable = (g: RolloutGroupResult) => g.ref !== null;

export class AsyncRollouts {
  private running = new Map<number, Promise<void>>();
  private draining = false;
  /** Groups taken by the step now training: they hold their slots until it has trained. */
  private training = 0;
  private wake: (() => void) | undefined;

  constructor(
    readonly state: OffPolicyState,
    private readonly opts: AsyncRolloutOptions,
  ) {}

  /** After a recovery (new generation), builders in flight at the snapshot are sampled again. */
  resync(generation: number): void {
    if (!requeueInflight(this.state, generation)) return;
    this.running.clear();
    this.training = 0;
  }

  private slotsInUse(): number {
    return this.state.inflight.length + this.state.ready.filter(trainable).length + this.training;
  }

  /** Starts rollouts on the current sampler while slots and builders remain. */
  fill(): void {
    while (!this.draining && this.slotsInUse() < this.opts.slots) {
      const builder = this.state.requeue.length > 0 ? this.state.requeue.shift()! : this.state.next < this.opts.totalBuilders ? this.state.next++ : undefined;
      if (builder === undefined) return;
      const attempt = this.state.attempts[builder] ?? 0;
      this.state.attempts[builder] = attempt + 1;
      this.state.inflight.push(builder);
      const generation = this.state.generation;
      const batch = Math.floor(builder / this.opts.groupsPerDatasetBatch);
      const group = builder % this.opts.groupsPerDatasetBatch;
      const done = this.opts.launch(batch, group, attempt).then((result) => this.completed(builder, generation, result));
      this.running.set(builder, done);
    }
  }

  /** The worker's put into the trajectory queue: a filtered group frees its slot at once. */
  private completed(builder: number, generation: number, result: RolloutGroupResult): void {
    if (generation !== this.state.generation) return; // `running` was cleared by the recovery
    this.running.delete(builder);
    this.state.inflight = this.state.inflight.filter((b) => b !== builder);
    this.state.ready.push(result);
    this.fill();
    this.wake?.();
  }

  /**
   * The groups of the next step: waits for `want` trainable groups (fewer only once every builder
   * has completed), then takes the `want` oldest of all completed ones. The previous step's groups
   * free their slots here, after it has trained.
   */
  async collect(want: number): Promise<AsyncBatch> {
    this.beginStep();
    await this.waitFor(want);
    const dropped = this.state.ready.filter((g) => !trainable(g));
    const completed = this.state.ready.filter(trainable).sort((a, b) => a.samplingStep - b.samplingStep);
    const groups = completed.slice(0, want);
    this.state.ready = completed.slice(want);
    this.training = groups.length;
    return { groups, dropped };
  }

  /** A step starts: the groups the previous one trained free their slots (its weights are out). */
  beginStep(): void {
    this.training = 0;
    this.fill();
  }

  /**
   * With streaming minibatches (0.6.1's do_train_step_streaming_and_get_sampling_client): the
   * next `want` trainable groups in the order they completed (fewer only once every builder has
   * completed), and the groups filtered out before them. They hold their slots until the next
   * step begins.
   */
  async take(want: number): Promise<AsyncBatch> {
    await this.waitFor(want);
    const groups: RolloutGroupResult[] = [];
    const dropped: RolloutGroupResult[] = [];
    const rest: RolloutGroupResult[] = [];
    for (const g of this.state.ready) {
      if (groups.length === want) rest.push(g);
      else (trainable(g) ? groups : dropped).push(g);
    }
    this.state.ready = rest;
    this.training += groups.length;
    return { groups, dropped };
  }

  private async waitFor(want: number): Promise<void> {
    while (this.state.ready.filter(trainable).length < want && this.running.size > 0) {
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  /** Every builder handed out and every rollout completed (0.6.1's rollout_workers_finished). */
  get finished(): boolean {
    return this.state.next >= this.opts.totalBuilders && this.state.requeue.length === 0 && this.state.inflight.length === 0;
  }

  /** Waits for every rollout in flight and keeps the results (before continue-as-new). */
  async drain(): Promise<void> {
    this.draining = true;
    await Promise.all([...this.running.values()]);
    this.draining = false;
  }
}
