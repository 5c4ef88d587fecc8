// How many tokens each vision model turns an image into (reference renderers/base.py
// `image_to_chunk`, with the processor `image_processing_utils.get_image_processor` loads), and
// where that processor's configuration comes from: the model's `preprocessor_config.json` in the
// Hugging Face hub cache, resolved as huggingface_hub resolves it offline.
//
//   Qwen3-VL, Qwen3.5/3.6/3.8  transformers' Qwen2VLImageProcessor: `get_number_of_image_patches`
//                              (smart_resize) // merge_size². Exact: the reference loads it offline.
//   Kimi-K2.5, K2.6            the NaViT resize of the model's remote code (kimi_k25_vision_processing
//                              / media_utils.navit_resize_image, which the reference loads with
//                              trust_remote_code) = transformers 5.23's native Kimi_K25ImageProcessor
//                              `get_number_of_image_patches` // merge_size².
//   Nemotron-3.5-Super-VL      the reference's own budget (min((max_model_len - 4)·f², max_num_patches),
//                              at least min_num_patches) and the remote image processor's
//                              `_compute_target_patches`, published in nvidia/Nemotron-3-Nano-Omni's
//                              image_processing.py and ported to transformers 5.23 as
//                              nemotron_h_omni `get_patch_grid_size`.
//
// Python's arithmetic is kept: `round` rounds half to even, `//` floors, `int()` truncates, and
// every float step is the same IEEE double operation in the same order.

import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigurationError } from '../errors.js';
import { hfHubCacheRoot } from '../hf/hub.js';
import { pyRound } from '../misc-utils.js';
import { ImageError } from './errors.js';
import type { ImageProcessor } from './types.js';

export { pyRound };

/** Python's a // b for integers. */
const floorDiv = (a: number, b: number) => Math.floor(a / b);

// ------------------------------------------------------------------------------- Qwen2-VL family

export interface Qwen2VLConfig {
  patchSize: number;
  mergeSize: number;
  temporalPatchSize: number;
  /** size["shortest_edge"]: the fewest pixels an image is resized to. */
  minPixels: number;
  /** size["longest_edge"]: the most. */
  maxPixels: number;
}

/** transformers' Qwen2VLImageProcessor class defaults (models/qwen2_vl/image_processing_qwen2_vl.py). */
export const QWEN2_VL_DEFAULTS: Qwen2VLConfig = {
  patchSize: 14,
  mergeSize: 2,
  temporalPatchSize: 2,
  minPixels: 56 * 56,
  maxPixels: 28 * 28 * 1280,
};

