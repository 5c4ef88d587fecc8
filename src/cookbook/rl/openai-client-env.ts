// Environments written against an OpenAI client (the `verifiers` style): an episode is a function
// that asks the policy through `client.chat.completions.create({messages, tools})` as often as it
// likes and returns the episode's reward. OpenAIClientEnv turns such a function into the token-level
// Env the durable RL loop trains on: each create() call is an observation, rendered with the
// policy's renderer exactly as `cookbook serve` renders a request; the sampled action, parsed by the
// renderer, is the assistant message create() returns — a turn cut at max_tokens too, with
// finish_reason "length", as an OpenAI client would get it, so the episode (not the adapter) decides
// what an unfinished answer is worth. Sampling parameters in the call are the training config's to
// choose, so they are ignored.
import { ConfigurationError } from '../errors.js';
import { loadMessageImages } from '../images/messages.js';
import { conversationFromOpenAI, openAIAssistantMessage, type OpenAIAssistantMessage, type OpenAIChatMessage, type OpenAITool } from '../renderers/openai-format.js';
import { modelInputFromInts } from '../model-input.js';
import type { Message, Renderer } from '../renderers/types.js';
import type { MessageEnv, MessageStepResult } from './message-env.js';
import type { Action, ActionExtra, Env, InitialObservation, Logs, Metrics, StepResult } from './types.js';

export interface PolicyChatRequest {
  messages: OpenAIChatMessage[];
  tools?: OpenAITool[] | null;
  tool_choice?: unknown;
  /** model, temperature, max_tokens, …: accepted and ignored (the RL config samples). */
  [other: string]: unknown;
}

export interface PolicyChatCompletion {
  object: 'chat.completion';
  choices: Array<{ index: number; message: OpenAIAssistantMessage; finish_reason: 'stop' | 'tool_calls' | 'length' }>;
}

/** The part of the OpenAI client an episode uses. */
export interface PolicyClient {
  chat: { completions: { create(request: PolicyChatRequest): Promise<PolicyChatCompletion> } };
}

export interface EpisodeOutcome {
  reward: number;
  metrics?: Metrics;
  logs?: Logs;
}

/** One episode: ask the policy through `client`, grade what it said. Must be deterministic in its inputs. */
export type OpenAIClientEpisode = (client: PolicyClient) => Promise<EpisodeOutcome>;

type EpisodeEvent =
  | { kind: 'ask'; messages: Message[]; answer: (message: OpenAIAssistantMessage, truncated: boolean) => void }
  | ({ kind: 'end' } & EpisodeOutcome)
  | { kind: 'error'; error: unknown };

export class OpenAIClientMessageEnv implements MessageEnv {
  private readonly queue: EpisodeEvent[] = [];
  private waiting: ((e: EpisodeEvent) => void) | undefined;
  private pending: ((message: OpenAIAssistantMessage, truncated: boolean) => void) | undefined;
  private started = false;
  private turn = 0;

  constructor(
    readonly renderer: Renderer,
    readonly episode: OpenAIClientEpisode,
  ) {}

  private emit(e: EpisodeEvent): void {
    const w = this.waiting;
    this.waiting = undefined;
    if (w) w(e);
    else this.queue.push(e);
  }

  private next(): Promise<EpisodeEvent> {
    const e = this.queue.shift();
    return e ? Promise.resolve(e) : new Promise((resolve) => (this.waiting = resolve));
  }

  private readonly client: PolicyClient = {
    chat: {
      completions: {
        create: async (request) => {
          // image_url parts decoded here, as `cookbook serve` decodes a request's, so that the
          // (synchronous) renderer gets images it can render; a bad one fails this call, naming it.
          const messages = await loadMessageImages(conversationFromOpenAI(this.renderer, request.messages, request.tools, request.tool_choice));
          return new Promise((resolve) => {
            const answer = (message: OpenAIAssistantMessage, truncated: boolean) =>
              resolve({ object: 'chat.completion', choices: [{ index: 0, message, finish_reason: truncated ? 'length' : message.tool_calls ? 'tool_calls' : 'stop' }] });
            this.emit({ kind: 'ask', messages, answer });
          });
        },
      },
    },
  };

  private async answerOrEnd(e: EpisodeEvent): Promise<Message[] | EpisodeOutcome> {
    if (e.kind === 'error') throw e.error;
    if (e.kind === 'end') return e;
    this.pending = e.answer;
    return e.messages;
  }

  async initialObservation(): Promise<Message[]> {
    if (this.started) throw new Error('an OpenAIClientMessageEnv runs one episode');
    this.started = true;
    this.episode(this.client).then(
      (outcome) => this.emit({ kind: 'end', ...outcome }),
      (error: unknown) => this.emit({ kind: 'error', error }),
    );
    const first = await this.answerOrEnd(await this.next());
    if (!Array.isArray(first)) throw new ConfigurationError('an OpenAI-client episode ended without asking the policy anything');
    return first;
  }

  /** The policy's answer to the pending create() call (`truncated`: cut at max_tokens). */
  async step(message: Message, truncated = false): Promise<MessageStepResult> {
    const answer = this.pending;
    this.pending = undefined;
    if (!answer) throw new Error('step() with no policy request pending: initialObservation() first');
    const turn = this.turn++;
    // Tool-call ids from the turn and position, not at random: a retried rollout must see the same ones.
    answer(openAIAssistantMessage(message, (i) => `call_${turn}_${i}`), truncated);
    const next = await this.answerOrEnd(await this.next());
    if (Array.isArray(next)) return { reward: 0, episodeDone: false, nextMessages: next };
    return { reward: next.reward, episodeDone: true, nextMessages: [], metrics: next.metrics, logs: next.logs };
  }
}

/** The token-level Env over an OpenAI-client episode. */
export class OpenAIClientEnv implements Env {
  private readonly messages: OpenAIClientMessageEnv;
  private readonly stops: string[] | number[];

  constructor(
    readonly renderer: Renderer,
    episode: OpenAIClientEpisode,
  ) {
    this.messages = new OpenAIClientMessageEnv(renderer, episode);
    this.stops = renderer.getStopSequences();
  }

  async initialObservation(): Promise<InitialObservation> {
    return { ob: this.renderer.buildGenerationPrompt(await this.messages.initialObservation()), stopCondition: this.stops };
  }

  async step(action: Action, opts?: { extra?: ActionExtra }): Promise<StepResult> {
    const truncated = opts?.extra?.stop_reason === 'length';
    // A cut answer lacks the end-of-turn token its parser expects: supply it, as `cookbook serve` does.
    const ended = truncated && typeof this.stops[0] === 'number' ? [...action, this.stops[0]] : action;
    const message = this.renderer.parseResponse(ended).message; // best effort when malformed: the episode judges it
    const r = await this.messages.step(message, truncated);
    const metrics: Metrics = { ...r.metrics, ...(truncated ? { truncated_turns: 1 } : {}) };
    const nextObservation = r.episodeDone ? modelInputFromInts([]) : this.renderer.buildGenerationPrompt(r.nextMessages);
    return { reward: r.reward, episodeDone: r.episodeDone, nextObservation, nextStopCondition: this.stops, metrics, logs: r.logs ?? {} };
  }
}
