// `cookbook`: start the local stack, start and control training runs.
import { parseArgs } from 'node:util';
import { ConfigError } from '../cookbook/config/overrides.js';
import { pyJsonDumps } from '../cookbook/pyjson.js';
import { connectClient, CONNECTION_OPTIONS, CONNECTION_USAGE, engineUrl, globalFlags, temporalAddress, type GlobalFlags } from './connect.js';
import { runWorker, WORKER_OPTIONS, WORKER_USAGE, workerFlags } from '../workers/run.js';
import { EXPORT_USAGE, exportCheckpoint, formatExport } from './export.js';
import { EVAL_USAGE, evalCommand } from './eval.js';
import { formatModel, formatModels } from './models.js';
import { previewData } from './preview.js';
import { formatResult, listRuns, logDirOf, runStatus, sendControl, setHot, watchRun } from './runs.js';
import { startStack, stopDetachedStack } from './stack.js';
import { formatSetResult, SWEEP_USAGE, sweepCommand } from './sweep.js';
import { reportCommand } from '../report/cli.js';
import { checkBackend, checkRunData, rendererWarnings, resolveRun, startRun, TRAINABLE_KINDS } from './train.js';
import { checkParentSettled, CONTINUE_USAGE, parentLogDir, resolveContinuation, TRACK_USAGE } from './continue.js';
import { syncRun } from '../cookbook/tracking/sync.js';

