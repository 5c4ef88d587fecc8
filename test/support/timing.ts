// Where a test file's time goes: the support helpers time what they do (server and worker start-ups,
// waits on events, chaos baselines and trials) and append one line per span to the file that
// COOKBOOK_TEST_TIMINGS names (scripts/test.mjs sets it and prints the slowest files with these
// spans beside their totals). Without that variable nothing is written. A span inside another (the
// restarts a chaos trial does) counts toward the outer one only, so a file's spans never overlap and
// what they leave of its total is time in the tests' own work (runs, checks).
import { AsyncLocalStorage } from 'node:async_hooks';
import { appendFileSync } from 'node:fs';

export type TimeCategory = 'stack start' | 'engine start' | 's3 start' | 'temporal start' | 'worker start' | 'waits' | 'chaos baseline' | 'chaos trials';

const inside = new AsyncLocalStorage<TimeCategory>();

export async function timed<T>(category: TimeCategory, fn: () => Promise<T>): Promise<T> {
  const out = process.env.COOKBOOK_TEST_TIMINGS;
  if (!out || inside.getStore()) return fn();
  const started = performance.now();
  const at = Date.now();
  try {
    return await inside.run(category, fn);
  } finally {
    const ms = Math.round(performance.now() - started);
    const line = { file: await currentTestFile(), category, at, ms };
    try {
      appendFileSync(out, `${JSON.stringify(line)}\n`);
    } catch {
      // timings are a report, never a reason for a test to fail
    }
  }
}

/** The test file running now; none outside vitest (a bench process a test started), whose import of vitest throws. */
async function currentTestFile(): Promise<string | undefined> {
  try {
    return (await import('vitest')).expect.getState().testPath;
  } catch {
    return undefined;
  }
}
