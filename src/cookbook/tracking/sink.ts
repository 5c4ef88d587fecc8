// Where a run's metrics are mirrored to. Each sink keeps its own cursor (the last step it holds),
// in the destination itself or beside it, so a row is mirrored exactly once whatever crashed when:
// offline, the history file's last line is the cursor; online, rows go at explicit line offsets
// that the W&B server overwrites, so a resend after a crash lands on the same lines.

export interface TrackedRun {
  workflowId: string;
  logPath: string;
  project: string;
  name: string | null;
  config: Record<string, unknown>;
}

export interface TrackingSink {
  /** Where people find the run (a directory or a URL). */
  readonly location: string;
  /** Creates the run with its config, once. */
  start(): Promise<void>;
  /** The last step mirrored (−1: none). */
  lastStep(): Promise<number>;
  /** Mirrors rows (steps above lastStep, ascending) and the summary as of them. */
  append(rows: Array<Record<string, unknown>>, summary: Record<string, unknown>): Promise<void>;
  finished(): Promise<boolean>;
  /** Marks the run finished with its summary and the final checkpoint (its row, and the run's checkpoints.jsonl), logged as a "model" artifact. */
  finish(summary: Record<string, unknown>, final: Record<string, unknown>, checkpointsJsonl: string): Promise<void>;
}