const USAGE = `usage: cookbook <command> [options]

  dev [--detach]                      start the local stack (Temporal + UI, engine, worker)
  dev stop                            stop a detached local stack
  train <kind> <config.json> [k=v …]  start a run (kind: ${Object.keys(TRAINABLE_KINDS).join(', ')}); dotted keys override the config
        [--wait] [--id <workflow id>]       --dry-run: check config and data, show the first datums, start nothing
${CONTINUE_USAGE}
${TRACK_USAGE}
  models [<model name>]               served models: renderers, tokenizer, LR hint (one model: details)
  runs                                list runs (kind, model, step, status)
  status <id>                         progress, hot settings, last checkpoint and metrics
  watch <id>                          progress bar until the run ends
  stop <id> [--reason <text>]         graceful early stop: finish the step, save a final checkpoint
  pause <id> | resume <id>            pause after the current step / carry on
  set <id> key=value …                change lr_multiplier, eval_every or save_every from the next step
                                      (a sweep: every running point, and eval/save_every of later points)
  report <id or log dir> […]          HTML report: metric curves (runs overlaid), config, checkpoints,
        [--out FILE]                        rollouts; written to <log dir>/report.html unless --out
        [--serve [--port N]]                --serve: live page on 127.0.0.1, re-rendered per request
        [--rollout-iterations N]            rollout iterations shown per run (default 50, evenly spaced)
${SWEEP_USAGE}
${EVAL_USAGE}
${EXPORT_USAGE}
${WORKER_USAGE}

${CONNECTION_USAGE}`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...CONNECTION_OPTIONS,
      ...WORKER_OPTIONS,
      wait: { type: 'boolean', default: false },
      detach: { type: 'boolean', default: false },
      id: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      reason: { type: 'string' },
      out: { type: 'string' },
      serve: { type: 'boolean', default: false },
      port: { type: 'string' },
      'rollout-iterations': { type: 'string' },
      format: { type: 'string' },
      'base-dir': { type: 'string' },
      'base-model-id': { type: 'string' },
      dtype: { type: 'string' },
      limit: { type: 'string' },
      data: { type: 'string' },
      samples: { type: 'string' },
      'pass-at-k': { type: 'string' },
      set: { type: 'string', multiple: true },
      list: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const flags: GlobalFlags = globalFlags(values);
  const [command, ...rest] = positionals;
  if (!command || values.help) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  const needId = () => {
    if (!rest[0]) throw new ConfigError(`${command}: give a workflow id (see \`npx cookbook runs\`)`);
    return rest[0];
  };

  switch (command) {
    case 'models':
      console.log(rest[0] ? formatModel(rest[0]) : formatModels());
      return 0;
    case 'dev': {
      if (rest[0] === 'stop') {
        console.log(await stopDetachedStack());
        return 0;
      }
      const stack = await startStack({ detached: values.detach });
      console.log(`Temporal  ${stack.temporalAddress}\nWeb UI    ${stack.uiUrl}\nengine    ${stack.engineUrl}\nlogs      ${stack.dir}`);
      if (values.detach) {
        console.log('running in the background; stop with `npx cookbook dev stop`');
        return 0;
      }
      console.log('press Ctrl-C to stop');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await stack.stop();
      return 0;
    }
    case 'train': {
      const [kind, configPath, ...overrides] = rest;
      if (!kind || !configPath) throw new ConfigError('train: usage `cookbook train <kind> <config.json> [key=value …]`');
      const resolved = resolveRun(kind, configPath, overrides, { workflowId: values.id });
      for (const w of rendererWarnings(resolved.config)) console.error(`warning: ${w}`);
      if (values['dry-run']) {
        await checkRunData(resolved);
        console.log(pyJsonDumps(resolved.config, { indent: 2 }));
        console.log(await previewData(kind, resolved.config));
        return 0;
      }
      await checkBackend(resolved.config.base_url ?? engineUrl(flags), resolved.config.model_name);
      await checkRunData(resolved);
      console.log(pyJsonDumps(resolved.config, { indent: 2 }));
      const client = await connectClient(flags);
      await startRun(client, resolved, flags.taskQueue);
      console.log(`started ${resolved.workflowId}`);
      console.log(`log dir  ${resolved.run.logPath}`);
      console.log(`web UI   http://127.0.0.1:8233/namespaces/${client.options.namespace}/workflows/${resolved.workflowId}`);
      if (!values.wait) return 0;
      const result = await watchRun(client, resolved.workflowId);
      console.log(formatResult(result).join('\n'));
      return 0;
    }
    case 'sweep':
      return sweepCommand([...rest, ...(values.set ?? [])], { detach: values.detach, workflowId: values.id, engineUrl: engineUrl(flags), taskQueue: flags.taskQueue, connect: () => connectClient(flags) });
    case 'continue': {
      const [parent, ...overrides] = rest;
      if (!parent) throw new ConfigError('continue: usage `cookbook continue <workflow id or log dir> [key=value …]`');
      const client = await connectClient(flags);
      const resolved = resolveContinuation(await parentLogDir(parent, (id) => logDirOf(client, id)), overrides, { workflowId: values.id });
      await checkParentSettled(client, resolved.config.continue_from.workflow_id);
      await checkBackend(resolved.config.base_url ?? engineUrl(flags), resolved.config.model_name);
      await checkRunData(resolved);
      console.log(pyJsonDumps(resolved.config, { indent: 2 }));
      await startRun(client, resolved, flags.taskQueue);
      console.log(`started ${resolved.workflowId} (continues ${resolved.config.continue_from.workflow_id} from checkpoint ${resolved.config.continue_from.name}, step ${resolved.config.continue_from.next_step})`);
      console.log(`log dir  ${resolved.run.logPath}`);
      if (!values.wait) return 0;
      console.log(formatResult(await watchRun(client, resolved.workflowId)).join('\n'));
      return 0;
    }
    case 'eval':
      return evalCommand(rest, { limit: values.limit, data: values.data, samples: values.samples, passAtK: values['pass-at-k'], set: values.set, list: values.list, detach: values.detach, workflowId: values.id, engineUrl: engineUrl(flags), taskQueue: flags.taskQueue, connect: () => connectClient(flags) });
    case 'track': {
      // A log dir needs no Temporal server (e.g. uploading an offline-tracked run from another machine).
      const dir = await parentLogDir(needId(), async (id) => logDirOf(await connectClient(flags), id));
      const sink = await syncRun(dir);
      console.log(sink ? `${dir}: mirrored to ${sink.location}` : `${dir}: not tracked (set wandb_project in its config; WANDB_MODE=disabled turns tracking off)`);
      return 0;
    }
    case 'worker':
      await runWorker(workerFlags(flags, values));
      return 0;
    case 'runs':
      console.log(await listRuns(await connectClient(flags)));
      return 0;
    case 'status':
      console.log(await runStatus(await connectClient(flags), needId()));
      return 0;
    case 'watch': {
      const result = await watchRun(await connectClient(flags), needId());
      console.log(formatResult(result).join('\n'));
      return 0;
    }
    case 'stop':
    case 'pause':
    case 'resume':
      console.log(await sendControl(await connectClient(flags), needId(), command, values.reason));
      return 0;
    case 'set': {
      console.log(formatSetResult(rest[0], await setHot(await connectClient(flags), needId(), rest.slice(1))));
      return 0;
    }
    case 'report':
      return reportCommand(rest, { out: values.out, serve: values.serve, port: values.port, rolloutIterations: values['rollout-iterations'] }, async (id) =>
        logDirOf(await connectClient(flags), id),
      );
    case 'export': {
      if (!rest[0]) throw new ConfigError('export: usage `cookbook export <checkpoint> --format peft|merged --out DIR`');
      const result = await exportCheckpoint({
        checkpoint: rest[0],
        format: values.format,
        out: values.out,
        baseUrl: engineUrl(flags),
        baseDir: values['base-dir'],
        baseModelId: values['base-model-id'],
        dtype: values.dtype,
      });
      console.log(formatExport(result, values.format as 'peft' | 'merged'));
      return 0;
    }
    default:
      console.error(`unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const e = err as Error;
    console.error(`error: ${e.message}`);
    if (process.env.COOKBOOK_DEBUG) console.error(e.stack);
    process.exit(e instanceof ConfigError || e.name === 'ConfigError' ? 2 : 1);
  },
);

export { temporalAddress };
