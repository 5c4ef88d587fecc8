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
