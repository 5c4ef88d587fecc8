// `cookbook models`: the served models with their renderers, tokenizer source and LR hint.
import { getLoraParamCount, getLr, getModelAttributes, SERVED_MODELS, type ModelAttributes } from '../cookbook/model-info.js';
import { RENDERER_NAMES } from '../cookbook/renderers/registry.js';
import { tokenizerFamilyForModel } from '../cookbook/tokenizer.js';

const available = new Set<string>(RENDERER_NAMES);

const tokenizerSource = (m: ModelAttributes): string => {
  const family = tokenizerFamilyForModel(m.name);
  return family ? `shipped (${family})` : 'tokenizer_path';
};

const lrHint = (name: string): string => {
  try {
    return getLr(name).toPrecision(3);
  } catch {
    return '-';
  }
};

/** Renderer names, each marked `*` when this project does not render it yet. */
const renderers = (m: ModelAttributes): string => m.recommendedRenderers.map((r) => (available.has(r) ? r : `${r}*`)).join(', ');

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

export function formatModels(): string {
  const rows = [['model', 'size', 'chat', 'tokenizer', 'LoRA LR', 'renderers (first = default)']];
  for (const m of SERVED_MODELS) {
    rows.push([m.name, m.sizeStr, m.isChat ? 'yes' : 'base', tokenizerSource(m), lrHint(m.name), renderers(m)]);
  }
  return (
    `${table(rows)}\n\n` +
    '* not rendered by this project yet. tokenizer_path: set the config key tokenizer_path to a local folder\n' +
    "holding the model's tokenizer.json. LoRA LR: the reference's get_lr hint (- where it is not calibrated)."
  );
}

export function formatModel(name: string): string {
  const m = getModelAttributes(name);
  const lora = (() => {
    try {
      return getLoraParamCount(name, 32).toLocaleString('en-US');
    } catch {
      return '-';
    }
  })();
  const lines: Array<[string, string]> = [
    ['model', m.name],
    ['organization', m.organization],
    ['version', m.versionStr],
    ['size', m.sizeStr],
    ['chat', m.isChat ? 'yes' : 'no (base model)'],
    ['inputs', ['text', m.isVl ? 'images' : '', m.isAudioIn ? 'audio' : ''].filter(Boolean).join(', ')],
    ['renderers', renderers(m)],
    ['tokenizer', tokenizerSource(m)],
    ['hidden size', String(m.hiddenSize)],
    ['LoRA LR hint', lrHint(name)],
    ['full fine-tune LR hint', (() => { try { return getLr(name, false).toPrecision(3); } catch { return '-'; } })()],
    ['LoRA params at rank 32', lora],
  ];
  const w = Math.max(...lines.map(([k]) => k.length));
  return lines.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
}
