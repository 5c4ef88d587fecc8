// `cookbook models`: what the backend in use serves, with each model's real shape where the backend
// reports it (the local engine does), and the hosted service's catalogue (the reference's model
// table): renderers, tokenizer source, LR hint. The catalogue alone, labelled so, when no backend answers.
import { getLoraParamCount, getLr, getModelAttributes, SERVED_MODELS, standsInFor, type ModelAttributes } from '../cookbook/model-info.js';
import { RENDERER_NAMES } from '../cookbook/renderers/registry.js';
import { tokenizerFamilyForModel } from '../cookbook/tokenizer.js';
import type { Served, ServedModel } from './served-models.js';

const available = new Set<string>(RENDERER_NAMES);

const tokenizerSource = (name: string): string => {
  const family = tokenizerFamilyForModel(name);
  return family ? `shipped (${family})` : 'tokenizer_path';
};

const orDash = (f: () => string): string => {
  try {
    return f();
  } catch {
    return '-';
  }
};

const lrHint = (name: string, isLora = true): string => orDash(() => getLr(name, isLora).toPrecision(3));

const catalogueEntry = (name: string): ModelAttributes | undefined => {
  try {
    return getModelAttributes(name);
  } catch {
    return undefined;
  }
};

/** Renderer names, each marked `*` when this project does not render it yet. */
const renderers = (m: ModelAttributes | undefined): string => (m ? m.recommendedRenderers.map((r) => (available.has(r) ? r : `${r}*`)).join(', ') : '-');

const int = (n: number | undefined): string => (n === undefined ? '-' : n.toLocaleString('en-US'));

