// At most so many sandbox runs at once; the rest wait in arrival order, and past a depth new ones
// are refused, so a burst of requests cannot start unbounded namespaces (each run may take its
// whole memory limit) nor pile up without end.
import { SandboxBusyError } from './types.js';

export interface RunQueueStats {
  running: number;
  queued: number;
  maxConcurrentRuns: number;
  maxQueuedRuns: number;
  /** The most runs there have been at once since start, and the deepest the queue has been. */
  peakRunning: number;
  peakQueued: number;
}

export class RunQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private peakRunning = 0;
  private peakQueued = 0;

  constructor(
    readonly maxConcurrentRuns: number,
    readonly maxQueuedRuns: number,
  ) {
    if (!(Number.isInteger(maxConcurrentRuns) && maxConcurrentRuns >= 1)) throw new RangeError(`maxConcurrentRuns must be a whole number ≥ 1 (got ${maxConcurrentRuns})`);
    if (!(Number.isInteger(maxQueuedRuns) && maxQueuedRuns >= 0)) throw new RangeError(`maxQueuedRuns must be a whole number ≥ 0 (got ${maxQueuedRuns})`);
  }

  /** Runs `task` when a slot is free; `onQueued` learns the depth it waits at, when it must wait. */
  async run<T>(task: () => Promise<T>, onQueued?: (depth: number) => void): Promise<T> {
    if (this.running >= this.maxConcurrentRuns) {
      if (this.waiting.length >= this.maxQueuedRuns) {
        throw new SandboxBusyError(`the sandbox is busy: ${this.running} runs running and ${this.waiting.length} waiting (its most); try again later`);
      }
      const depth = this.waiting.length + 1;
      this.peakQueued = Math.max(this.peakQueued, depth);
      onQueued?.(depth);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    this.peakRunning = Math.max(this.peakRunning, this.running);
    try {
      return await task();
    } finally {
      // The slot passes straight to the next in line, so a newcomer cannot overtake it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  stats(): RunQueueStats {
    return { running: this.running, queued: this.waiting.length, maxConcurrentRuns: this.maxConcurrentRuns, maxQueuedRuns: this.maxQueuedRuns, peakRunning: this.peakRunning, peakQueued: this.peakQueued };
  }
}
