// The worker process: `node --import tsx src/workers/main.ts` (the CLI's `dev` and the demo start
// it). Settings from the environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, COOKBOOK_TASK_QUEUE,
// TINKER_BASE_URL, TINKER_API_KEY.
import { log } from '../cookbook/logging.js';
import { createCookbookWorker } from './worker.js';

const temporalAddress = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const tinkerBaseUrl = process.env.TINKER_BASE_URL;
if (!tinkerBaseUrl) {
  log.error('TINKER_BASE_URL is not set: point it at the local engine (npm run engine) or a Tinker service');
  process.exit(2);
}

const { worker, close } = await createCookbookWorker({
  temporalAddress,
  namespace: process.env.TEMPORAL_NAMESPACE,
  taskQueue: process.env.COOKBOOK_TASK_QUEUE,
  tinkerBaseUrl,
});
log.info({ temporalAddress, taskQueue: worker.options.taskQueue, tinkerBaseUrl }, 'worker started');
await worker.run();
await close();
log.info('worker stopped');