/** 9_783_360 → 9.78M: parameter counts at a glance. */
export function humanCount(n: number): string {
  const [div, unit] = n >= 1e9 ? [1e9, 'B'] : n >= 1e6 ? [1e6, 'M'] : n >= 1e3 ? [1e3, 'K'] : [1, ''];
  return `${Number((n / div).toPrecision(3))}${unit}`;
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

export function formatCatalogue(): string {
  const rows = [['model', 'size', 'chat', 'tokenizer', 'LoRA LR', 'renderers (first = default)']];
  for (const m of SERVED_MODELS) rows.push([m.name, m.sizeStr, m.isChat ? 'yes' : 'base', tokenizerSource(m.name), lrHint(m.name), renderers(m)]);
  return (
    `${table(rows)}\n\n` +
    '* not rendered by this project yet. tokenizer_path: set the config key tokenizer_path to a local folder\n' +
    "holding the model's tokenizer.json. LoRA LR: the reference's get_lr hint (- where it is not calibrated)."
  );
}

/** The served models' table: the backend's own figures; where it reports none, the catalogue's, marked †. */
function servedTable(models: ServedModel[]): { text: string; fromCatalogue: boolean } {
  let fromCatalogue = false;
  const rows = [['model', 'params', 'layers', 'hidden', 'vocab', 'context', 'tokenizer', 'renderers (first = default)']];
  for (const m of models) {
    const cat = catalogueEntry(m.model_name);
    const borrowed = (v: string | number | undefined) => {
      if (v === undefined || standsInFor(m.model_name)) return '-'; // a stand-in's catalogue row is another model's shape
      fromCatalogue = true;
      return `${v}†`;
    };
    rows.push([
      m.model_name,
      m.num_parameters !== undefined ? humanCount(m.num_parameters) : borrowed(cat?.sizeStr),
      int(m.num_hidden_layers),
      m.hidden_size !== undefined ? int(m.hidden_size) : borrowed(cat?.hiddenSize),
      int(m.vocab_size),
      int(m.max_context_length),
      tokenizerSource(m.model_name),
      renderers(cat),
    ]);
  }
  return { text: table(rows), fromCatalogue };
}

export function formatModels(served: Served, o: { catalogue?: boolean } = {}): string {
  if ('unreachable' in served) {
    return (
      `models (catalogue; engine not reachable at ${served.url}: ${served.unreachable}):\n\n${formatCatalogue()}\n` +
      'The local engine serves its own models (tiny-qwen3, tiny-llama3, checkpoints given with --model), listed here\n' +
      'with their real shapes while it runs: `npx cookbook dev`, or --engine-url / TINKER_BASE_URL for another backend.'
    );
  }
  if (served.models.length === 0) return `${served.url} serves no models.\n\nthe hosted Tinker service's catalogue:\n\n${formatCatalogue()}`;
  const { text, fromCatalogue } = servedTable(served.models);
  const notes: string[] = [];
  const standIns = served.models.filter((m) => standsInFor(m.model_name));
  if (standIns.length) {
    notes.push(
      `${standIns.map((m) => m.model_name).join(', ')}: the engine's built-in models (seeded random weights); tokenizer, renderers and LR hint\n` +
        `are those of the model each stands in for (${standIns.map((m) => `${m.model_name} → ${standsInFor(m.model_name)}`).join(', ')}).`,
    );
  }
  for (const m of served.models) if (m.source === 'checkpoint' && m.checkpoint_dir) notes.push(`${m.model_name}: checkpoint ${m.checkpoint_dir}`);
  if (fromCatalogue) notes.push(`† the catalogue's figure: ${served.url} reports no shape for this model.`);
  const catalogue = o.catalogue
    ? `\n\nthe hosted Tinker service's catalogue (the reference's model table):\n\n${formatCatalogue()}`
    : `\n\nthe hosted Tinker service's catalogue (${SERVED_MODELS.length} models): \`npx cookbook models --catalogue\``;
  return `served by ${served.url}:\n\n${text}${notes.length ? `\n\n${notes.join('\n')}` : ''}${catalogue}`;
}

export function formatModel(name: string, served: Served): string {
  const entry = 'models' in served ? served.models.find((m) => m.model_name === name) : undefined;
  const cat = entry ? catalogueEntry(name) : getModelAttributes(name); // neither served nor catalogued: its error
  const standIn = standsInFor(name);
  const lines: Array<[string, string]> = [['model', name]];
  if (entry) {
    lines.push(['served by', served.url]);
    if (entry.source) lines.push(['source', entry.source === 'builtin' ? "the engine's built-in model (seeded random weights)" : `checkpoint ${entry.checkpoint_dir ?? ''}`.trim()]);
    if (entry.arch) lines.push(['architecture', entry.arch]);
    const known: Array<[string, number | undefined]> = [['layers', entry.num_hidden_layers], ['hidden size', entry.hidden_size], ['vocabulary', entry.vocab_size]];
    for (const [k, v] of known) if (v !== undefined) lines.push([k, int(v)]);
    if (entry.num_parameters !== undefined) lines.push(['parameters', `${int(entry.num_parameters)} (${humanCount(entry.num_parameters)})`]);
    if (entry.max_context_length !== undefined) lines.push(['context', int(entry.max_context_length)]);
  } else {
    lines.push(['served by', 'unreachable' in served ? `(catalogue; engine not reachable at ${served.url}: ${served.unreachable})` : `not by ${served.url} (catalogue)`]);
    if (standIn) lines.push(['size', "the engine's built-in model: its shape is listed while the engine runs"]);
  }
  if (standIn) lines.push(['stands in for', `${standIn} (tokenizer, renderers and LR hints below are its)`]);
  if (cat) {
    // A stand-in's catalogue row describes the model it stands in for, not its own shape.
    if (!standIn) {
      lines.push(['organization', cat.organization], ['version', cat.versionStr], ['size', cat.sizeStr]);
      if (entry?.hidden_size === undefined) lines.push(['hidden size', `${cat.hiddenSize} (catalogue)`]);
    }
    lines.push(['chat', cat.isChat ? 'yes' : 'no (base model)']);
    lines.push(['inputs', ['text', cat.isVl ? 'images' : '', cat.isAudioIn ? 'audio' : ''].filter(Boolean).join(', ')]);
  }
  lines.push(
    ['renderers', renderers(cat)],
    ['tokenizer', tokenizerSource(name)],
    ['LoRA LR hint', lrHint(name)],
    ['full fine-tune LR hint', lrHint(name, false)],
    ['LoRA params at rank 32', orDash(() => getLoraParamCount(name, 32).toLocaleString('en-US'))],
  );
  const w = Math.max(...lines.map(([k]) => k.length));
  return lines.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n');
}
