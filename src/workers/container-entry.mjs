// The worker container's entry point (Dockerfile.worker: `node --import tsx
// src/workers/container-entry.mjs`): become the owner of the mounted ./runs (container-user.mjs),
// then run the worker as `node src/workers/main.ts` does. A setup problem ends the container with
// a message in `docker compose logs worker` instead of a worker that cannot write its log dirs.
import { becomeWorkerUser, WorkerUserError } from './container-user.mjs';

try {
  console.error(`[worker-entry] ${becomeWorkerUser()}`);
} catch (err) {
  if (!(err instanceof WorkerUserError)) throw err;
  console.error(`[worker-entry] cannot start the worker: ${err.message}`);
  process.exit(78); // EX_CONFIG
}
await import('./main.ts');
