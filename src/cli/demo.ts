// The demo: start the local stack, fine-tune tiny-qwen3 on the shipped chat dataset with a live
// progress bar, then print the Web UI link, the log dir and the final metrics.
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { repoRoot } from './services.js';
import { formatResult, watchRun } from './runs.js';
import { startStack } from './stack.js';
import { resolveRun, startRun } from './train.js';

const { values } = parseArgs({
  options: { keep: { type: 'boolean' }, config: { type: 'string', default: join(repoRoot, 'configs', 'sl_demo.json') } },
  allowPositionals: true,
});
// Keep the stack up for browsing the UI only when someone is at the terminal.
const keep = values.keep ?? Boolean(process.stdin.isTTY && process.stdout.isTTY);

const stack = await startStack({ log: (line) => console.log(line) });
let code = 0;
try {
  const client = new Client({ connection: await Connection.connect({ address: stack.temporalAddress }) });
  const resolved = resolveRun('sl', values.config!, []);
  await startRun(client, resolved);
  const uiLink = `${stack.uiUrl}/namespaces/default/workflows/${resolved.workflowId}`;
  console.log(`\nrun     ${resolved.workflowId}\nweb UI  ${uiLink}\nlog dir ${resolved.run.logPath}\n`);
  const result = await watchRun(client, resolved.workflowId);
  console.log(`\nfinished: ${uiLink}`);
  console.log(formatResult(result).join('\n'));
  if (keep) {
    console.log(`\nthe stack keeps running so you can browse ${stack.uiUrl}; press Ctrl-C to stop it`);
    await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  }
} catch (err) {
  console.error(`demo failed: ${(err as Error).message}`);
  code = 1;
} finally {
  await stack.stop();
}
process.exit(code);
