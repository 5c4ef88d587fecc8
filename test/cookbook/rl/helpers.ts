// Builders of fake trajectories, envs and group builders for the RL unit tests.
import { modelInputFromInts } from '../../../src/cookbook/model-input.js';
import {
  BaseEnvGroupBuilder,
  TrajectoryGroup,
  type Env,
  type Metrics,
  type StepResult,
  type Trajectory,
  type Transition,
} from '../../../src/cookbook/rl/types.js';

export function transition(ob: number[], ac: number[], opts: Partial<Transition> & { logprobs?: number[] } = {}): Transition {
  return {
    ob: modelInputFromInts(ob),
    ac: { tokens: ac, maybeLogprobs: opts.logprobs ?? ac.map((_, i) => -0.1 * (i + 1)), stopReason: 'stop' },
    reward: opts.reward ?? 0,
    episodeDone: opts.episodeDone ?? false,
    metrics: opts.metrics ?? {},
    logs: opts.logs ?? {},
  };
}

export function traj(transitions: Transition[], stopReason: string | null = null): Trajectory {
  return { transitions, finalOb: modelInputFromInts([]), stopReason };
}

/** A group whose trajectories are single transitions with the given step rewards. */
export function groupWithRewards(rewards: number[], finalRewards?: number[], metricsG?: Metrics[]): TrajectoryGroup {
  return new TrajectoryGroup(
    rewards.map((r, i) => traj([transition([1, 2, 3], [10 + i, 11], { reward: r, episodeDone: true })])),
    finalRewards ?? rewards.map(() => 0),
    metricsG ?? rewards.map(() => ({})),
  );
}

/** A one-step env: reward = the first action token; or throws when `fail` says so. */
export class FakeEnv implements Env {
  constructor(
    readonly id: number,
    readonly fail = false,
  ) {}
  async initialObservation() {
    return { ob: modelInputFromInts([100, this.id]), stopCondition: ['\n'] };
  }
  async step(action: number[]): Promise<StepResult> {
    if (this.fail) throw new TypeError(`env ${this.id} failed`);
    return { reward: action[0] ?? 0, episodeDone: true, nextObservation: modelInputFromInts([]), nextStopCondition: ['\n'], metrics: { 'stop/completed': 1 } };
  }
}

/**
 * makeEnvs() returns fresh FakeEnvs with increasing ids; `failIds` are envs that throw. Counts
 * makeEnvs and cleanup calls.
 */
export class FakeBuilder extends BaseEnvGroupBuilder {
  nextId = 0;
  makeEnvsCalls = 0;
  cleanups = 0;
  constructor(
    readonly size: number,
    readonly failIds: Set<number> = new Set(),
  ) {
    super();
  }
  async makeEnvs(): Promise<Env[]> {
    this.makeEnvsCalls++;
    return Array.from({ length: this.size }, () => {
      const id = this.nextId++;
      return new FakeEnv(id, this.failIds.has(id));
    });
  }
  override async cleanup(): Promise<void> {
    this.cleanups++;
  }
  override loggingTags(): string[] {
    return ['fake'];
  }
}
