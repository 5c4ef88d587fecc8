// A real agent harness on `cookbook serve`'s Anthropic API: opencode (MIT, npm `opencode-ai`,
// installed into the cache by scripts/lib/opencode-env.mjs, not a dependency of the repo) run
// headless (`opencode run --format json`) with a custom provider (@ai-sdk/anthropic, which
// opencode bundles) whose base URL is the server's, its network fetches off (models.dev, updates,
// LSP downloads, sharing, plugins) and its home in a temp folder. Fuller tier.
//
// On the real engine the random tiny model answers opencode's real prompt (its system prompt and
// ten tools, ~7k tokens, rendered in Qwen3's format) with text, and opencode ends the session. On
// a server in this process over a scripted sampler (test/support/scripted-agent.ts) the model
// calls opencode's `write` tool in Qwen3's format: opencode gets the tool_use block, writes the
// file, sends the tool_result back, and takes the model's closing text.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOpencode } from '../../scripts/lib/opencode-env.mjs';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';
import type { ServedExchange } from '../../src/serve/exchange.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { scriptedModel, sequenceOf } from '../support/scripted-agent.js';
import { serveBackend, startServe, stopServe } from '../support/serve.js';

const MODEL = 'tiny-qwen3';
const KEY = 'sk-ant-opencode';

let opencode: string;
let tokenizer: Tokenizer;
let scratch: string;
let backendHandle: Awaited<ReturnType<typeof serveBackend>> | undefined;
let served: ChildProcess | undefined;
let scripted: RunningServer | undefined;

interface OpencodeRun {
  code: number | null;
  /** opencode's JSON events, one per line of stdout. */
  events: Array<{ type: string; part?: Record<string, any> }>;
  stderr: string;
}

/** `opencode run <task>` in `dir` against an Anthropic-API provider at `baseURL` serving `model`. */
function runOpencode(baseURL: string, model: string, task: string, dir: string): Promise<OpencodeRun> {
  const home = join(scratch, `home-${Math.random().toString(36).slice(2)}`);
  mkdirSync(home);
  const config = {
    $schema: 'https://opencode.ai/config.json',
    autoupdate: false,
    share: 'disabled',
    model: `cookbook/${model}`,
    small_model: `cookbook/${model}`,
    permission: { edit: 'allow', bash: 'deny', webfetch: 'deny' },
    provider: {
      cookbook: {
        npm: '@ai-sdk/anthropic',
        name: 'cookbook serve',
        options: { baseURL, apiKey: KEY },
        models: { [model]: { name: model, limit: { context: 8192, output: 48 } } },
      },
    },
  };
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    PWD: dir,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    OPENCODE_DISABLE_MODELS_FETCH: 'true',
    OPENCODE_DISABLE_AUTOUPDATE: 'true',
    OPENCODE_DISABLE_LSP_DOWNLOAD: 'true',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: 'true',
    OPENCODE_DISABLE_SHARE: 'true',
    OPENCODE_DISABLE_CLAUDE_CODE: 'true',
  };
  const child = spawn(opencode, ['run', '--format', 'json', '--dir', dir, task], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      const events = out.split('\n').filter((l) => l.trim().startsWith('{')).map((l) => JSON.parse(l));
      // What it did, for the log: each event's type and its text or tool call.
      for (const e of events) process.stderr.write(`[opencode] ${e.type} ${JSON.stringify(e.part?.text ?? e.part?.state ?? e.part?.reason ?? '').slice(0, 300)}\n`);
      resolve({ code, events, stderr: err });
    });
  });
}

beforeAll(async () => {
  opencode = ensureOpencode().bin;
  tokenizer = await getTokenizer(MODEL);
  scratch = mkdtempSync(join(tmpdir(), 'opencode-serve-'));
}, 600_000);

afterAll(async () => {
  await stopServe(served);
  await scripted?.close();
  await backendHandle?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('opencode on cookbook serve (Anthropic Messages API)', () => {
  it('on the real engine: opencode’s whole prompt goes through /v1/messages, the tiny model’s answer ends the session', { timeout: 600_000 }, async () => {
    backendHandle = await serveBackend();
    const started = await startServe(backendHandle.engineUrl, [MODEL, '--api-key', KEY]);
    served = started.child;
    const requests: string[] = [];
    served.stderr!.on('data', (d: Buffer) => requests.push(...d.toString().split('\n').filter((l) => l.startsWith('POST '))));
    const dir = join(scratch, 'engine-task');
    mkdirSync(dir);
    const run = await runOpencode(started.url, MODEL, 'Write hello.txt containing the word hello.', dir);
    expect(run.code, run.stderr).toBe(0);
    const steps = run.events.filter((e) => e.type === 'step_finish');
    expect(steps.length).toBeGreaterThan(0);
    // opencode's own count of the prompt it sent: its system prompt and tool declarations, thousands of tokens.
    expect(steps[0].part!.tokens.input).toBeGreaterThan(4000);
    expect(steps[0].part!.tokens.input).toBeLessThan(8192);
    expect(requests.some((l) => /^POST \/v1\/messages 200 /.test(l))).toBe(true);
    expect(requests.every((l) => / 200 /.test(l))).toBe(true);
  });

  it('with a model that calls a tool (scripted sampler): opencode runs its write tool from the tool_use block and sends the result back', { timeout: 300_000 }, async () => {
    const dir = join(scratch, 'scripted-task');
    mkdirSync(dir);
    const file = join(dir, 'hello.txt');
    const imEnd = tokenizer.tokenToId('<|im_end|>');
    const call = `<think>\nI will write the file.\n</think>\n\n<tool_call>\n${JSON.stringify({ name: 'write', arguments: { filePath: file, content: 'hello\n' } })}\n</tool_call>`;
    const { model } = scriptedModel(tokenizer, (prompt) => {
      // opencode's title request has no tools; the agent's turn has them, and after the write, its result.
      if (!prompt.includes('<tools>')) return sequenceOf(tokenizer, '<think>\n\n</think>\n\nWriting hello', [imEnd]);
      return prompt.includes('<tool_response>') ? sequenceOf(tokenizer, '<think>\n\n</think>\n\nDone: hello.txt holds hello.', [imEnd]) : sequenceOf(tokenizer, call, [imEnd]);
    });
    const exchanges: ServedExchange[] = [];
    scripted = await startServer({ model, defaultMaxTokens: 64, apiKey: KEY, onExchange: (e) => exchanges.push(e) });
    const run = await runOpencode(scripted.url, model.id, 'Write hello.txt containing the word hello.', dir);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('hello\n');
    const tool = run.events.find((e) => e.type === 'tool_use');
    expect(tool?.part).toMatchObject({ tool: 'write', state: { status: 'completed', input: { filePath: file, content: 'hello\n' } } });
    const texts = run.events.filter((e) => e.type === 'text').map((e) => e.part!.text);
    expect(texts).toContain('Done: hello.txt holds hello.');
    // The turn after the call carried opencode's tool_result for it, on the Anthropic API.
    const agentTurns = exchanges.filter((e) => ((e.request as { tools?: unknown[] }).tools ?? []).length > 0);
    const resultTurn = agentTurns.find((e) => JSON.stringify(e.request).includes('"tool_result"'));
    expect(resultTurn?.api).toBe('anthropic.messages');
    expect(resultTurn?.response).toMatchObject({ stop_reason: 'end_turn' });
  });
});
