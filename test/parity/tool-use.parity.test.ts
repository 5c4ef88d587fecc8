// The tool-use library and the SandboxFusion client beside the reference's (tinker-cookbook 0.6.1,
// run at test time): the specs its @tool declares for the same signatures, the tool messages
// handle_tool_call answers, and its SandboxFusionClient against the local sandbox's run_code server,
// answering as our client does.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LocalSandbox } from '../../src/cookbook/sandbox/local.js';
import { SandboxFusionClient } from '../../src/cookbook/sandbox/sandboxfusion.js';
import { startSandboxServer, type SandboxServer } from '../../src/cookbook/sandbox/server.js';
import { handleToolCall, simpleToolResult, tool, type Tool } from '../../src/cookbook/tool-use/index.js';
import { ensureReferenceEnv } from '../../scripts/lib/reference-env.mjs';
import { runPythonScript } from './reference.js';

const search = tool({
  name: 'search',
  description: 'Search for information.',
  parameters: z.object({
    query: z.string().describe('Search query'),
    max_results: z.int().default(5).describe('How many'),
    mode: z.enum(['a', 'b']).default('a'),
    tags: z.array(z.string()).nullable().default(null),
  }),
  run: (a) => simpleToolResult(`${a.query}:${a.max_results}:${a.mode}`),
});
const runPython = tool({
  name: 'run_python',
  description: 'Run Python code and return its output.',
  parameters: z.object({ code: z.string().describe('Python source to run'), timeout_s: z.number().default(2.5), verbose: z.boolean().default(false) }),
  run: () => simpleToolResult('ran'),
});
const boom = tool({ name: 'boom', description: 'Always fails.', parameters: z.object({}), run: () => { throw new Error('disk on fire'); } });
const TOOLS = new Map<string, Tool>([search, runPython, boom].map((t) => [t.name, t]));
const call = (name: string, args: string, id: string | null = 'c1') => ({ type: 'function' as const, id, function: { name, arguments: args } });
const CALLS = [call('search', '{"query": "cats"}'), call('search', '{"query": "cats", "max_results": 2, "mode": "b"}'), call('nope', '{}', null), call('search', '{bad'), call('boom', '{}')];

const sandboxAvailable = await new LocalSandbox().available().then(() => true, () => false);
let server: SandboxServer | undefined;
let reference: {
  specs: unknown[];
  results: Array<{ messages: Array<Record<string, string>>; metadata: Record<string, string>; should_stop: boolean }>;
  sandbox?: Array<[boolean, Record<string, unknown>]>;
};

beforeAll(async () => {
  const { python } = await ensureReferenceEnv({ log: () => {} });
  if (sandboxAvailable) server = await startSandboxServer();
  // Async: the server answering the reference's client runs in this process.
  const child = await runPythonScript(python, [join(import.meta.dirname, 'tool_use_cases.py'), ...(server ? [server.url] : [])], { env: { ...process.env, HF_HUB_OFFLINE: '1' } });
  expect(child.status, child.stderr).toBe(0);
  reference = JSON.parse(child.stdout);
}, 120_000);
afterAll(async () => {
  await server?.close();
});

describe('tool use beside the reference', () => {
  it('@tool specs: the same JSON, key order included', () => {
    expect([search, runPython, boom].map((t) => JSON.stringify(t.toSpec()))).toEqual(reference.specs.map((s) => JSON.stringify(s)));
  });

  it('handle_tool_call: the same messages for a run, an unknown tool, arguments that are not JSON (Python json\'s wording) and a throwing tool', async () => {
    const ours = await Promise.all(CALLS.map((c) => handleToolCall(TOOLS, c)));
    for (const i of [0, 1, 2, 3, 4]) {
      expect(ours[i].messages).toEqual(reference.results[i].messages);
      expect(ours[i].metadata).toEqual(reference.results[i].metadata);
    }
  });
});

describe.skipIf(!sandboxAvailable)('SandboxFusionClient beside the reference, against the local sandbox server', () => {
  it('the reference client and ours get the same verdicts and outputs', async () => {
    const client = new SandboxFusionClient({ url: server!.url, maxConcurrency: 2 });
    const ours = [
      await client.run("print(open('in.txt').read()[::-1])", { 'in.txt': 'olleh' }, 5),
      await client.run("import sys; print('partial'); sys.exit(4)", {}, 5),
      await client.run('import time; time.sleep(30)', {}, 1),
    ];
    const strip = ([ok, r]: [boolean, Record<string, unknown>]) => {
      const run = r.run_result as Record<string, unknown>;
      return [ok, r.status, r.message, run.status, run.return_code, run.stdout];
    };
    expect(ours.map((r) => strip(r as [boolean, Record<string, unknown>]))).toEqual(reference.sandbox!.map(strip));
    expect(ours.map((r) => r[0])).toEqual([true, false, false]);
  });
});
