// The agentic `tau2_bench` suite (reference 0.6.1 eval/benchmarks/_tau2_bench.py, experimental):
// the airline domain of sierra-research/tau2-bench — its tasks, policy, db and tool definitions —
// each task one conversation between the evaluated agent, a simulated customer (the eval's judge
// model) and a heuristic tool backend over the db (tau2-backend.ts), graded by action matching
// (tau2-episode.ts). This module reads the data in the reference's cache layout
// (<folder>/airline/{tasks.json, policy.md, db.json, tools.json}) into tasks.
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataFormatError } from '../../errors.js';
import { exampleId } from './gsm8k.js';
import { pyRepr } from './py-text.js';

export const TAU2_BENCH_SUITE = {
  name: 'tau2_bench',
  description: 'tau2-Bench airline: customer-service conversations with a simulated customer (the judge model) and tools over a db; action matching',
  data: 'data/eval/tau2_bench (airline/tasks.json, policy.md, db.json, tools.json), ~/.cache/tau2_bench when it holds them, or a folder in that layout',
} as const;

/** The reference's MAX_TURNS: agent turns before the episode is cut. */
export const TAU2_MAX_TURNS = 30;
export const TAU2_DOMAIN = 'airline';
const FILES = ['tasks.json', 'policy.md', 'db.json', 'tools.json'] as const;

/** A tool in OpenAI function-calling format, as the reference's conversion writes it. */
export interface OpenAITool {
  type: 'function';
  function: { name: string; description: unknown; parameters: { type: 'object'; properties: Record<string, Record<string, unknown>>; required: string[] } };
}

export interface Tau2Action {
  name?: unknown;
  action?: unknown;
  arguments?: unknown;
  parameters?: unknown;
  [k: string]: unknown;
}

export interface Tau2Task {
  /** The example id: tau2_bench_<id> (a hash of the task without one). */
  taskName: string;
  userScenario: Record<string, unknown>;
  expectedActions: Tau2Action[];
  systemPrompt: string;
  tools: OpenAITool[];
  /** The db every episode starts from (each episode works on its own copy). */
  db: Record<string, unknown>;
}

export const isTau2Task = (t: object): t is Tau2Task => 'expectedActions' in t;

/** Python truthiness of a JSON value. */
const truthy = (v: unknown) => !(v === undefined || v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && Object.keys(v).length === 0));

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** tau2's flat parameter lists → OpenAI's `{type: object, properties, required}` (the reference's _convert_tau2_tools_to_openai). */
export function convertTau2Tools(tau2Tools: unknown[], at = 'tools'): OpenAITool[] {
  return tau2Tools.map((tool, i) => {
    if (!isObject(tool) || typeof tool.name !== 'string') throw new DataFormatError(`${at}[${i}]: a tool needs a string "name"`);
    const properties: Record<string, Record<string, unknown>> = {};
    const required: string[] = [];
    const params = tool.parameters ?? [];
    if (!Array.isArray(params)) throw new DataFormatError(`${at}[${i}].parameters must be a list of {name, type, required, description}`);
    params.forEach((p, j) => {
      if (!isObject(p) || typeof p.name !== 'string') throw new DataFormatError(`${at}[${i}].parameters[${j}]: a parameter needs a string "name"`);
      const prop: Record<string, unknown> = { type: 'type' in p ? p.type : 'string' };
      if (truthy(p.description)) prop.description = p.description;
      if (truthy(p.enum)) prop.enum = p.enum;
      properties[p.name] = prop;
      if (truthy(p.required)) required.push(p.name);
    });
    return { type: 'function', function: { name: tool.name, description: 'description' in tool ? tool.description : '', parameters: { type: 'object', properties, required } } };
  });
}

/** The reference's download cache, read when it holds the domain's files. */
export const tau2CacheDir = () => path.join(os.homedir(), '.cache', 'tau2_bench');

const hasDomain = (dir: string) => FILES.every((f) => existsSync(path.join(dir, TAU2_DOMAIN, f)));

/** The folder read: --data's, else the reference's cache when complete, else the shipped sample. */
export function tau2Source(dataPath: string | null, shipped: string): string {
  if (dataPath !== null) return dataPath;
  return hasDomain(tau2CacheDir()) ? tau2CacheDir() : shipped;
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new DataFormatError(`${file}: missing (tau2_bench reads <folder>/${TAU2_DOMAIN}/{${FILES.join(', ')}})`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new DataFormatError(`${file}: not JSON (${(err as Error).message})`);
  }
}

/** Python's s[:n] by code point. */
const pyHead = (s: string, n: number) => [...s].slice(0, n).join('');

/** The domain's tasks, the first `limit`, as the reference's make_envs builds them. */
export function loadTau2Tasks(source: string, limit: number | null, systemPrompt: string | null): Tau2Task[] {
  const dir = path.join(source, TAU2_DOMAIN);
  const tasksFile = path.join(dir, 'tasks.json');
  const tasks = readJson(tasksFile);
  if (!Array.isArray(tasks)) throw new DataFormatError(`${tasksFile}: a list of tasks expected`);
  const policyFile = path.join(dir, 'policy.md');
  if (!existsSync(policyFile)) throw new DataFormatError(`${policyFile}: missing`);
  const policy = readFileSync(policyFile, 'utf8');
  const dbFile = path.join(dir, 'db.json');
  const db = readJson(dbFile);
  if (!isObject(db)) throw new DataFormatError(`${dbFile}: an object of collections expected`);
  const toolsFile = path.join(dir, 'tools.json');
  const allTools = readJson(toolsFile);
  const domainTools = isObject(allTools) && isObject(allTools[TAU2_DOMAIN]) ? (allTools[TAU2_DOMAIN].tools ?? []) : [];
  if (!Array.isArray(domainTools)) throw new DataFormatError(`${toolsFile}: ${TAU2_DOMAIN}.tools must be a list`);
  const tools = convertTau2Tools(domainTools, `${toolsFile}: ${TAU2_DOMAIN}.tools`);
  // The reference's `config.system_prompt or policy[:8000]`: an empty prompt takes the policy too.
  const prompt = systemPrompt ? systemPrompt : pyHead(policy, 8000);
  const picked = limit === null ? tasks : tasks.slice(0, limit);
  return picked.map((task, i) => {
    const at = `${tasksFile}[${i}]`;
    if (!isObject(task)) throw new DataFormatError(`${at}: a task must be an object`);
    let scenario = task.user_scenario ?? {};
    if (typeof scenario === 'string') scenario = { task_instructions: scenario };
    if (!isObject(scenario)) throw new DataFormatError(`${at}.user_scenario must be an object or a string`);
    const criteria = task.evaluation_criteria ?? {};
    const actions = isObject(criteria) ? (criteria.actions ?? []) : [];
    if (!Array.isArray(actions) || !actions.every(isObject)) throw new DataFormatError(`${at}.evaluation_criteria.actions must be a list of {name, arguments}`);
    const id = task.id;
    return {
      taskName: id !== undefined && id !== null ? `tau2_bench_${typeof id === 'string' ? id : pyRepr(id)}` : exampleId('tau2_bench', pyRepr(task)),
      userScenario: scenario,
      expectedActions: actions as Tau2Action[],
      systemPrompt: prompt,
      tools,
      db,
    };
  });
}

/** The reference's user-simulator completer (max_tokens 2048, temperature 0.7): the judge config when the eval sets none. */
export const TAU2_USER_SIMULATOR = { max_tokens: 2048, temperature: 0.7 } as const;
