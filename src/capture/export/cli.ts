// `cookbook capture export --format sft|comparisons --out FILE [filters]`: a dataset from the capture
// store that `cookbook train sl` (sft: conversations with their exact tokens) or `cookbook train dpo`
// (comparisons) reads as it is. See docs/capture.md.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from '../../cookbook/config/overrides.js';

export const CAPTURE_EXPORT_USAGE = `  capture export --format sft|comparisons --out FILE
        [--data-dir DIR | --url U]          the store (default $COOKBOOK_CAPTURE_DIR, ~/.cache/durable-cookbook/capture)
        [--run ID]… [--purpose P]           rows of these runs / of this purpose (serve, rollout, …)
        [--since T] [--until T]             capture time, ISO 8601 or Unix seconds
        [--tool-use]                        only exchanges that used tools
        [--min-reward X] [--reward-key K]   only rows whose reward (metadata K, or a K annotation; default reward) ≥ X
        [--label L | --label K=V]           only rows whose metadata label (or K, or such an annotation) is L (V: JSON)
      sft: one record per session (exchanges joined while each prompt extends the last, token for token):
      messages + tokens + weights, trained as they are by \`cookbook train sl\` (dataset.file_path).
      comparisons: per prompt, the best-rewarded sample chosen over the worst, for \`cookbook train dpo\`.`;

const OPTIONS = {
  format: { type: 'string' },
  out: { type: 'string' },
  'data-dir': { type: 'string' },
  url: { type: 'string' },
  run: { type: 'string', multiple: true },
  purpose: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  'tool-use': { type: 'boolean', default: false },
  'min-reward': { type: 'string' },
  'reward-key': { type: 'string' },
  label: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

function seconds(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() !== '' && Number.isFinite(n)) return n;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new ConfigError(`--${flag}: expected an ISO 8601 time or Unix seconds, got "${value}"`);
  return t / 1000;
}

function labelOf(value: string | undefined): { key: string; value: import('../rows.js').JsonValue } | undefined {
  if (value === undefined) return undefined;
  const eq = value.indexOf('=');
  if (eq < 0) return { key: 'label', value };
  if (eq === 0) throw new ConfigError(`--label: expected LABEL or KEY=VALUE, got "${value}"`);
  const raw = value.slice(eq + 1);
  let parsed: import('../rows.js').JsonValue;
  try {
    parsed = JSON.parse(raw) as import('../rows.js').JsonValue;
  } catch {
    parsed = raw; // a bare word is a string
  }
  return { key: value.slice(0, eq), value: parsed };
}

export async function captureExportCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: false });
  if (values.help) {
    console.log(CAPTURE_EXPORT_USAGE);
    return 0;
  }
  const { EXPORT_FORMATS, writeDataset } = await import('./dataset.js');
  const format = values.format as (typeof EXPORT_FORMATS)[number];
  if (!EXPORT_FORMATS.includes(format)) throw new ConfigError(`capture export: --format must be one of ${EXPORT_FORMATS.join(', ')}${values.format ? `, not "${values.format}"` : ''}`);
  if (!values.out) throw new ConfigError('capture export: --out FILE is required');
  const minReward = values['min-reward'] === undefined ? undefined : Number(values['min-reward']);
  if (minReward !== undefined && !Number.isFinite(minReward)) throw new ConfigError(`--min-reward: expected a number, got "${values['min-reward']}"`);
  const filter = {
    runIds: values.run,
    purpose: values.purpose,
    since: seconds('since', values.since),
    until: seconds('until', values.until),
    toolUse: values['tool-use'],
    minReward,
    label: labelOf(values.label),
  };
  const [{ captureStoreUrl }, { CaptureStoreClient }] = await Promise.all([import('../target.js'), import('../store/client.js')]);
  if (values['data-dir'] !== undefined && values.url !== undefined) throw new ConfigError('capture export: give --data-dir or --url, not both');
  const client = new CaptureStoreClient(await captureStoreUrl(values.url ?? values['data-dir']));
  // The store narrows by run, purpose and time; the rest is decided here, on the rows themselves.
  const runs = values.run?.length ? values.run : [undefined];
  const narrow = (run_id: string | undefined) => Object.fromEntries(Object.entries({ run_id, purpose: values.purpose, since: filter.since, until: filter.until }).filter(([, v]) => v !== undefined));
  const rows = (await Promise.all(runs.map((run_id) => client.allRows(narrow(run_id))))).flat();
  const kinds = [values['reward-key'] ?? 'reward', ...(filter.label ? [filter.label.key] : [])];
  const annotations = (await Promise.all(kinds.map((kind) => allAnnotations(client, kind)))).flat();
  const out = resolve(values.out);
  const summary = writeDataset(rows, annotations, { format, out, filter, rewardKey: values['reward-key'] });
  const skipped = Object.entries(summary.skipped).filter(([, n]) => n > 0).map(([why, n]) => `${n} ${why}`);
  console.log(`${out}: ${summary.records} ${format} records from ${summary.rows} rows${skipped.length ? ` (left out: ${skipped.join(', ')})` : ''}`);
  return summary.records > 0 ? 0 : 1;
}

async function allAnnotations(client: import('../store/client.js').CaptureStoreClient, kind: string): Promise<import('../rows.js').Annotation[]> {
  const out: import('../rows.js').Annotation[] = [];
  let cursor = 0;
  for (;;) {
    const page = await client.annotations({ kind }, { cursor, limit: 1000 });
    out.push(...page.annotations);
    if (page.next_cursor === null) return out;
    cursor = page.next_cursor;
  }
}
