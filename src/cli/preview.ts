// `cookbook train … --dry-run`: the first training datums as the model will see them, decoded, with
// the tokens that carry loss marked, so a user can check the chat format of a new model before
// spending a run on it (the reference's viz_sft_dataset, in plain text).
import type { Datum } from '../backends/types.js';
import { buildPreferenceDatasets } from '../cookbook/preference/dataset.js';
import { buildChatDatasets } from '../cookbook/supervised/dataset.js';
import type { Tokenizer } from '../cookbook/tokenizer.js';

const OPEN = '⟦';
const CLOSE = '⟧';

/** The datum's full token sequence (input plus the last target) with the loss weight of each token. */
function tokensAndWeights(d: Datum): { tokens: number[]; weights: number[] } {
  const input = d.model_input.chunks.flatMap((c) => (c.type === 'encoded_text' ? c.tokens : []));
  const targets = d.loss_fn_inputs.target_tokens.data;
  const w = d.loss_fn_inputs.weights.data;
  // Token t+1 is the target of position t, so it carries weight w[t]; the first token carries none.
  return { tokens: [...input.slice(0, 1), ...targets], weights: [0, ...w] };
}

/** Decoded text with each run of trained tokens wrapped in ⟦…⟧. */
export function markTrained(d: Datum, tokenizer: Tokenizer): string {
  const { tokens, weights } = tokensAndWeights(d);
  let out = '';
  let start = 0;
  for (let i = 1; i <= tokens.length; i++) {
    if (i < tokens.length && weights[i] > 0 === weights[start] > 0) continue;
    const text = tokenizer.decode(tokens.slice(start, i));
    out += weights[start] > 0 ? `${OPEN}${text}${CLOSE}` : text;
    start = i;
  }
  return out;
}

export async function previewData(kind: string, cfg: any, count = 2): Promise<string> {
  let data: Datum[];
  let tokenizer: Tokenizer;
  let rendererName: string;
  if (kind === 'sl') {
    const built = await buildChatDatasets(cfg.dataset, cfg);
    built.train.setEpoch(0);
    await built.train.loadBatch(0);
    data = built.train.getBatch(0).slice(0, count);
    ({ tokenizer } = built);
    rendererName = built.renderer.name;
  } else if (kind === 'dpo') {
    const built = await buildPreferenceDatasets(cfg.dataset, cfg);
    built.train.setEpoch(0);
    await built.train.loadBatch(0);
    data = built.train.getBatch(0).datums.slice(0, 2 * count);
    ({ tokenizer } = built);
    rendererName = built.renderer.name;
  } else {
    return `(no datum preview for ${kind} runs: their data is sampled during the run)`;
  }
  const header = `renderer ${rendererName}, tokenizer ${tokenizer.name}; ${OPEN}…${CLOSE} marks tokens trained on`;
  return [header, ...data.map((d, i) => `--- datum ${i} (${d.loss_fn_inputs.target_tokens.data.length + 1} tokens)\n${markTrained(d, tokenizer)}`)].join('\n');
}
