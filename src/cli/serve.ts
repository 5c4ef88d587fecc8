// `cookbook serve` and `cookbook chat`: use a checkpoint (or a base model) through the OpenAI API or
// in the terminal. They take their own flags (parsed here, not in main.ts): neither talks to
// Temporal, and `--api-key` here is the key clients of the served API must send.
import { parseArgs } from 'node:util';
import { ConfigError } from '../cookbook/config/overrides.js';
import { bareCaptureFlag } from '../capture/target.js';
import { applyWireFlag, DEFAULT_ENGINE_URL } from './connect.js';

export const SERVE_USAGE = `  serve <tinker path | base model>    the OpenAI and Anthropic APIs on 127.0.0.1 (/v1/chat/completions, /v1/completions,
        [--port N] [--api-key K]            /v1/messages, /v1/models; streaming); --port 0/absent: a free port, printed;
        [--renderer NAME]                   --api-key (COOKBOOK_SERVE_API_KEY): clients must send it (bearer or x-api-key);
        [--tokenizer-path DIR]              --max-tokens: the cap when a request sets none (4096); see docs/serve.md
        [--max-tokens N]                    --capture [DIR|URL]: every exchange kept in a capture store (DIR's daemon,
        [--capture [DIR|URL]]               default ~/.cache/durable-cookbook/capture, or the one at URL), rows with
        [--capture-run NAME]                run_id NAME (default serve); see docs/capture.md
  chat <tinker path | base model>     talk to the model in the terminal (multi-turn; reasoning shown apart); piped
        [--system TEXT] [--max-tokens N]    stdin: each line is the next turn, answers on stdout, reasoning on stderr
        [--temperature T] [--seed S] [--renderer NAME] [--tokenizer-path DIR]
  serve and chat also take [--engine-url U] (TINKER_BASE_URL), [--wire json|proto] (TINKER_WIRE), and
        [--run DIR]: the run that saved the checkpoint, whose recorded base model, renderer and tokenizer
                                            are used when the server's weights_info refuses the path (default: ./runs/*)`;

const OPTIONS = {
  port: { type: 'string' },
  'api-key': { type: 'string' },
  'engine-url': { type: 'string' },
  wire: { type: 'string' },
  run: { type: 'string', multiple: true },
  renderer: { type: 'string' },
  'tokenizer-path': { type: 'string' },
  'max-tokens': { type: 'string' },
  capture: { type: 'string' },
  'capture-run': { type: 'string' },
  system: { type: 'string' },
  temperature: { type: 'string' },
  seed: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

function number(name: string, value: string | undefined, check: (n: number) => boolean, what: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || !check(n)) throw new ConfigError(`--${name}: expected ${what}, got "${value}"`);
  return n;
}

export async function serveCommand(command: 'serve' | 'chat', argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: bareCaptureFlag(argv), allowPositionals: true, options: OPTIONS });
  if (values.help) {
    console.log(SERVE_USAGE);
    return 0;
  }
  const [source, ...extra] = positionals;
  if (!source || extra.length) throw new ConfigError(`${command}: usage \`cookbook ${command} <tinker://…/sampler_weights/… path | base model> [options]\``);
  // Every flag is checked before the backend is contacted.
  const maxTokens = number('max-tokens', values['max-tokens'], (n) => Number.isInteger(n) && n > 0, 'a positive integer');
  const temperature = number('temperature', values.temperature, (n) => n >= 0 && n <= 2, 'a number in [0, 2]');
  const seed = number('seed', values.seed, Number.isSafeInteger, 'an integer');
  const port = number('port', values.port, (n) => Number.isInteger(n) && n >= 0 && n < 65536, 'a port number') ?? 0;
  applyWireFlag(values.wire);
  if (command === 'chat' && (values.capture !== undefined || values['capture-run'] !== undefined)) throw new ConfigError('--capture: only `cookbook serve` records exchanges');
  const baseUrl = values['engine-url'] ?? process.env.TINKER_BASE_URL ?? DEFAULT_ENGINE_URL;
  const [{ openServedModel }, { DEFAULT_MAX_TOKENS }] = await Promise.all([import('../serve/served-model.js'), import('../serve/sampling.js')]);
  const model = await openServedModel({ source, baseUrl, rendererName: values.renderer, tokenizerPath: values['tokenizer-path'], runDirs: values.run });
  try {
    if (command === 'chat') {
      const { runChat } = await import('../serve/chat-repl.js');
      const failures = await runChat({
        model,
        system: values.system,
        maxTokens: maxTokens ?? 1024,
        temperature,
        seed,
        input: process.stdin,
        output: process.stdout,
        errors: process.stderr,
        interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
      });
      return failures ? 1 : 0;
    }
    const { startServer } = await import('../serve/server.js');
    const capture = values.capture !== undefined ? await openServeCapture(model, values.capture, values['capture-run']) : undefined;
    const server = await startServer({
      model,
      port,
      apiKey: values['api-key'] ?? process.env.COOKBOOK_SERVE_API_KEY ?? undefined,
      defaultMaxTokens: maxTokens ?? DEFAULT_MAX_TOKENS,
      log: (line) => console.error(line),
      onExchange: capture?.record,
    });
    console.log(`serving ${model.id} (base model ${model.baseModel}, renderer ${model.renderer.name}) from ${model.baseUrl}`);
    console.log(`OpenAI base URL ${server.url}`);
    console.log(`Anthropic base URL ${server.url.replace(/\/v1$/, '')}`);
    if (capture) console.log(`capturing every exchange into ${capture.storeUrl} (run_id ${capture.runId})`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.close();
    if (capture) console.error(await capture.close());
    return 0;
  } finally {
    await model.close();
  }
}

async function openServeCapture(model: import('../serve/served-model.js').ServedModel, target: string, runId: string | undefined) {
  const [{ captureStoreUrl }, { CaptureExporter }, { StoreHttpSink }, { ServeCapture }] = await Promise.all([
    import('../capture/target.js'),
    import('../capture/exporter.js'),
    import('../capture/http-sink.js'),
    import('../serve/capture.js'),
  ]);
  const storeUrl = await captureStoreUrl(target);
  const log = (line: string) => console.error(line);
  const capture = new ServeCapture(new CaptureExporter(new StoreHttpSink(storeUrl), { log }), model, { runId, log });
  return Object.assign(capture, { storeUrl });
}
