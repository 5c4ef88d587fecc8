// Tokenizer folders for renderer parity where the model's own tokenizer cannot be had offline
// (Kimi, GLM, Nemotron, Qwen3.5, …): a shipped tokenizer plus the family's special tokens as added
// tokens. Both the reference (AutoTokenizer) and this project load the same folder, so the renderer
// logic is compared token for token; only the ordinary-text ids differ from the real model's.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { shippedTokenizerDir, type Family } from '../../src/cookbook/tokenizer.js';

export interface AddedToken {
  content: string;
  /** Special tokens are skipped by decode(skip_special_tokens) and kept whole by encode; default true. */
  special?: boolean;
}

export interface AugmentedTokenizerSpec {
  base: Family;
  tokens: Array<string | AddedToken>;
  /** tokenizer_config.json overrides, e.g. { eos_token: '[EOS]', bos_token: '[BOS]' }. */
  config?: Record<string, unknown>;
}

/** A folder (cached by content under the OS temp dir) holding the augmented tokenizer. */
export function augmentedTokenizerDir(spec: AugmentedTokenizerSpec): string {
  const baseDir = shippedTokenizerDir(spec.base);
  const hash = createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16);
  const dir = path.join(tmpdir(), 'cookbook-parity-tokenizers', `${spec.base}-${hash}`);
  if (existsSync(path.join(dir, 'tokenizer.json'))) return dir;

  const json = JSON.parse(readFileSync(path.join(baseDir, 'tokenizer.json'), 'utf8'));
  const config = JSON.parse(readFileSync(path.join(baseDir, 'tokenizer_config.json'), 'utf8'));
  const added: Array<Record<string, unknown>> = json.added_tokens ?? [];
  const known = new Set(added.map((t) => t.content));
  let next = Math.max(Object.keys(json.model.vocab).length - 1, ...added.map((t) => t.id as number)) + 1;
  config.added_tokens_decoder ??= {};
  for (const t of spec.tokens) {
    const { content, special = true } = typeof t === 'string' ? { content: t } : t;
    if (known.has(content)) continue;
    known.add(content);
    const entry = { id: next, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special };
    added.push(entry);
    const { id: _id, ...decoder } = entry;
    config.added_tokens_decoder[String(next)] = decoder;
    next++;
  }
  json.added_tokens = added;
  Object.assign(config, spec.config ?? {});
  // A chat template for another model family would only mislead.
  delete config.chat_template;

  const tmp = `${dir}.tmp-${process.pid}`;
  mkdirSync(tmp, { recursive: true });
  writeFileSync(path.join(tmp, 'tokenizer.json'), JSON.stringify(json));
  writeFileSync(path.join(tmp, 'tokenizer_config.json'), JSON.stringify(config));
  try {
    renameSync(tmp, dir);
  } catch (e) {
    if (!existsSync(path.join(dir, 'tokenizer.json'))) throw e;
  }
  return dir;
}

/**
 * The stand-in tokenizers of the renderer parity files (text and images), for the families whose
 * own tokenizer cannot be had offline: Qwen3's tokenizer plus every special token the family's
 * renderers write or parse. Tokens Qwen3's vocabulary already has are kept, not duplicated.
 */
const STAND_INS = {
  'qwen3.5': {
    label: 'qwen3.5 stand-in',
    spec: {
      base: 'qwen3',
      tokens: [
        '<|im_start|>',
        '<|im_end|>',
        '<|vision_start|>',
        '<|vision_end|>',
        { content: '<think>', special: false },
        { content: '</think>', special: false },
        { content: '<tool_call>', special: false },
        { content: '</tool_call>', special: false },
        { content: '<tool_response>', special: false },
        { content: '</tool_response>', special: false },
      ],
      config: { eos_token: '<|im_end|>' },
    },
  },
  nemotron3: {
    label: 'nemotron3 stand-in',
    spec: {
      base: 'qwen3',
      tokens: [
        '<|im_start|>',
        '<|im_end|>',
        { content: '<think>', special: false },
        { content: '</think>', special: false },
        { content: '<tool_call>', special: false },
        { content: '</tool_call>', special: false },
        { content: '<tool_response>', special: false },
        { content: '</tool_response>', special: false },
        '<img>',
        '</img>',
      ],
      config: { eos_token: '<|im_end|>' },
    },
  },
  kimi: {
    label: 'qwen3+kimi-specials',
    spec: {
      base: 'qwen3',
      tokens: [
        '[BOS]',
        '[EOS]',
        '<|im_end|>',
        '<|im_user|>',
        '<|im_assistant|>',
        '<|im_system|>',
        '<|im_middle|>',
        '<|tool_calls_section_begin|>',
        '<|tool_calls_section_end|>',
        '<|tool_call_section_begin|>',
        '<|tool_call_section_end|>',
        '<|tool_call_begin|>',
        '<|tool_call_argument_begin|>',
        '<|tool_call_end|>',
        '<|media_begin|>',
        '<|media_content|>',
        '<|media_end|>',
        // Already in Qwen3's vocabulary (as non-special added tokens); listed for completeness.
        '<think>',
        '</think>',
      ],
      config: { eos_token: '[EOS]', bos_token: '[BOS]' },
    },
  },
} satisfies Record<string, { label: string; spec: AugmentedTokenizerSpec }>;

/** A stand-in tokenizer's folder and label: Qwen3.5/3.8 (`qwen3.5`), Nemotron-3 or Kimi K2.x. */
export function standInTokenizer(family: keyof typeof STAND_INS): { dir: string; label: string } {
  const { label, spec } = STAND_INS[family];
  return { dir: augmentedTokenizerDir(spec), label };
}