/** transformers' `smart_resize`: the (height, width) an image is resized to, multiples of `factor`. */
export function smartResize(height: number, width: number, factor: number, minPixels: number, maxPixels: number): [number, number] {
  const ratio = Math.max(height, width) / Math.min(height, width);
  if (ratio > 200) {
    throw new RangeError(`absolute aspect ratio must be smaller than 200, got ${pyFloat(ratio)}`);
  }
  let hBar = pyRound(height / factor) * factor;
  let wBar = pyRound(width / factor) * factor;
  if (hBar * wBar > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    hBar = Math.max(factor, Math.floor(height / beta / factor) * factor);
    wBar = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (hBar * wBar < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    hBar = Math.ceil((height * beta) / factor) * factor;
    wBar = Math.ceil((width * beta) / factor) * factor;
  }
  return [hBar, wBar];
}

/** A float as Python's repr writes it (for messages that quote the reference's). */
const pyFloat = (x: number) => (Number.isInteger(x) ? `${x}.0` : String(x));

export class Qwen2VLImageProcessor implements ImageProcessor {
  readonly config: Qwen2VLConfig;
  constructor(
    readonly name: string,
    config: Partial<Qwen2VLConfig> = {},
  ) {
    this.config = { ...QWEN2_VL_DEFAULTS, ...config };
  }

  /** `get_number_of_image_patches(height, width)`: the patch grid of the resized image. */
  numImagePatches(width: number, height: number): number {
    const { patchSize, mergeSize, minPixels, maxPixels } = this.config;
    let resized: [number, number];
    try {
      resized = smartResize(height, width, patchSize * mergeSize, minPixels, maxPixels);
    } catch (e) {
      throw new ImageError(`a ${width}×${height} image`, `${this.name} cannot take it: ${(e as Error).message}`);
    }
    return floorDiv(resized[0], patchSize) * floorDiv(resized[1], patchSize);
  }

  numImageTokens(width: number, height: number): number {
    return floorDiv(this.numImagePatches(width, height), this.config.mergeSize ** 2);
  }
}

// ------------------------------------------------------------------------------------ Kimi K2.5

export interface KimiK25Config {
  patchSize: number;
  mergeSize: number;
  /** in_patch_limit (remote code) / max_patches (transformers): patches before merging. */
  maxPatches: number;
  /** patch_limit_on_one_side / size["max_height"]: patches along either side. */
  maxPatchesPerSide: number;
  /** fixed_output_tokens (remote code only): a count that replaces the computed one. */
  fixedOutputTokens?: number | null;
}

/** The published media_proc_cfg of moonshotai/Kimi-K2.5 (= transformers' Kimi_K25ImageProcessor defaults). */
export const KIMI_K25_DEFAULTS: KimiK25Config = { patchSize: 14, mergeSize: 2, maxPatches: 16384, maxPatchesPerSide: 512, fixedOutputTokens: null };

/** `navit_resize`: the resized size and the size padded to multiples of patch × merge. */
export function navitResize(
  height: number,
  width: number,
  patchSize: number,
  mergeKernelSize: number,
  maxPatches: number,
  maxSizePerSide: number,
): { resized: [number, number]; padded: [number, number] } {
  const numPatchesH = Math.max(1.0, floorDiv(height, patchSize));
  const numPatchesW = Math.max(1.0, floorDiv(width, patchSize));
  const scaleForTotalPatches = Math.sqrt(maxPatches / (numPatchesH * numPatchesW));
  const scaleForHeight = (maxSizePerSide * patchSize) / height;
  const scaleForWidth = (maxSizePerSide * patchSize) / width;
  const scale = Math.min(1.0, scaleForTotalPatches, scaleForHeight, scaleForWidth);
  let newHeight = Math.max(1, Math.trunc(height * scale));
  let newWidth = Math.max(1, Math.trunc(width * scale));
  newHeight = Math.min(newHeight, maxSizePerSide * patchSize);
  newWidth = Math.min(newWidth, maxSizePerSide * patchSize);
  const factor = mergeKernelSize * patchSize;
  const padHeight = ((factor - (newHeight % factor)) % factor) + newHeight;
  const padWidth = ((factor - (newWidth % factor)) % factor) + newWidth;
  return { resized: [newHeight, newWidth], padded: [padHeight, padWidth] };
}

export class KimiK25ImageProcessor implements ImageProcessor {
  readonly config: KimiK25Config;
  constructor(
    readonly name: string,
    config: Partial<KimiK25Config> = {},
  ) {
    this.config = { ...KIMI_K25_DEFAULTS, ...config };
  }

  numImagePatches(width: number, height: number): number {
    const { patchSize, mergeSize, maxPatches, maxPatchesPerSide } = this.config;
    const { padded } = navitResize(height, width, patchSize, mergeSize, maxPatches, maxPatchesPerSide);
    return floorDiv(padded[0], patchSize) * floorDiv(padded[1], patchSize);
  }

  numImageTokens(width: number, height: number): number {
    const fixed = this.config.fixedOutputTokens;
    if (fixed !== null && fixed !== undefined) return fixed;
    return floorDiv(this.numImagePatches(width, height), this.config.mergeSize ** 2);
  }
}

// ------------------------------------------------------------------------ Nemotron 3.5 Super VL

export interface NemotronVLConfig {
  patchSize: number;
  /** downsample_ratio: the pixel shuffle keeps 1 / (1/ratio)² of the patches. */
  downsampleRatio: number;
  minNumPatches: number;
  maxNumPatches: number;
  maxModelLen: number;
}

/** transformers 5.23 NemotronH_Omni_Reasoning_V3ImageProcessor's defaults (= the remote processor's). */
export const NEMOTRON_VL_DEFAULTS: NemotronVLConfig = { patchSize: 16, downsampleRatio: 0.5, minNumPatches: 1024, maxNumPatches: 13312, maxModelLen: 16384 };

/** The remote processor's `_compute_target_patches(image, budget)`: (width, height) in patches. */
export function computeTargetPatches(
  width: number,
  height: number,
  budget: number,
  patchSize: number,
  minNumPatches: number,
  downsampleFactor: number,
): [number, number] {
  const closestH = pyRound(height / patchSize + 0.5);
  const closestW = pyRound(width / patchSize + 0.5);
  const factor = Math.min(Math.sqrt(budget / (closestH * closestW)), 1.0);
  let targetH = Math.floor(factor * closestH);
  let targetW = Math.floor(factor * closestW);
  if (budget > minNumPatches && targetH * targetW < minNumPatches) {
    const up = Math.sqrt(minNumPatches / (targetH * targetW));
    targetH = Math.ceil(up * targetH);
    targetW = Math.ceil(up * targetW);
  }
  const d = downsampleFactor;
  const remH = targetH % d;
  if (remH) {
    if ((targetH + d - remH) * targetW <= budget) targetH += d - remH;
    else targetH = Math.max(d, targetH - remH);
  }
  const remW = targetW % d;
  if (remW) {
    if (targetH * (targetW + d - remW) <= budget) targetW += d - remW;
    else targetW = Math.max(d, targetW - remW);
  }
  return [targetW, targetH];
}

export class NemotronVLImageProcessor implements ImageProcessor {
  readonly config: NemotronVLConfig;
  constructor(
    readonly name: string,
    config: Partial<NemotronVLConfig> = {},
  ) {
    this.config = { ...NEMOTRON_VL_DEFAULTS, ...config };
  }

  /** The remote processor's `_downsample_factor`: int(round(1 / downsample_ratio)). */
  get downsampleFactor(): number {
    return pyRound(1.0 / this.config.downsampleRatio);
  }

  /** The reference's per-image patch budget (image_to_chunk). */
  get budget(): number {
    const { maxModelLen, maxNumPatches, minNumPatches } = this.config;
    return Math.max(Math.min((maxModelLen - 4) * this.downsampleFactor ** 2, maxNumPatches), minNumPatches);
  }

  numImageTokens(width: number, height: number): number {
    const { patchSize, minNumPatches } = this.config;
    const [w, h] = computeTargetPatches(width, height, this.budget, patchSize, minNumPatches, this.downsampleFactor);
    return floorDiv(w * h, this.downsampleFactor ** 2);
  }
}

// ---------------------------------------------------------------------------- the local engine

/**
 * The engine's tiny vision model (`tiny-qwen3-vl`): a Qwen2VLImageProcessor with these numbers, a
 * contract with the engine, which resizes and patches images with the same ones.
 */
export const TINY_QWEN3_VL_IMAGE_PROCESSOR = new Qwen2VLImageProcessor('tiny-qwen3-vl', {
  patchSize: 16,
  mergeSize: 2,
  temporalPatchSize: 2,
  minPixels: 1024,
  maxPixels: 16384,
});

const BUILT_IN: Record<string, ImageProcessor> = { 'tiny-qwen3-vl': TINY_QWEN3_VL_IMAGE_PROCESSOR };

// ------------------------------------------------------------------------------------- loading

/** The revisions the reference pins (image_processing_utils.get_image_processor). */
export const PINNED_REVISIONS: Readonly<Record<string, string>> = {
  'moonshotai/Kimi-K2.5': '3367c8d1c68584429fab7faf845a32d5195b6ac1',
  'moonshotai/Kimi-K2.6': 'b5aabbfb20227ed42becbf5541dbffd213942c58',
  'nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16': '533d66230b6e75518bf32d2d7a7b95a24c3dd517',
};

/**
 * Whether the reference gives this model an image processor: tml-renderers models (Inkling*,
 * Kimi-K3.1-Pro) tokenize images themselves and take none (tokenizer_utils.is_tml_renderers_model).
 */
export function takesImageProcessor(modelName: string): boolean {
  const name = modelName.split(':')[0];
  return !(name.startsWith('thinkingmachines/Inkling') || name.startsWith('moonshotai/Kimi-K3.1-Pro'));
}

export interface LoadImageProcessorOptions {
  /** The hub cache to read (default: HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub). */
  cacheDir?: string;
  /** A branch, tag or commit (default: the reference's pinned revision, else "main"). */
  revision?: string;
  env?: NodeJS.ProcessEnv;
}

/** Where a model's image processor configuration was found, and what it says. */
export interface ImageProcessorSource {
  /** The file read (processor_config.json with an "image_processor" key, or preprocessor_config.json). */
  file: string;
  config: Record<string, unknown>;
}

const SCRIPT_HINT =
  'download it (`huggingface-cli download <model> preprocessor_config.json`, where the Hub can be reached) or write the ' +
  'known configurations into the cache with `node scripts/hf-image-processors.mjs <cache dir>`';

/**
 * The model's image processor configuration, found as transformers' `AutoImageProcessor.from_pretrained`
 * finds it offline: a local folder when `model` is one; else in the hub cache,
 * `models--{org}--{name}/snapshots/<commit>/` with the commit from `refs/<revision>` (or the revision
 * itself when it is a commit hash); `processor_config.json`'s "image_processor" entry first, then
 * `preprocessor_config.json`.
 */
export function findImageProcessorConfig(modelName: string, opts: LoadImageProcessorOptions = {}): ImageProcessorSource {
  const model = modelName.split(':')[0];
  let dir: string;
  if (existsSync(model) && statSync(model).isDirectory()) {
    dir = model;
  } else {
    const root = opts.cacheDir ?? hfHubCacheRoot(opts.env ?? process.env);
    const revision = opts.revision ?? PINNED_REVISIONS[model] ?? 'main';
    const repo = path.join(root, `models--${model.replaceAll('/', '--')}`);
    const ref = path.join(repo, 'refs', ...revision.split('/'));
    let commit: string | undefined;
    if (existsSync(ref) && statSync(ref).isFile()) commit = readFileSync(ref, 'utf8').trim();
    else if (/^[0-9a-f]{40}$/.test(revision)) commit = revision;
    if (!commit) {
      throw new ConfigurationError(
        `no image processor configuration for ${model} in the Hugging Face cache ${root}: ${ref} does not exist ` +
          `(revision ${revision}); ${SCRIPT_HINT}`,
      );
    }
    dir = path.join(repo, 'snapshots', commit);
  }
  const processorFile = path.join(dir, 'processor_config.json');
  if (existsSync(processorFile)) {
    const nested = readJson(processorFile, model).image_processor;
    if (nested && typeof nested === 'object') return { file: processorFile, config: nested as Record<string, unknown> };
  }
  const file = path.join(dir, 'preprocessor_config.json');
  if (!existsSync(file)) {
    throw new ConfigurationError(`no image processor configuration for ${model}: ${file} does not exist; ${SCRIPT_HINT}`);
  }
  return { file, config: readJson(file, model) };
}

function readJson(file: string, model: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigurationError(`the image processor configuration of ${model} at ${file} is not valid JSON: ${(e as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigurationError(`the image processor configuration of ${model} at ${file} is not a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * The image processor of a model, as the reference's `get_image_processor` loads it (see
 * `findImageProcessorConfig`); the engine's `tiny-qwen3-vl` has its built-in one. Models that take
 * none in the reference (`takesImageProcessor`) are refused.
 */
export function loadImageProcessor(modelName: string, opts: LoadImageProcessorOptions = {}): ImageProcessor {
  const model = modelName.split(':')[0];
  const builtIn = BUILT_IN[model];
  if (builtIn) return builtIn;
  if (!takesImageProcessor(model)) {
    throw new ConfigurationError(`${model} takes no image processor: its renderer (tml-renderers) tokenizes images itself`);
  }
  const { file, config } = findImageProcessorConfig(model, opts);
  return imageProcessorFromConfig(model, config, file);
}

const QWEN_MODEL_TYPES = ['qwen2_vl', 'qwen2_5_vl', 'qwen3_vl', 'qwen3_vl_moe', 'qwen3_5', 'qwen3_5_moe'];

/** The processor class a configuration names (`image_processor_type`, else its remote class, else its keys). */
export function imageProcessorFromConfig(name: string, config: Record<string, unknown>, file = 'its configuration'): ImageProcessor {
  const type = typeof config.image_processor_type === 'string' ? config.image_processor_type.replace(/(Fast|Pil)$/, '') : undefined;
  const autoMap = (config.auto_map as Record<string, unknown> | undefined)?.AutoImageProcessor;
  const remote = typeof autoMap === 'string' ? autoMap : Array.isArray(autoMap) ? String(autoMap[0]) : '';
  const modelType = modelTypeBeside(file);
  const num = (key: string, v: unknown): number | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new ConfigurationError(`${name}'s image processor configuration (${file}) has ${key} = ${JSON.stringify(v)}, not a number`);
    }
    return v;
  };
  const size = (config.size ?? {}) as Record<string, unknown>;

  if (type === 'Qwen2VLImageProcessor' || (!type && !remote && modelType && QWEN_MODEL_TYPES.includes(modelType))) {
    // Qwen2VLImageProcessor.__init__: min_pixels / max_pixels override size's shortest / longest edge.
    const minPixels = num('min_pixels', config.min_pixels) ?? (config.size ? num('size.shortest_edge', size.shortest_edge) : QWEN2_VL_DEFAULTS.minPixels);
    const maxPixels = num('max_pixels', config.max_pixels) ?? (config.size ? num('size.longest_edge', size.longest_edge) : QWEN2_VL_DEFAULTS.maxPixels);
    if (minPixels === undefined || maxPixels === undefined) {
      throw new ConfigurationError(`${name}'s Qwen2VLImageProcessor configuration (${file}) needs size.shortest_edge and size.longest_edge`);
    }
    return new Qwen2VLImageProcessor(name, {
      minPixels,
      maxPixels,
      ...defined({ patchSize: num('patch_size', config.patch_size), mergeSize: num('merge_size', config.merge_size), temporalPatchSize: num('temporal_patch_size', config.temporal_patch_size) }),
    });
  }
  if (type === 'Kimi_K25ImageProcessor' || (!type && modelType === 'kimi_k25' && !config.media_proc_cfg)) {
    const maxHeight = num('size.max_height', size.max_height);
    return new KimiK25ImageProcessor(name, defined({ patchSize: num('patch_size', config.patch_size), mergeSize: num('merge_size', config.merge_size), maxPatches: num('max_patches', config.max_patches), maxPatchesPerSide: maxHeight }));
  }
  if (config.media_proc_cfg || /KimiK25/i.test(remote)) {
    // The remote code's KimiK25VisionProcessor: its media_proc_cfg over its defaults.
    const cfg = (config.media_proc_cfg ?? {}) as Record<string, unknown>;
    const merge = Array.isArray(cfg.merge_kernel_size) ? cfg.merge_kernel_size[0] : cfg.merge_kernel_size;
    const fixed = cfg.fixed_output_tokens;
    return new KimiK25ImageProcessor(name, {
      ...defined({ patchSize: num('media_proc_cfg.patch_size', cfg.patch_size), mergeSize: num('media_proc_cfg.merge_kernel_size', merge), maxPatches: num('media_proc_cfg.in_patch_limit', cfg.in_patch_limit), maxPatchesPerSide: num('media_proc_cfg.patch_limit_on_one_side', cfg.patch_limit_on_one_side) }),
      fixedOutputTokens: num('media_proc_cfg.fixed_output_tokens', fixed) ?? null,
    });
  }
  if (
    type === 'NemotronH_Omni_Reasoning_V3ImageProcessor' ||
    /Nemotron/i.test(type ?? remote) ||
    (!type && (modelType === 'nemotron_h_omni' || ('min_num_patches' in config && 'max_num_patches' in config)))
  ) {
    return new NemotronVLImageProcessor(name, defined({
      patchSize: num('patch_size', config.patch_size),
      downsampleRatio: num('downsample_ratio', config.downsample_ratio),
      minNumPatches: num('min_num_patches', config.min_num_patches),
      maxNumPatches: num('max_num_patches', config.max_num_patches),
      maxModelLen: num('max_model_len', config.max_model_len),
    }));
  }
  throw new ConfigurationError(
    `${name}'s image processor (${file}) is ${type ?? (remote || 'unnamed')}, which this project does not count tokens for ` +
      '(it knows Qwen2VLImageProcessor, Kimi-K2.5\'s and Nemotron-3.5-Super-VL\'s)',
  );
}

/** The model_type of the config.json beside a processor configuration, which transformers falls back on. */
function modelTypeBeside(file: string): string | undefined {
  const configFile = path.join(path.dirname(file), 'config.json');
  if (!existsSync(configFile)) return undefined;
  try {
    const t = (JSON.parse(readFileSync(configFile, 'utf8')) as { model_type?: unknown }).model_type;
    return typeof t === 'string' ? t : undefined;
  } catch {
    return undefined;
  }
}

function defined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
