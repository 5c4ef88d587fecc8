// The image processor configuration (preprocessor_config.json) of every vision model the project
// serves, written into a Hugging Face hub cache in the layout huggingface_hub reads offline
// (`models--{org}--{name}/refs/main` → `snapshots/<commit>/preprocessor_config.json`), for machines
// that cannot reach the Hub: the reference's `get_image_processor` and this project's
// `loadImageProcessor` then both find them. Used by scripts/hf-image-processors.mjs and the parity
// suite. What a cache already holds is kept as it is: a file or ref that exists is never replaced.
//
// Each value's source is named beside it. "Published" means the model repository's own
// preprocessor_config.json; where the repository's file is not known here, the transformers 5.23
// class defaults it was ported from stand in, as said at each entry.

import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SERVED_MODELS } from '../model-info.js';
import { PINNED_REVISIONS, takesImageProcessor } from './processors.js';

/**
 * Qwen3-VL (Qwen/Qwen3-VL-30B-A3B-Instruct, Qwen/Qwen3-VL-235B-A22B-Instruct): the published
 * preprocessor_config.json, key for key. transformers 5.23 loads it as Qwen2VLImageProcessor
 * ("Fast" is the legacy name of its torchvision backend; without torchvision, Qwen2VLImageProcessorPil).
 */
const QWEN3_VL = {
  size: { longest_edge: 16777216, shortest_edge: 65536 }, // published: 4096² and 256² pixels
  patch_size: 16, // published (Qwen2VLImageProcessor's default is 14, Qwen2-VL's)
  temporal_patch_size: 2, // published
  merge_size: 2, // published
  image_mean: [0.5, 0.5, 0.5], // published
  image_std: [0.5, 0.5, 0.5], // published
  processor_class: 'Qwen3VLProcessor', // published
  image_processor_type: 'Qwen2VLImageProcessorFast', // published
};

/**
 * Qwen3.5 and Qwen3.6 (every size, base and instruct): published with the same content as Qwen3-VL's
 * (Qwen/Qwen3.5-*, Qwen/Qwen3.6-*: size 65536..16777216, patch 16, merge 2, temporal 2, mean/std 0.5,
 * Qwen3VLProcessor, Qwen2VLImageProcessorFast). Qwen3.8's file is not known here: the family's is
 * assumed (same vision tower and renderer family in the model table).
 */
const QWEN3_5 = { ...QWEN3_VL };

/**
 * Kimi-K2.5 and Kimi-K2.6 at the reference's pinned revisions: the published preprocessor_config.json
 * (the remote-code processor, loaded with trust_remote_code). Its media_proc_cfg values are
 * moonshotai/Kimi-K2.5's, which transformers 5.23 ported as Kimi_K25ImageProcessor's defaults
 * (max_patches 16384 = in_patch_limit, size.max_height 512 = patch_limit_on_one_side, patch_size 14,
 * merge_size 2); K2.6 keeps K2.5's vision processor (same revision layout, same kimi_k25 family).
 * Offline, transformers cannot import the remote class without its .py files in the snapshot, so
 * the reference loads no processor for these from this cache alone (see the parity test).
 */
const KIMI_K25 = {
  auto_map: {
    AutoProcessor: 'kimi_k25_processor.KimiK25Processor', // published
    AutoImageProcessor: 'kimi_k25_vision_processing.KimiK25VisionProcessor', // published
  },
  media_proc_cfg: {
    in_patch_limit: 16384, // published (= transformers Kimi_K25ImageProcessor.max_patches)
    patch_size: 14, // published (= Kimi_K25ImageProcessor.patch_size)
    image_mean: [0.5, 0.5, 0.5], // published
    image_std: [0.5, 0.5, 0.5], // published
    merge_kernel_size: 2, // published (= Kimi_K25ImageProcessor.merge_size)
    fixed_output_tokens: null, // published
    patch_limit_on_one_side: 512, // published (= Kimi_K25ImageProcessor.size.max_height)
    in_patch_limit_each_frame: 4096, // published (video)
    in_patch_limit_video: null, // published (video)
    sample_fps: 2.0, // published (video)
    max_num_frames_each_video: null, // published (video)
    temporal_merge_kernel_size: 4, // published (video)
    timestamp_mode: 'hh:mm:ss.fff', // published (video)
  },
};

