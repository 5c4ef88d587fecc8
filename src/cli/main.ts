// `cookbook`: start the local stack, start and control training runs. Each command loads its own
// modules when it runs: `status`, `watch` or `stop` must answer in a moment, without first loading
// the training library, the tokenizers and the worker that `train` needs.
import { parseArgs } from 'node:util';
import { ConfigError } from '../cookbook/config/overrides.js';
import { applyWireFlag, connectClient, CONNECTION_OPTIONS, CONNECTION_USAGE, engineUrl, globalFlags, temporalAddress, type GlobalFlags } from './connect.js';
import { WORKER_OPTIONS, WORKER_USAGE, workerFlags } from '../workers/run.js';
import { formatRecordedSet, formatResult, listRuns, logDirOf, runStatus, sendControl, setHot, watchRun } from './runs.js';
import { webUiLine } from './ui-link.js';
import { DEFAULT_TASK_QUEUE } from '../workers/task-queue.js';
import { flushTracing } from '../workers/tracing.js';

async function usage(): Promise<string> {
  const [{ TRAINABLE_KINDS }, { CONTINUE_USAGE, TRACK_USAGE }, { SWEEP_USAGE }, { EVAL_USAGE }, { EXPORT_USAGE }, { SERVE_USAGE }, { DECIDE_USAGE }, { PLAY_USAGE }] = await Promise.all([
    import('./train.js'),
    import('./continue.js'),
    import('./sweep.js'),
    import('./eval.js'),
    import('./export.js'),
    import('./serve.js'),
    import('./decide.js'),
    import('./play.js'),
  ]);
  const { TTS_USAGE } = await import('./tts.js');
  const { CAPTURE_USAGE } = await import('../capture/cli.js');
  return `usage: cookbook <command> [options]

  dev [--detach]                      start the local stack (Temporal + Web UI, engine, worker), or what is
        [--temporal-port N] [--ui-port N]   missing of it (a killed worker); ports: COOKBOOK_TEMPORAL_PORT (7233),
        [--engine-port N | --engine-url U]  COOKBOOK_UI_PORT (Temporal's + 1000), COOKBOOK_ENGINE_PORT (8100);
        [--dev-dir DIR]                     a port N may be auto: a free one, chosen again if another process takes it
                                            first (an auto Temporal port makes unset UI and engine ports auto too);
                                            --engine-url/TINKER_BASE_URL: use that engine, start none;
                                            DIR (COOKBOOK_DEV_DIR): .dev, or .dev/port-N off port 7233
  dev stop [same ports or --dev-dir]  stop what \`dev\` started there, and registered \`cookbook worker\`s
  train <kind> <config.json> [k=v …]  start a run (kind: ${Object.keys(TRAINABLE_KINDS).join(', ')}); dotted keys override the config
        [--wait] [--id <workflow id>]       --dry-run: check config and data, show the first datums, start nothing
        [--verbose]                         print the whole resolved config (else a summary and its config.json)
${CONTINUE_USAGE}
${TRACK_USAGE}
  models [<model name>] [--catalogue] the backend's models with their shapes (layers, width, vocabulary, parameters),
                                      renderers, tokenizer, LR hint; --catalogue: the hosted service's model table too
  runs [--wide]                       list runs (kind, model, step, status); --wide: ids never shortened
        [--store URI …]                     the runs in run stores (a folder, s3://bucket/prefix; repeat for more):
                                            status from Temporal where it knows the run, else inferred from the files
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
        [--trace FILE]                      write the steps' timing spans as a Perfetto / chrome://tracing file
${SWEEP_USAGE}
${EVAL_USAGE}
${TTS_USAGE}
${EXPORT_USAGE}
${SERVE_USAGE}
${CAPTURE_USAGE}
${DECIDE_USAGE}
${PLAY_USAGE}
${WORKER_USAGE}

${CONNECTION_USAGE}`;
}

