// One tau2_bench conversation (the reference's Tau2MessageEnv and _Tau2BenchEnvFactory): the
// simulated customer opens; each agent turn either calls tools — answered by the episode's own
// backend over the db, and the agent goes on — or speaks to the customer, who replies (the eval's
// judge model plays the customer). It ends when the agent says goodbye (or AGENT_STOP), the
// customer says USER_STOP, or after max_turns agent turns; the calls made are graded by action
// matching. Durability: each customer reply is recorded at (example, sample, turn) through `once`
// and read back when the episode is replayed; the agent's turns are seeded by their position, and
// the backend's answers are a pure function of the calls, so a replayed episode is the same one.
import type { Content, Message, ToolSpec } from '../../renderers/types.js';
import { getTextContent } from '../../renderers/content.js';
import type { Once } from '../../rl/side-effects.js';
import { STOP_METRIC_PREFIX, StopReason } from '../../rl/types.js';
import { ServiceUnavailableError } from '../../errors.js';
import { pyJsonDumps } from '../../pyjson.js';
import type { Judge } from '../judge.js';
import { sha256 } from './code-exec.js';
import { pyStrOf, Tau2Backend, type Tau2Call } from './tau2-backend.js';
import { TAU2_DOMAIN, type Tau2Action, type Tau2Task } from './tau2-data.js';

/** Python's s[:n] by code point. */
const pyHead = (s: string, n: number) => [...s].slice(0, n).join('');

/** The reference's format_content_as_string: thinking as <think>…</think>, parts joined by newlines. */
export function formatContentAsString(content: Content | undefined): string {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'thinking' ? `<think>${p.thinking}</think>` : p.type === 'text' ? p.text : p.type === 'image' ? `<image>${String(p.image)}</image>` : '')).join('\n');
}

/** The customer's prompt (the reference's _simulate_user): the opening, or the next reply given the agent-side history. */
export function userSimulatorPrompt(scenario: Record<string, unknown>, history: readonly Message[], opening: boolean): Message[] {
  const scenarioText = pyHead(pyJsonDumps(scenario, { indent: 2 }), 3000);
  if (opening) {
    return [
      { role: 'system', content: 'You are simulating a customer calling for support. Follow the scenario below exactly. Stay in character. State your problem or request naturally as a customer would.' },
      { role: 'user', content: `Scenario:\n${scenarioText}\n\nGenerate your opening message as the customer.` },
    ];
  }
  const prompt: Message[] = [
    {
      role: 'system',
      content:
        'You are simulating a customer in a support conversation. ' +
        `Follow this scenario:\n${scenarioText}\n\n` +
        'Respond naturally as the customer. If the agent has resolved your issue, say goodbye and end with USER_STOP. ' +
        "If the agent asks for information, provide it from your scenario. If you don't have the information, say you don't know.",
    },
  ];
  // The agent's turns are what the customer hears (as the user); the customer's own are its (as the assistant).
  for (const msg of history.slice(-10)) {
    const content = pyHead(formatContentAsString(msg.content), 500);
    if (msg.role === 'assistant') prompt.push({ role: 'user', content });
    else if (msg.role === 'user' && !content.startsWith('[Tool')) prompt.push({ role: 'assistant', content });
  }
  prompt.push({ role: 'user', content: 'Continue as the customer. What do you say next?' });
  return prompt;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const pyGet = (o: Record<string, unknown>, k: string, dflt: unknown) => (Object.hasOwn(o, k) ? o[k] : dflt);

/** The reference's _check_actions: each expected action matched by a distinct call (name and non-null arguments, as lower-cased str()); order and extra calls free. */
export function checkActions(predicted: readonly Tau2Call[], expected: readonly Tau2Action[]): { score: number; metrics: Record<string, number> } {
  if (expected.length === 0) return { score: 1, metrics: { actions_matched: 0, actions_expected: 0 } };
  const consumed = new Set<number>();
  let matched = 0;
  for (const exp of expected) {
    const expName = pyStrOf(pyGet(exp, 'name', pyGet(exp, 'action', ''))).toLowerCase();
    const expArgs = pyGet(exp, 'arguments', pyGet(exp, 'parameters', {}));
    for (const [i, pred] of predicted.entries()) {
      if (consumed.has(i) || pred.name.toLowerCase() !== expName) continue;
      const predArgs = pred.arguments;
      const argsMatch =
        isObject(expArgs) && isObject(predArgs)
          ? Object.entries(expArgs).every(([k, v]) => v === null || pyStrOf(pyGet(predArgs, k, '')).toLowerCase() === pyStrOf(v).toLowerCase())
          : true;
      if (argsMatch) {
        matched += 1;
        consumed.add(i);
        break;
      }
    }
  }
  return { score: matched / expected.length, metrics: { actions_matched: matched, actions_expected: expected.length, actions_predicted: predicted.length } };
}

/** The agent ends the conversation: AGENT_STOP / CONVERSATION_COMPLETE, or a closing "goodbye." / "goodbye!". */
export function isAgentDone(text: string): boolean {
  const lower = text.toLowerCase().trim();
  return lower.includes('agent_stop') || lower.includes('conversation_complete') || lower.endsWith('goodbye.') || lower.endsWith('goodbye!');
}

export type Tau2StopReason = 'agent_done' | 'user_stop' | 'max_turns' | 'max_tokens' | 'unknown_tool';

export interface Tau2Outcome {
  /** The action score (the episode's reward). */
  score: number;
  /** The last step's metrics, as the reference's _finalize reports them. */
  metrics: Record<string, number>;
  turns: number;
  stopReason: Tau2StopReason;
  /** A tool the agent called that the domain lacks (the reference's episode fails there). */
  error: string | null;
  history: Message[];
  calls: Tau2Call[];
}

export interface Tau2EpisodeDeps {
  /**
   * The agent: the next assistant message (tool calls parsed) for a conversation; null when the
   * turn hit max_tokens before its stop sequence (the reference's message env ends the episode
   * there with reward 0).
   */
  agent(messages: Message[]): Promise<Message | null>;
  /** The agent's renderer declares the domain's tools in the system prompt. */
  prefixWithTools(tools: ToolSpec[], systemPrompt: string): Message[];
  /** The customer. */
  user: Judge;
  /** This episode's record of customer replies. */
  once: Once;
  maxTurns: number;
}

/** A customer reply, recorded at its turn (0 the opening) of the sample. */
async function customerSays(deps: Tau2EpisodeDeps, task: Tau2Task, turn: number, history: readonly Message[]): Promise<string> {
  const prompt = userSimulatorPrompt(task.userScenario, history, turn === 0);
  const request = `${deps.user.name} sha256:${sha256(JSON.stringify(prompt))}`;
  return deps.once<string>(['user', 0, turn], request, () =>
    deps.user.ask(prompt).catch((err: Error) => {
      throw new ServiceUnavailableError(`tau2_bench user simulator (${deps.user.name}) failed on ${task.taskName} turn ${turn}: ${err.message}`);
    }),
  );
}

/** The arguments of a tool call as the reference reads them: a JSON string parsed (unparseable: {}). */
function callArguments(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return {};
  }
}

