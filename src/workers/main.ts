// The worker process as the local stack (`cookbook dev`), the demo and Dockerfile.worker start it:
// `node --import tsx src/workers/main.ts`, configured by the environment only (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE and the other TEMPORAL_* client settings, COOKBOOK_TASK_QUEUE,
// TINKER_BASE_URL, TINKER_API_KEY). `cookbook worker` runs the same code with flags on top.
import { log } from '../cookbook/logging.js';
import { runWorker } from './run.js';

if (!process.env.TINKER_BASE_URL) {
  log.error('TINKER_BASE_URL is not set: point it at the local engine (npm run engine) or a Tinker service');
  process.exit(2);
}

try {
  await runWorker({});
} catch (err) {
  log.error({ error: (err as Error).message }, 'worker failed');
  process.exit(1);
}
