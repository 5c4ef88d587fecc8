// vitest globalSetup: one Temporal dev server, an engine per test worker process and one S3 server for the
// whole run, started once in the main process and handed to every test file through
// `inject('sharedStack')`. A file that does not kill or restart a server runs on them (startTestStack()
// in support/stack.ts) with its own task queue, run folders and model ids, so files stay isolated
// while the start-up is paid once. An engine per worker process (workerEngine): an engine does its
// tensor work on one compute thread, so two files on one engine would queue on each other's steps. Only when
// COOKBOOK_TEST_SHARED_STACK=1 (scripts/test.mjs sets it): a run of single files with plain
// `npx vitest run` starts nothing it may not need, and its files start their own stacks.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEngine, startTemporalServer } from '../../src/cli/services.js';
import { onFreePort } from './free-port.js';
import { startS3Server, type S3ServerEnv } from './s3-server.js';
import type { SharedStackInfo } from './shared-engine.js';

/** The run's S3 server (SeaweedFS), for files that never stop it (s3ServerForFile in s3-server.ts). */
export interface SharedS3Info {
  endpoint: string;
  env: S3ServerEnv;
  logFile: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    sharedStack: SharedStackInfo | null;
    sharedS3: SharedS3Info | null;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.COOKBOOK_TEST_SHARED_STACK !== '1') {
    project.provide('sharedStack', null);
    project.provide('sharedS3', null);
    return async () => undefined;
  }
  // Under the run's own TMPDIR (run-tmpdir.ts ran first), so the run's cleanup takes it too.
  const dir = mkdtempSync(join(tmpdir(), 'cookbook-shared-stack-'));
  const workers = Math.max(1, project.config.maxWorkers ?? 1);
  // The S3 server starts beside them: its start-up (10-15 s of SeaweedFS's own) is paid once.
  const [t, s3, ...engines] = await Promise.all([
    onFreePort({ logFile: join(dir, 'temporal.log') }, startTemporalServer),
    startS3Server(),
    ...Array.from({ length: workers }, (_, i) => onFreePort({ dataDir: join(dir, `engine-${i + 1}`) }, startEngine)),
  ]);
  project.provide('sharedStack', {
    temporalAddress: `127.0.0.1:${t.opts.port}`,
    engines: engines.map((e) => ({ engineUrl: e.service.baseUrl, engineLog: e.service.logFile })),
  });
  project.provide('sharedS3', { endpoint: s3.endpoint, env: s3.env, logFile: s3.logFile });
  return async () => {
    await Promise.all([t.service.stop(), s3.close(), ...engines.map((e) => e.service.stop())]);
  };
}
