// The judge of a judged benchmark (Arena-Hard): its config under the eval config's `judge`, and the
// runtime judge it builds — a model on a Tinker endpoint (the engine here: a base model, a
// tinker:// checkpoint, or the evaluated model itself), sampled through the project's message
// completer, or a model behind an OpenAI-compatible /chat/completions endpoint. The reference's
// judge completer samples at temperature 0 with up to 4096 tokens.
import { z } from 'zod';
import type { SamplingSession } from '../../backends/types.js';
import { ConfigurationError } from '../errors.js';
import { getTextContent } from '../renderers/content.js';
import { rendererForModel } from '../renderers/for-model.js';
import type { Message, Renderer } from '../renderers/types.js';
import { tinkerMessageCompleter } from '../rl/completers.js';

export const JudgeConfigSchema = z
  .strictObject({
    /** `tinker`: a model on a Tinker endpoint; `openai`: an OpenAI-compatible chat completions endpoint. */
    api: z.enum(['tinker', 'openai']).default('tinker'),
    /** tinker: a base model or a tinker:// checkpoint, null = the evaluated model judges itself; openai: the request's `model`. */
    model: z.string().min(1).nullable().default(null),
    /** tinker: null = the eval's base_url; openai: the API's base URL (…/v1). */
    base_url: z.string().min(1).nullable().default(null),
    /** openai: the environment variable that holds the API key (sent as a Bearer token); null = none. */
    api_key_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name').nullable().default(null),
    /** tinker: the judge's renderer; null = its model's recommended one. */
    renderer_name: z.string().min(1).nullable().default(null),
    max_tokens: z.int().positive().default(4096),
    temperature: z.number().nonnegative().default(0),
  })
  .superRefine((j, ctx) => {
    if (j.api === 'openai') {
      if (j.base_url === null) ctx.addIssue({ code: 'custom', path: ['base_url'], message: 'an OpenAI-compatible judge needs its base_url (e.g. https://api.openai.com/v1)' });
      if (j.model === null) ctx.addIssue({ code: 'custom', path: ['model'], message: 'an OpenAI-compatible judge needs its model name' });
      if (j.renderer_name !== null) ctx.addIssue({ code: 'custom', path: ['renderer_name'], message: 'an OpenAI-compatible endpoint renders its own prompts; renderer_name is for a tinker judge' });
    } else if (j.api_key_env !== null) {
      ctx.addIssue({ code: 'custom', path: ['api_key_env'], message: 'a tinker judge uses the worker’s Tinker key; api_key_env is for an OpenAI-compatible judge' });
    }
  });
export type JudgeConfig = z.output<typeof JudgeConfigSchema>;

/** The judge of one graded sample. */
export interface Judge {
  /** Who judges, as the record of its verdict names it (a different judge asks again). */
  readonly name: string;
  /** The judge's reply text (thinking stripped) to a conversation. */
  ask(messages: Message[]): Promise<string>;
}

/** A sample's judge; `seed` is fixed by the sample's position, so a re-asked judge samples the same. */
export type JudgeFor = (seed: number) => Judge;

/** A Tinker-side judge: `session` sampled with `renderer`, one completion per question. */
export function tinkerJudge(name: string, session: SamplingSession, renderer: Renderer, cfg: Pick<JudgeConfig, 'max_tokens' | 'temperature'>): JudgeFor {
  return (seed) => ({
    name,
    async ask(messages) {
      const complete = tinkerMessageCompleter(session, renderer, { maxTokens: cfg.max_tokens, temperature: cfg.temperature, seedFor: () => seed });
      return getTextContent(await complete(messages));
    },
  });
}

export interface TinkerJudgeSource {
  /** Opens a session on sampler weights or a base model (the eval's or the judge's backend). */
  openSession(source: { modelPath: string } | { baseModel: string }): Promise<SamplingSession>;
  /** A tinker:// checkpoint's base model (for its renderer). */
  baseModelOf(modelPath: string): Promise<string>;
  /** The evaluated model, which judges when judge.model is null. */
  evaluated: { baseModel: string; modelPath: string | null; rendererName: string | null; tokenizerPath: string | null };
}

/** Opens the judge a judge config names on a Tinker endpoint. */
export async function openTinkerJudge(cfg: JudgeConfig, src: TinkerJudgeSource): Promise<JudgeFor> {
  const self = cfg.model === null;
  const modelPath = self ? src.evaluated.modelPath : cfg.model!.startsWith('tinker://') ? cfg.model : null;
  const baseModel = self ? src.evaluated.baseModel : modelPath ? await src.baseModelOf(modelPath) : cfg.model!;
  const { renderer } = await rendererForModel({
    model_name: baseModel,
    renderer_name: cfg.renderer_name ?? (self ? src.evaluated.rendererName : null),
    tokenizer_path: self ? src.evaluated.tokenizerPath : null,
  });
  const session = await src.openSession(modelPath ? { modelPath } : { baseModel });
  return tinkerJudge(`tinker ${modelPath ?? baseModel}`, session, renderer, cfg);
}

interface ChatCompletionReply {
  choices?: Array<{ message?: { content?: unknown } }>;
}

/** A judge behind an OpenAI-compatible endpoint: POST {base_url}/chat/completions. */
export function openAIJudge(cfg: JudgeConfig, env: NodeJS.ProcessEnv = process.env, fetchFn: typeof fetch = fetch): JudgeFor {
  if (cfg.base_url === null || cfg.model === null) throw new ConfigurationError('judge: an OpenAI-compatible judge needs base_url and model');
  const url = `${cfg.base_url.replace(/\/+$/, '')}/chat/completions`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (cfg.api_key_env !== null) {
    const key = env[cfg.api_key_env];
    if (!key) throw new ConfigurationError(`judge.api_key_env: the environment variable ${cfg.api_key_env} is not set (the worker's environment)`);
    headers.authorization = `Bearer ${key}`;
  }
  const model = cfg.model;
  return (seed) => ({
    name: `openai ${url} ${model}`,
    async ask(messages) {
      const body = { model, messages: messages.map((m) => ({ role: m.role, content: getTextContent(m) })), max_tokens: cfg.max_tokens, temperature: cfg.temperature, seed };
      const res = await fetchFn(url, { method: 'POST', headers, body: JSON.stringify(body) });
      const text = await res.text();
      if (!res.ok) throw new Error(`judge ${url}: HTTP ${res.status}: ${text.slice(0, 500)}`);
      const content = (JSON.parse(text) as ChatCompletionReply).choices?.[0]?.message?.content;
      if (typeof content !== 'string') throw new Error(`judge ${url}: the reply has no choices[0].message.content: ${text.slice(0, 500)}`);
      return content;
    },
  });
}
