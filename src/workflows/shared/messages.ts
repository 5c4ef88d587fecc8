// Signals, queries and updates every training workflow answers. Shared with the CLI, so this file
// holds only definitions and plain types.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

export type RunStatus = 'starting' | 'running' | 'paused' | 'recovering' | 'stopping' | 'completed' | 'stopped' | 'failed';

/** Settings a user may change while a run is going, with `cookbook set <id> key=value`. */
export interface HotSettings {
  lr_multiplier: number;
  eval_every: number;
  save_every: number;
}

export interface CheckpointRef {
  name: string;
  /** The last step whose update the checkpoint contains (−1: none, e.g. a loaded starting point). */
  step: number;
  statePath: string;
  samplerPath?: string;
  elapsedTokens: number;
  /** Elapsed tokens at the last periodic save as of this checkpoint (with `save_every_tokens`). */
  savedTokens?: number;
  /** The paradigm's state as of this checkpoint. */
  custom?: unknown;
}

export interface Progress {
  kind: string;
  model: string;
  status: RunStatus;
  /** Steps completed (the next step to run). */
  step: number;
  totalSteps: number;
  paused: boolean;
  stopRequested: boolean;
  lastMetrics: Record<string, number>;
  lastCheckpoint?: CheckpointRef;
  hot: HotSettings;
  recoveries: number;
  logPath: string;
}

export const stopSignal = defineSignal<[reason?: string]>('stop');
export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
export const progressQuery = defineQuery<Progress>('progress');
/** What `set` answers: the settings now in force and the first step that uses them. */
export interface SetResult {
  settings: HotSettings;
  fromStep: number;
  /** A sweep or pipeline: what each run it forwarded the settings to applied. */
  forwarded?: ForwardedSet[];
}

/** A child run's answer to a forwarded `set` (fromStep null: it had already ended). */
export interface ForwardedSet {
  workflowId: string;
  fromStep: number | null;
  forwarded?: ForwardedSet[];
}

export const setUpdate = defineUpdate<SetResult, [Partial<HotSettings>]>('set');
/**
 * `set` while no worker polls: Temporal keeps no update that a worker has not accepted, so the CLI
 * sends the change as a signal instead, which the run's history keeps until a worker applies it.
 * The CLI validates it first; a run ignores (and logs) one that fails validateHotSettings.
 */
export const setSignal = defineSignal<[Partial<HotSettings>]>('set');

export const HOT_SETTING_KEYS: ReadonlyArray<keyof HotSettings> = ['lr_multiplier', 'eval_every', 'save_every'];

/** Validates a `set` request; plain checks so the workflow sandbox carries no schema library. */
export function validateHotSettings(patch: Partial<HotSettings>): void {
  const keys = Object.keys(patch);
  if (keys.length === 0) throw new Error('set: nothing to change');
  for (const key of keys) {
    if (!HOT_SETTING_KEYS.includes(key as keyof HotSettings)) {
      throw new Error(`set: unknown setting "${key}" (hot settings: ${HOT_SETTING_KEYS.join(', ')})`);
    }
    const value = patch[key as keyof HotSettings];
    if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`set: ${key} must be a number`);
    if (key === 'lr_multiplier' && !(value > 0)) throw new Error('set: lr_multiplier must be > 0');
    if (key !== 'lr_multiplier' && (!Number.isInteger(value) || value < 0)) throw new Error(`set: ${key} must be an integer ≥ 0`);
  }
}

/** Why a recorded `set` signal cannot apply, or undefined when it can (a signal cannot be refused). */
export function hotSettingsProblem(patch: unknown): string | undefined {
  try {
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw new Error('set: expected an object of settings');
    validateHotSettings(patch as Partial<HotSettings>);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
