// Renderer names (spec §6.2) and recommended renderers per model (spec §6.6).

import { ConfigurationError, RendererError } from '../errors.js';
import type { Tokenizer } from '../tokenizer.js';
import { Llama3Renderer } from './llama3.js';
import { Qwen3DisableThinkingRenderer, Qwen3InstructRenderer, Qwen3Renderer } from './qwen3.js';
import { RoleColonRenderer } from './role-colon.js';
import type { Renderer } from './types.js';

export const RENDERER_NAMES = ['role_colon', 'llama3', 'qwen3', 'qwen3_disable_thinking', 'qwen3_instruct'] as const;
export type RendererName = (typeof RENDERER_NAMES)[number];

type RendererFactory = (tokenizer: Tokenizer) => Renderer;
const customRenderers = new Map<string, RendererFactory>();

/** Register a renderer under a name; checked before the built-in names, as in the reference. */
export function registerRenderer(name: string, factory: RendererFactory): void {
  customRenderers.set(name, factory);
}

export function getRenderer(name: string, tokenizer: Tokenizer): Renderer {
  const custom = customRenderers.get(name);
  if (custom) return custom(tokenizer);
  switch (name) {
    case 'role_colon':
      return new RoleColonRenderer(name, tokenizer);
    case 'llama3':
      return new Llama3Renderer(name, tokenizer);
    case 'qwen3':
      return new Qwen3Renderer(name, tokenizer);
    case 'qwen3_disable_thinking':
      return new Qwen3DisableThinkingRenderer(name, tokenizer);
    case 'qwen3_instruct':
      return new Qwen3InstructRenderer(name, tokenizer);
    default:
      throw new RendererError(
        `Unknown renderer: ${name}. Available here: ${[...customRenderers.keys(), ...RENDERER_NAMES].join(', ')}`,
      );
  }
}

// First entry is the recommended one. Only the families whose tokenizers ship with this
// project are listed; the reference table has more (DeepSeek, Kimi, gpt-oss, …).
const MODEL_RENDERERS: Record<string, Record<string, string[]>> = {
  'meta-llama': {
    'Llama-3.1-8B-Instruct': ['llama3'],
    'Llama-3.3-70B-Instruct': ['llama3'],
    'Llama-3.2-1B': ['role_colon'],
    'Llama-3.2-3B': ['role_colon'],
    'Llama-3.1-8B': ['role_colon'],
    'Llama-3.1-70B': ['role_colon'],
  },
  Qwen: {
    'Qwen3-8B': ['qwen3', 'qwen3_disable_thinking'],
    'Qwen3-32B': ['qwen3', 'qwen3_disable_thinking'],
    'Qwen3-30B-A3B': ['qwen3', 'qwen3_disable_thinking'],
    'Qwen3-8B-Base': ['role_colon'],
    'Qwen3-30B-A3B-Base': ['role_colon'],
    'Qwen3-4B-Instruct-2507': ['qwen3_instruct'],
    'Qwen3-30B-A3B-Instruct-2507': ['qwen3_instruct'],
    'Qwen3-235B-A22B-Instruct-2507': ['qwen3_instruct'],
  },
};

// The local engine's tiny models use the real tokenizers; they are chat-style like Qwen3-8B and
// Llama-3.1-8B-Instruct respectively.
const LOCAL_MODEL_RENDERERS: Record<string, string[]> = {
  'tiny-qwen3': ['qwen3', 'qwen3_disable_thinking'],
  'tiny-llama3': ['llama3'],
};

/** Renderers known to suit a model, recommended first. Throws ConfigurationError if unknown. */
export function getRecommendedRenderers(modelName: string): string[] {
  const name = modelName.split(':')[0];
  const local = LOCAL_MODEL_RENDERERS[name];
  if (local) return [...local];
  const slash = name.indexOf('/');
  if (slash < 0) {
    throw new ConfigurationError(`Model name must look like "org/model" (or be tiny-qwen3 / tiny-llama3): ${modelName}`);
  }
  const org = name.slice(0, slash);
  const model = name.slice(slash + 1);
  const table = MODEL_RENDERERS[org];
  if (!table) throw new ConfigurationError(`Unknown model organization "${org}" in ${modelName}`);
  const renderers = table[model];
  if (!renderers) throw new ConfigurationError(`Unknown model "${model}" of ${org}`);
  return [...renderers];
}

export function getRecommendedRendererName(modelName: string): string {
  return getRecommendedRenderers(modelName)[0];
}

/** The reference's warn_if_renderer_not_recommended, returning the warning (or undefined). */
export function rendererNotRecommendedWarning(modelName: string, rendererName: string | undefined): string | undefined {
  if (rendererName === undefined) return undefined;
  let recommended: string[];
  try {
    recommended = getRecommendedRenderers(modelName);
  } catch {
    return undefined;
  }
  if (recommended.includes(rendererName)) return undefined;
  return `Renderer ${rendererName} is not recommended for model ${modelName}; recommended: ${recommended.join(', ')}`;
}