export async function runTau2Episode(task: Tau2Task, deps: Tau2EpisodeDeps): Promise<Tau2Outcome> {
  const backend = new Tau2Backend(task.db, task.tools);
  const specs: ToolSpec[] = task.tools.map((t) => ({ name: t.function.name, description: String(t.function.description ?? ''), parameters: t.function.parameters }));
  const toolNames = new Set(specs.map((s) => s.name));
  const history: Message[] = [...deps.prefixWithTools(specs, task.systemPrompt), { role: 'user', content: await customerSays(deps, task, 0, []) }];
  let turn = 0;
  const finish = (stopReason: Tau2StopReason, error: string | null = null): Tau2Outcome => {
    const { score, metrics } = error === null ? checkActions(backend.callLog, task.expectedActions) : { score: 0, metrics: {} };
    return { score, metrics: error === null ? { correct: score >= 1 ? 1 : 0, action_score: score, ...metrics, num_turns: turn } : {}, turns: turn, stopReason, error, history, calls: backend.callLog };
  };
  for (;;) {
    const message = await deps.agent(history);
    if (message === null) {
      turn += 1;
      return { score: 0, metrics: { max_tokens_reached: 1, [`${STOP_METRIC_PREFIX}${StopReason.MAX_TOKENS}`]: 1 }, turns: turn, stopReason: 'max_tokens', error: null, history, calls: backend.callLog };
    }
    turn += 1;
    history.push(message);
    const calls = message.tool_calls ?? [];
    if (calls.length > 0) {
      for (const call of calls) {
        const name = call.function.name;
        if (!toolNames.has(name)) return finish('unknown_tool', `the agent called ${JSON.stringify(name)}, which the ${TAU2_DOMAIN} domain has no tool for (${task.taskName})`);
        const content = backend.execute(name, callArguments(call.function.arguments));
        history.push({ role: 'tool', content, tool_call_id: call.id ?? '', name });
      }
      if (turn >= deps.maxTurns) return finish('max_turns');
      continue;
    }
    if (isAgentDone(getTextContent(message))) return finish('agent_done');
    if (turn >= deps.maxTurns) return finish('max_turns');
    const reply = await customerSays(deps, task, turn, history);
    history.push({ role: 'user', content: reply });
    if (reply.toLowerCase().includes('user_stop')) return finish('user_stop');
  }
}