async function main(argv: string[]): Promise<number> {
  // serve and chat parse flags of their own (their --api-key is the served API's key, not Temporal's).
  if (argv[0] === 'serve' || argv[0] === 'chat') return (await import('./serve.js')).serveCommand(argv[0], argv.slice(1));
  if (argv[0] === 'decide') return (await import('./decide.js')).decideCommand(argv.slice(1));
  if (argv[0] === 'export') return (await import('./export.js')).exportCommand(argv.slice(1));
  // play reads its own flags (--against, --player, --multiline) and the person's replies from stdin.
  if (argv[0] === 'play') return (await import('./play.js')).playCommand(argv.slice(1));
  // capture reads its own flags (the store's folder or URL, query filters).
  if (argv[0] === 'capture') return (await import('../capture/cli.js')).captureCommand(argv.slice(1));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...CONNECTION_OPTIONS,
      ...WORKER_OPTIONS,
      wait: { type: 'boolean', default: false },
      detach: { type: 'boolean', default: false },
      'temporal-port': { type: 'string' },
      'ui-port': { type: 'string' },
      'engine-port': { type: 'string' },
      'dev-dir': { type: 'string' },
      id: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      reason: { type: 'string' },
      out: { type: 'string' },
      serve: { type: 'boolean', default: false },
      port: { type: 'string' },
      'rollout-iterations': { type: 'string' },
      trace: { type: 'string' },
      limit: { type: 'string' },
      data: { type: 'string' },
      samples: { type: 'string' },
      'pass-at-k': { type: 'string' },
      'no-skip': { type: 'boolean', default: false },
      set: { type: 'string', multiple: true },
      list: { type: 'boolean', default: false },
      benchmarks: { type: 'string' },
      inspect: { type: 'string' },
      every: { type: 'string' },
      unschedule: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      catalogue: { type: 'boolean', default: false },
      wide: { type: 'boolean', default: false },
      store: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const flags: GlobalFlags = globalFlags(values);
  applyWireFlag(flags.wire);
  const [command, ...rest] = positionals;
  if (!command || values.help) {
    console.log(await usage());
    return command || values.help ? 0 : 2;
  }
  const needId = () => {
    if (!rest[0]) throw new ConfigError(`${command}: give a workflow id (see \`npx cookbook runs\`)`);
    return rest[0];
  };

  switch (command) {
    case 'models': {
      const [{ formatModel, formatModels }, { servedModels }, { apiKeyFor }] = await Promise.all([import('./models.js'), import('./served-models.js'), import('../backends/api-key.js')]);
      const url = engineUrl(flags);
      const served = await servedModels(url, apiKeyFor(url));
      console.log(rest[0] ? formatModel(rest[0], served) : formatModels(served, { catalogue: values.catalogue }));
      return 0;
    }
    case 'dev': {
      const { devOptions, startStack, stopStack } = await import('./stack.js');
      const dev = devOptions(values);
      if (rest[0] === 'stop') {
        console.log(await stopStack(dev));
        return 0;
      }
      const stack = await startStack({ ...dev, detached: values.detach });
      console.log(`Temporal  ${stack.temporalAddress}\nWeb UI    ${stack.uiUrl}\nengine    ${stack.engineUrl}\nlogs      ${stack.dir}`);
      const defaultsReachIt = (() => {
        try {
          return stack.temporalAddress === temporalAddress({}) && stack.engineUrl === engineUrl({});
        } catch {
          return false; // a broken temporal.toml profile: say how to reach the stack
        }
      })();
      if (!defaultsReachIt) {
        console.log(`the CLI reaches it with --address ${stack.temporalAddress} --engine-url ${stack.engineUrl} (or TEMPORAL_ADDRESS / TINKER_BASE_URL)`);
      }
      const stopHint = `\`npx cookbook dev stop${dev.dir ? ` --dev-dir ${dev.dir}` : stack.temporalAddress.endsWith(':7233') ? '' : ` --temporal-port ${stack.temporalAddress.split(':').pop()}`}\``;
      if (values.detach) {
        console.log(`running in the background; stop with ${stopHint}`);
        return 0;
      }
      if (stack.kept.length) console.log(`Ctrl-C stops what this command started; ${stopHint} stops the rest`);
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
      const [{ checkBackend, checkRunData, rendererWarnings, resolveRun, startRun }, { pyJsonDumps }] = await Promise.all([import('./train.js'), import('../cookbook/pyjson.js')]);
      let resolved = resolveRun(kind, configPath, overrides, { workflowId: values.id });
      // --wire reaches a worker that is already running only through the run's config key `wire`.
      if (flags.wire !== undefined && 'wire' in resolved.config && !overrides.some((o) => o.startsWith('wire='))) {
        resolved = resolveRun(kind, configPath, [...overrides, `wire=${flags.wire.trim().toLowerCase()}`], { workflowId: values.id });
      }
      for (const w of rendererWarnings(resolved.config)) console.error(`warning: ${w}`);
      if (values['dry-run']) {
        await checkRunData(resolved);
        console.log(pyJsonDumps(resolved.config, { indent: 2 }));
        console.log(await (await import('./preview.js')).previewData(kind, resolved.config));
        return 0;
      }
      await checkBackend(resolved.config.base_url ?? engineUrl(flags), resolved.config.model_name);
      const { configLine, runSummary } = await import('./train-summary.js');
      const plan = await checkRunData(resolved);
      console.log(values.verbose ? pyJsonDumps(resolved.config, { indent: 2 }) : runSummary(resolved, plan).join('\n'));
      const client = await connectClient(flags);
      await startRun(client, resolved, flags.taskQueue);
      console.log(`started ${resolved.workflowId}`);
      console.log(`log dir  ${resolved.run.logPath}`);
      if (!values.verbose) console.log(configLine(resolved));
      console.log(webUiLine(client, resolved.workflowId));
      if (!values.wait) return 0;
      const result = await watchRun(client, resolved.workflowId);
      console.log(formatResult(result).join('\n'));
      return 0;
    }
    case 'sweep':
      return (await import('./sweep.js')).sweepCommand([...rest, ...(values.set ?? [])], { detach: values.detach, workflowId: values.id, engineUrl: engineUrl(flags), taskQueue: flags.taskQueue, connect: () => connectClient(flags) });
    case 'continue': {
      const [parent, ...overrides] = rest;
      if (!parent) throw new ConfigError('continue: usage `cookbook continue <workflow id or log dir> [key=value …]`');
      const [{ checkParentSettled, parentLogDir, resolveContinuation }, { checkBackend, checkRunData, startRun }, { pyJsonDumps }] = await Promise.all([
        import('./continue.js'),
        import('./train.js'),
        import('../cookbook/pyjson.js'),
      ]);
      const client = await connectClient(flags);
      const resolved = resolveContinuation(await parentLogDir(parent, (id) => logDirOf(client, id)), overrides, { workflowId: values.id });
      await checkParentSettled(client, resolved.config.continue_from.workflow_id);
      await checkBackend(resolved.config.base_url ?? engineUrl(flags), resolved.config.model_name);
      const { configLine, runSummary } = await import('./train-summary.js');
      const plan = await checkRunData(resolved);
      console.log(values.verbose ? pyJsonDumps(resolved.config, { indent: 2 }) : runSummary(resolved, plan).join('\n'));
      await startRun(client, resolved, flags.taskQueue);
      console.log(`started ${resolved.workflowId} (continues ${resolved.config.continue_from.workflow_id} from checkpoint ${resolved.config.continue_from.name}, step ${resolved.config.continue_from.next_step})`);
      console.log(`log dir  ${resolved.run.logPath}`);
      if (!values.verbose) console.log(configLine(resolved));
      console.log(webUiLine(client, resolved.workflowId));
      if (!values.wait) return 0;
      console.log(formatResult(await watchRun(client, resolved.workflowId)).join('\n'));
      return 0;
    }
    case 'eval':
      return (await import('./eval.js')).evalCommand(rest, { limit: values.limit, data: values.data, samples: values.samples, passAtK: values['pass-at-k'], noSkip: values['no-skip'], set: values.set, list: values.list, detach: values.detach, workflowId: values.id, benchmarks: values.benchmarks, inspect: values.inspect, every: values.every, unschedule: values.unschedule, engineUrl: engineUrl(flags), taskQueue: flags.taskQueue, connect: () => connectClient(flags), logDirOf });
    case 'tts':
      return (await import('./tts.js')).ttsCommand(rest, { limit: values.limit, data: values.data, set: values.set, detach: values.detach, workflowId: values.id, engineUrl: engineUrl(flags), taskQueue: flags.taskQueue, connect: () => connectClient(flags) });
    case 'track': {
      // A log dir needs no Temporal server (e.g. uploading an offline-tracked run from another machine).
      const [{ parentLogDir }, { syncRun }] = await Promise.all([import('./continue.js'), import('../cookbook/tracking/sync.js')]);
      const dir = await parentLogDir(needId(), async (id) => logDirOf(await connectClient(flags), id));
      const sink = await syncRun(dir);
      console.log(sink ? `${dir}: mirrored to ${sink.location}` : `${dir}: not tracked (set wandb_project in its config; WANDB_MODE=disabled turns tracking off)`);
      return 0;
    }
    case 'worker': {
      // On a stack that `cookbook dev` runs, the worker registers with it: `dev` counts it as the
      // stack's worker and `dev stop` stops it.
      const [{ registerWorker, unregisterWorker }, { runWorker }] = await Promise.all([import('./stack-state.js'), import('../workers/run.js')]);
      const address = temporalAddress(flags);
      const registered = registerWorker(address, process.pid, flags.taskQueue ?? process.env.COOKBOOK_TASK_QUEUE ?? DEFAULT_TASK_QUEUE);
      if (registered) console.error(`registered with the local stack in ${registered}: \`npx cookbook dev stop\` stops this worker too`);
      try {
        await runWorker(workerFlags(flags, values));
      } finally {
        if (registered) unregisterWorker(registered, process.pid);
      }
      return 0;
    }
    case 'runs':
      if (values.store?.length) return (await import('./runs-stores.js')).storeRunsCommand(values.store, { connect: () => connectClient(flags), wide: values.wide });
      console.log(await listRuns(await connectClient(flags), { wide: values.wide }));
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
      const { formatSetResult } = await import('./sweep.js');
      const outcome = await setHot(await connectClient(flags), needId(), rest.slice(1));
      console.log(outcome.applied ? formatSetResult(rest[0], outcome) : formatRecordedSet(rest[0], outcome));
      return 0;
    }
    case 'report':
      return (await import('../report/cli.js')).reportCommand(rest, { out: values.out, serve: values.serve, port: values.port, rolloutIterations: values['rollout-iterations'], trace: values.trace }, async (id) =>
        logDirOf(await connectClient(flags), id),
      );
    default:
      console.error(`unknown command "${command}"\n\n${await usage()}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  async (code) => {
    await flushTracing(); // spans of this command still buffered (none unless tracing is on)
    process.exit(code);
  },
  async (err: unknown) => {
    await flushTracing();
    const e = err as Error;
    console.error(`error: ${e.message}`);
    if (process.env.COOKBOOK_DEBUG) console.error(e.stack);
    process.exit(e instanceof ConfigError || e.name === 'ConfigError' ? 2 : 1);
  },
);

export { temporalAddress };
