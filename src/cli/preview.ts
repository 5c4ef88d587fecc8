// `cookbook train … --dry-run`: the first training datums as the model will see them, decoded, with
// the tokens that carry loss marked, so a user can check the chat format of a new model before
// spending a run on it (the reference's viz_sft_dataset, in plain text).
import type { Datum } from '../backends/types.js';
import { buildPreferenceDatasets } from '../cookbook/preference/dataset.js';
import { buildChatDatasets } from '../cookbook/supervised/dataset.js';
import { argmax, decisionChoiceDatums, loadDecisionsData, targetVector } from '../cookbook/supervised/decisions/index.js';
import type { Tokenizer } from '../cookbook/tokenizer.js';

const OPEN = '⟦';
const CLOSE = '⟧';

/** A position of the datum: a text token, or one of an image chunk's positions (`image` counts from 1). */
type Position = { token: number } | { image: number; tokens: number };

/**
 * The datum's full sequence (input plus the last target) with the loss weight of each position.
 * Images come from the input's chunks: their targets are 0s, which would decode as text.
 */
function positionsAndWeights(d: Datum): { positions: Position[]; weights: number[] } {
  let images = 0;
  const input = d.model_input.chunks.flatMap((c): Position[] => {
    if (c.type === 'encoded_text') return c.tokens.map((token) => ({ token }));
    const n = c.expected_tokens ?? 0;
    const image = ++images;
    return Array.from({ length: n }, () => ({ image, tokens: n }));
  });
  const targets = d.loss_fn_inputs.target_tokens.data;
  // Token t+1 is the target of position t, so it carries weight w[t]; the first position carries none.
  const positions = targets.length ? [...input, { token: targets[targets.length - 1] }] : input;
  return { positions, weights: [0, ...d.loss_fn_inputs.weights.data] };
}

/** Decoded text with each run of trained tokens wrapped in ⟦…⟧ and each image shown once, as `[image N: k tokens]`. */
export function markTrained(d: Datum, tokenizer: Tokenizer): string {
  const { positions, weights } = positionsAndWeights(d);
  const trained = (i: number) => (weights[i] ?? 0) > 0;
  const imageOf = (i: number) => { const p = positions[i]; return 'image' in p ? p.image : 0; };
  let out = '';
  let start = 0;
  for (let i = 1; i <= positions.length; i++) {
    if (i < positions.length && trained(i) === trained(start) && imageOf(i) === imageOf(start)) continue;
    const first = positions[start];
    const text = 'image' in first
      ? `[image ${first.image}: ${first.tokens} tokens]`
      : tokenizer.decode(positions.slice(start, i).map((p) => ('token' in p ? p.token : 0)));
    out += trained(start) ? `${OPEN}${text}${CLOSE}` : text;
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
  } else if (kind === 'decisions') {
    // The answer token each decision trains (a target_probs row's: its most likely label's).
    const built = await loadDecisionsData(cfg);
    data = decisionChoiceDatums(built.renderer, built.train.slice(0, count).map((e) => [e.decision, e.decision.labels[argmax(targetVector(e))]] as const));
    tokenizer = built.renderer.tokenizer;
    rendererName = built.renderer.renderer.name;
  } else {
    return `(no datum preview for ${kind} runs: their data is sampled during the run)`;
  }
  const header = `renderer ${rendererName}, tokenizer ${tokenizer.name}; ${OPEN}…${CLOSE} marks tokens trained on`;
  return [header, ...data.map((d, i) => `--- datum ${i} (${d.loss_fn_inputs.target_tokens.data.length + 1} tokens)\n${markTrained(d, tokenizer)}`)].join('\n');
}
