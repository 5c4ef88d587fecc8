// The renderer and tokenizer a run uses, from its config: `tokenizer_path` (a local tokenizer
// folder) or the model's shipped tokenizer, and the renderer named by the dataset, else by the
// top-level `renderer_name`, else the model's recommended one.

import { ConfigurationError } from '../errors.js';
import { loadImageProcessor, takesImageProcessor } from '../images/processors.js';
import type { ImageProcessor } from '../images/types.js';
import { getTokenizer, type Tokenizer } from '../tokenizer.js';
import { getRecommendedRendererName, getRenderer } from './registry.js';
import type { Renderer } from './types.js';

/** The config fields that choose how a model's text is tokenized and rendered. */
export interface ModelChoice {
  model_name: string;
  renderer_name?: string | null;
  tokenizer_path?: string | null;
  /** The date date-stamping formats print (gpt-oss's system prompt), fixed per run. */
  render_date?: string | null;
}

export const asModelChoice = (model: string | ModelChoice): ModelChoice =>
  typeof model === 'string' ? { model_name: model } : model;

/**
 * The renderer name for a dataset: the dataset's own `renderer_name` and the top-level one must
 * agree when both are set (`where` names the dataset's config path for the error).
 */
export function chooseRendererName(model: ModelChoice, datasetRendererName?: string | null, where = 'dataset'): string {
  const top = model.renderer_name ?? undefined;
  const own = datasetRendererName ?? undefined;
  if (top !== undefined && own !== undefined && top !== own) {
    throw new ConfigurationError(
      `renderer_name is "${top}" but ${where}.renderer_name is "${own}": set one of them (or make them equal)`,
    );
  }
  return own ?? top ?? getRecommendedRendererName(model.model_name);
}

export async function rendererForModel(
  modelInput: string | ModelChoice,
  datasetRendererName?: string | null,
  where = 'dataset',
): Promise<{ renderer: Renderer; tokenizer: Tokenizer }> {
  const model = asModelChoice(modelInput);
  const name = chooseRendererName(model, datasetRendererName, where);
  const tokenizer = await getTokenizer(model.model_name, model.tokenizer_path);
  const imageProcessor = takesImageProcessor(model.model_name) ? lazyImageProcessor(model.model_name) : undefined;
  return { renderer: getRenderer(name, tokenizer, { currentDate: model.render_date ?? undefined, imageProcessor }), tokenizer };
}

/**
 * The model's image processor, read from the Hugging Face cache when the first image is counted:
 * a vision model trained on text alone needs no processor configuration.
 */
function lazyImageProcessor(modelName: string): ImageProcessor {
  let loaded: ImageProcessor | undefined;
  return {
    name: modelName,
    numImageTokens(width, height) {
      loaded ??= loadImageProcessor(modelName);
      return loaded.numImageTokens(width, height);
    },
  };
}