/**
 * Nemotron-3.5-Super-VL at the reference's pinned revision: its published file (a remote-code
 * processor with `_compute_target_patches`) is not known here. Written instead in the form
 * transformers 5.23 loads natively, NemotronH_Omni_Reasoning_V3ImageProcessor, with that class's
 * defaults, which it ported from nvidia/Nemotron-3-Nano-Omni-30B-A3B-Reasoning-BF16's remote
 * image_processing.py (the same family of processor and the attribute names the reference reads:
 * patch_size, min_num_patches, max_num_patches, max_model_len, and _downsample_factor from
 * downsample_ratio). Derived, not published: a real cache's file takes precedence.
 */
const NEMOTRON_3_5_VL = {
  image_processor_type: 'NemotronH_Omni_Reasoning_V3ImageProcessor', // transformers 5.23 auto mapping (nemotron_h_omni)
  patch_size: 16, // NemotronH_Omni_Reasoning_V3ImageProcessor.patch_size
  downsample_ratio: 0.5, // .downsample_ratio (pixel shuffle 2×2)
  min_num_patches: 1024, // .min_num_patches
  max_num_patches: 13312, // .max_num_patches
  max_model_len: 16384, // .max_model_len
  image_mean: [0.48145466, 0.4578275, 0.40821073], // .image_mean (OPENAI_CLIP_MEAN)
  image_std: [0.26862954, 0.26130258, 0.27577711], // .image_std (OPENAI_CLIP_STD)
};

/** The configuration this project knows for a served vision model, by family. */
function configFor(model: string): Record<string, unknown> | undefined {
  if (model.startsWith('Qwen/Qwen3-VL-')) return QWEN3_VL;
  if (/^Qwen\/Qwen3\.[5-8]-/.test(model)) return QWEN3_5;
  if (model === 'moonshotai/Kimi-K2.5' || model === 'moonshotai/Kimi-K2.6') return KIMI_K25;
  if (model === 'nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16') return NEMOTRON_3_5_VL;
  return undefined;
}

export interface KnownImageProcessorConfig {
  model: string;
  /** The snapshot written: the reference's pinned revision, else a commit named after the content. */
  revision: string;
  config: Record<string, unknown>;
}

/** Every served vision model that takes an image processor (model-info.ts rows flagged 'vl'). */
export function knownImageProcessorConfigs(): KnownImageProcessorConfig[] {
  return SERVED_MODELS.filter((m) => m.isVl && takesImageProcessor(m.name)).map((m) => {
    const config = configFor(m.name);
    if (!config) {
      throw new Error(`no image processor configuration is known for the vision model ${m.name}: add it to src/cookbook/images/hf-cache.ts`);
    }
    const json = `${JSON.stringify(config, null, 2)}\n`;
    const revision =
      PINNED_REVISIONS[m.name] ?? createHash('sha1').update(`durable-cookbook image processor\n${m.name}\n${json}`).digest('hex');
    return { model: m.name, revision, config };
  });
}

export interface WrittenConfig {
  model: string;
  file: string;
  /** written: the file was created; kept: the cache already had it (or a processor_config.json with one). */
  action: 'written' | 'kept';
}

/**
 * Writes every known configuration into the hub cache `cacheDir`. A model whose cache entry already
 * resolves (refs/main, or the pinned commit's snapshot) to a snapshot with a configuration is kept
 * as it is; missing refs and files are added, existing ones never replaced.
 */
export function writeImageProcessorConfigs(cacheDir: string): WrittenConfig[] {
  return knownImageProcessorConfigs().map(({ model, revision, config }) => {
    const repo = path.join(cacheDir, `models--${model.replaceAll('/', '--')}`);
    const mainRef = path.join(repo, 'refs', 'main');
    const pinned = PINNED_REVISIONS[model];
    // The snapshot the reference reads: the pinned commit, else the one refs/main names (a real
    // download's) or, when there is none, ours.
    const commit = pinned ?? (existsSync(mainRef) ? readFileSync(mainRef, 'utf8').trim() : revision);
    const snapshot = path.join(repo, 'snapshots', commit);
    const file = path.join(snapshot, 'preprocessor_config.json');
    if (!existsSync(mainRef)) {
      mkdirSync(path.dirname(mainRef), { recursive: true });
      writeFileSync(mainRef, commit);
    }
    if (existsSync(file) || hasNestedConfig(path.join(snapshot, 'processor_config.json'))) {
      return { model, file, action: 'kept' };
    }
    mkdirSync(snapshot, { recursive: true });
    writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { flag: 'wx' });
    return { model, file, action: 'written' };
  });
}

function hasNestedConfig(processorConfig: string): boolean {
  if (!existsSync(processorConfig)) return false;
  try {
    const parsed = JSON.parse(readFileSync(processorConfig, 'utf8')) as { image_processor?: unknown };
    return !!parsed.image_processor && typeof parsed.image_processor === 'object';
  } catch {
    return false;
  }
}
