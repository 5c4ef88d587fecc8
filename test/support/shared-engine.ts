// What the run's shared stack (shared-stack.ts) tells test files, and which of its engines a file
// uses: the one of the test worker process it runs in. Apart from shared-stack.ts so that a helper
// that only needs an engine's address does not load the S3 server's client with it.

export interface SharedEngine {
  engineUrl: string;
  engineLog: string;
}

export interface SharedStackInfo {
  temporalAddress: string;
  /** One per test worker process. */
  engines: SharedEngine[];
}

/** The engine of the test worker process this runs in (vitest numbers them from 1 in VITEST_POOL_ID). */
export function workerEngine(info: SharedStackInfo): SharedEngine {
  const worker = Math.max(1, Number(process.env.VITEST_POOL_ID) || 1);
  return info.engines[(worker - 1) % info.engines.length];
}
