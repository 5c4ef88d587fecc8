// Renderer names (spec §6.2) and the renderers recommended per model (model-info.ts, spec §6.6).

import { RendererError } from '../errors.js';
import type { ImageProcessor } from '../images/types.js';
import { getModelAttributes } from '../model-info.js';
import type { Tokenizer } from '../tokenizer.js';
import { Llama3Renderer } from './llama3.js';
import { Qwen3DisableThinkingRenderer, Qwen3InstructRenderer, Qwen3Renderer } from './qwen3.js';
import { DEEPSEEK_V3_RENDERERS } from './deepseek-v3.js';
import { DEEPSEEK_V4_1_RENDERERS } from './deepseek-v4-1.js';
import { GLM5_3_RENDERERS } from './glm5-3.js';
import { GPT_OSS_RENDERERS } from './gpt-oss.js';
import { KIMI_K2_RENDERERS } from './kimi-k2.js';
import { KIMI_K25_RENDERERS } from './kimi-k25.js';
import { NEMOTRON3_RENDERERS } from './nemotron3.js';
import { QWEN3_5_RENDERERS } from './qwen3-5.js';
import { QWEN3_8_RENDERERS } from './qwen3-8.js';
import { QWEN3_VL_RENDERERS } from './qwen3-vl.js';
import { RoleColonRenderer } from './role-colon.js';
import type { Renderer } from './types.js';

/** Run-level facts a renderer may print into prompts. */
export interface RenderOptions {
  /** `YYYY-MM-DD` for formats whose system prompt states today's date (gpt-oss); default: today. */
  currentDate?: string;
  /** What a vision renderer counts image tokens with (ignored by text-only renderers). */
  imageProcessor?: ImageProcessor;
}

/** Builds a built-in renderer; `name` is the registry name it was asked for. */
export type NamedRendererFactory = (name: string, tokenizer: Tokenizer, opts?: RenderOptions) => Renderer;

// Each family module exports its own name → factory table; the registry is their union.
const BUILTIN_RENDERERS: Record<string, NamedRendererFactory> = {
  role_colon: (name, t) => new RoleColonRenderer(name, t),
  llama3: (name, t) => new Llama3Renderer(name, t),
  qwen3: (name, t) => new Qwen3Renderer(name, t),
  qwen3_disable_thinking: (name, t) => new Qwen3DisableThinkingRenderer(name, t),
  qwen3_instruct: (name, t) => new Qwen3InstructRenderer(name, t),
  ...DEEPSEEK_V3_RENDERERS,
  ...DEEPSEEK_V4_1_RENDERERS,
  ...GLM5_3_RENDERERS,
  ...GPT_OSS_RENDERERS,
  ...KIMI_K2_RENDERERS,
  ...KIMI_K25_RENDERERS,
  ...QWEN3_VL_RENDERERS,
  ...QWEN3_5_RENDERERS,
  ...QWEN3_8_RENDERERS,
  ...NEMOTRON3_RENDERERS,
};

export const RENDERER_NAMES: readonly string[] = Object.keys(BUILTIN_RENDERERS);

type RendererFactory = (tokenizer: Tokenizer) => Renderer;
const customRenderers = new Map<string, RendererFactory>();

/** Register a renderer under a name; checked before the built-in names, as in the reference. */
export function registerRenderer(name: string, factory: RendererFactory): void {
  customRenderers.set(name, factory);
}

export function getRenderer(name: string, tokenizer: Tokenizer, opts: RenderOptions = {}): Renderer {
  const custom = customRenderers.get(name);
  if (custom) return custom(tokenizer);
  const builtin = Object.hasOwn(BUILTIN_RENDERERS, name) ? BUILTIN_RENDERERS[name] : undefined;
  if (!builtin) {
    throw new RendererError(
      `Unknown renderer: ${name}. Available here: ${[...customRenderers.keys(), ...RENDERER_NAMES].join(', ')}`,
    );
  }
  const renderer = builtin(name, tokenizer, opts);
  if (renderer.takesImages && opts.imageProcessor) renderer.imageProcessor = opts.imageProcessor;
  return renderer;
}

/** Renderers known to suit a model, recommended first (the served-model table). */
export function getRecommendedRenderers(modelName: string): string[] {
  return [...getModelAttributes(modelName).recommendedRenderers];
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
  return (
    `Renderer ${rendererName} is not recommended for model ${modelName} (recommended: ${recommended.join(', ')}); ` +
    'an incompatible renderer can silently degrade training (e.g. prefilling tokens the model was never trained on)'
  );
}
