#!/usr/bin/env node
// Writes the image processor configuration (preprocessor_config.json) of every served vision model
// (src/cookbook/model-info.ts rows flagged 'vl' that take an image processor) into a Hugging Face
// hub cache, in the layout huggingface_hub reads offline, so that the reference's
// get_image_processor and this project's loadImageProcessor find them without the Hub:
//
//   node scripts/hf-image-processors.mjs [cache dir]
//
// The cache defaults to huggingface_hub's: HF_HUB_CACHE, else HF_HOME/hub, else
// ~/.cache/huggingface/hub. What it already holds is kept: no file or ref is replaced. The values
// and their sources (the models' published files, or transformers' class defaults) are in
// src/cookbook/images/hf-cache.ts.
import { tsImport } from 'tsx/esm/api';

const args = process.argv.slice(2);
if (args.length > 1 || args.some((a) => a.startsWith('-'))) {
  console.error('usage: node scripts/hf-image-processors.mjs [hub cache dir]');
  process.exit(2);
}
const { writeImageProcessorConfigs } = await tsImport('../src/cookbook/images/hf-cache.ts', import.meta.url);
const { hfHubCacheRoot } = await tsImport('../src/cookbook/hf/hub.ts', import.meta.url);
const dir = args[0] ?? hfHubCacheRoot();
for (const { model, file, action } of writeImageProcessorConfigs(dir)) console.log(`${action.padEnd(7)} ${model}  ${file}`);
