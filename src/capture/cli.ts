// `cookbook capture …`: the capture store from a terminal.
//   serve   run the store daemon in the foreground (ensureCaptureStore starts it detached otherwise)
//   query   wire rows (or --annotations) matching filters, as a table or --json (one JSON object a line)
//   tail    follow the store's stream: each row as it is committed
//   stats   counts, bytes, limits, rows removed by retention and the size cap, redactions
import { parseArgs } from 'node:util';
import type { Annotation, StreamEvent, WireRow } from './rows.js';
import { CaptureStoreClient, defaultCaptureDir, ensureCaptureStore } from './store/client.js';
import { serveDaemon } from './store/daemon.js';
import { checkMetaPath, type AnnotationFilter, type RowFilter } from './store/query.js';

export const CAPTURE_USAGE = `  capture serve [--data-dir DIR]      the capture store daemon: SQLite (WAL) in DIR, HTTP on 127.0.0.1; DIR:
        [--port N] [--max-bytes SIZE]       $COOKBOOK_CAPTURE_DIR or ~/.cache/durable-cookbook/capture;
        [--retention-days N]                oldest rows removed past SIZE (500MB, 2GiB), rows older than N days removed;
        [--idle-shutdown-minutes N]         exit after N minutes without requests
  capture query [filters] [--json]    captured rows as a table (--json: one a line); filters: --run-id, --split,
        [--limit N (50)] [--cursor N]       --purpose, --iteration N or A..B, --group N, --traj N, --since/--until T
        [--annotations [--kind K]]          (ISO time, Unix seconds, or ago: 30m, 2h, 7d), --meta path=value,
                                            --has path, --tool-use, --label L; the store: --data-dir DIR or --url U
  capture tail [--run-id R] [--json]  follow new rows as they are stored (--cursor N: after N; --count N: stop after N)
  capture stats [--json]              the store's counts, size, limits, rows removed, redactions
  capture export --format sft|comparisons --out FILE [filters]   a dataset \`train sl\` / \`train dpo\` reads as it
                                      is (filters: --run, --since/--until, --tool-use, --min-reward, --label; --help)`;

const STORE_OPTIONS = {
  'data-dir': { type: 'string' },
  url: { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

const UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

export function parseSize(raw: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(raw.trim());
  const unit = match ? UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) throw new Error(`--max-bytes: "${raw}" is not a size (e.g. 500000000, 500MB, 2GiB)`);
  return Math.floor(Number(match[1]) * unit);
}

function parseNumber(flag: string, raw: string | undefined, integer = true): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) throw new Error(`${flag}: "${raw}" is not ${integer ? 'an integer' : 'a number'}`);
  return value;
}

const AGO_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** ISO time, Unix seconds, or a time ago (`30m`, `2h`, `7d`) -> Unix seconds. */
export function parseTime(flag: string, raw: string | undefined, now = Date.now() / 1000): number | undefined {
  if (raw === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw);
  const ago = /^(\d+(?:\.\d+)?)([smhd])$/.exec(raw.trim());
  if (ago) return now - Number(ago[1]) * AGO_UNITS[ago[2]];
  const ms = Date.parse(raw);
  if (Number.isNaN(ms)) throw new Error(`${flag}: "${raw}" is neither an ISO time (2026-11-29T18:00Z), Unix seconds, nor a time ago (30m, 2h, 7d)`);
  return ms / 1000;
}

async function client(values: { 'data-dir'?: string; url?: string }): Promise<CaptureStoreClient> {
  return new CaptureStoreClient(values.url ?? (await ensureCaptureStore(values['data-dir'] ?? defaultCaptureDir())));
}

export async function captureCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'serve':
      return serve(rest);
    case 'query':
      return query(rest);
    case 'tail':
      return tail(rest);
    case 'stats':
      return stats(rest);
    case 'export':
      return (await import('./export/cli.js')).captureExportCommand(rest);
    default:
      console.error(`usage:\n${CAPTURE_USAGE}`);
      return 2;
  }
}

async function serve(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { 'data-dir': { type: 'string' }, port: { type: 'string' }, 'max-bytes': { type: 'string' }, 'retention-days': { type: 'string' }, 'idle-shutdown-minutes': { type: 'string' } },
  });
  return serveDaemon({
    dataDir: values['data-dir'] ?? defaultCaptureDir(),
    port: parseNumber('--port', values.port),
    maxBytes: values['max-bytes'] === undefined ? null : parseSize(values['max-bytes']),
    retentionDays: parseNumber('--retention-days', values['retention-days'], false) ?? null,
    idleShutdownMinutes: parseNumber('--idle-shutdown-minutes', values['idle-shutdown-minutes'], false) ?? null,
  });
}

export function rowFilterFromFlags(values: Record<string, string | boolean | string[] | undefined>): RowFilter {
  const filter: RowFilter = {};
  const str = (key: string) => values[key] as string | undefined;
  if (str('run-id') !== undefined) filter.run_id = str('run-id');
  if (str('split') !== undefined) filter.split = str('split');
  if (str('purpose') !== undefined) filter.purpose = str('purpose');
  const iteration = str('iteration');
  if (iteration !== undefined) {
    const range = /^(-?\d*)\.\.(-?\d*)$/.exec(iteration);
    if (range) {
      if (range[1] !== '') filter.iteration_min = parseNumber('--iteration', range[1]);
      if (range[2] !== '') filter.iteration_max = parseNumber('--iteration', range[2]);
    } else filter.iteration = parseNumber('--iteration', iteration);
  }
  filter.group_idx = parseNumber('--group', str('group'));
  filter.traj_idx = parseNumber('--traj', str('traj'));
  filter.since = parseTime('--since', str('since'));
  filter.until = parseTime('--until', str('until'));
  const meta: Record<string, string> = {};
  for (const pair of (values.meta as string[] | undefined) ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--meta: "${pair}" is not path=value`);
    meta[checkMetaPath(pair.slice(0, eq))] = pair.slice(eq + 1);
  }
  if (values['tool-use']) meta.tool_use = 'true';
  if (str('label') !== undefined) meta.label = str('label') as string;
  if (Object.keys(meta).length > 0) filter.meta = meta;
  const has = values.has as string[] | undefined;
  if (has && has.length > 0) filter.has = has.map(checkMetaPath);
  for (const key of Object.keys(filter) as Array<keyof RowFilter>) if (filter[key] === undefined) delete filter[key];
  return filter;
}

async function query(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...STORE_OPTIONS,
      'run-id': { type: 'string' },
      split: { type: 'string' },
      purpose: { type: 'string' },
      iteration: { type: 'string' },
      group: { type: 'string' },
      traj: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      meta: { type: 'string', multiple: true },
      has: { type: 'string', multiple: true },
      'tool-use': { type: 'boolean', default: false },
      label: { type: 'string' },
      annotations: { type: 'boolean', default: false },
      kind: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
    },
  });
  const store = await client(values);
  const limit = parseNumber('--limit', values.limit) ?? 50;
  const cursor = parseNumber('--cursor', values.cursor) ?? 0;
  if (values.annotations) {
    const filter: AnnotationFilter = { run_id: values['run-id'], kind: values.kind, since: parseTime('--since', values.since), until: parseTime('--until', values.until) };
    for (const key of Object.keys(filter) as Array<keyof AnnotationFilter>) if (filter[key] === undefined) delete filter[key];
    const { annotations } = await store.annotations(filter, { cursor, limit });
    console.log(values.json ? annotations.map((a) => JSON.stringify(a)).join('\n') : formatAnnotations(annotations));
    return 0;
  }
  const rows = await store.allRows(rowFilterFromFlags(values), limit, cursor);
  if (values.json) {
    if (rows.length > 0) console.log(rows.map((r) => JSON.stringify(r)).join('\n'));
  } else console.log(formatRows(rows));
  return 0;
}

async function tail(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { ...STORE_OPTIONS, 'run-id': { type: 'string' }, cursor: { type: 'string' }, count: { type: 'string' } } });
  const store = await client(values);
  const count = parseNumber('--count', values.count);
  const cursor = parseNumber('--cursor', values.cursor) ?? (await store.stats()).cursor;
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let seen = 0;
  if (!values.json) console.error(`following ${store.baseUrl} from cursor ${cursor} (ctrl-c to stop)`);
  for await (const event of store.stream({ cursor, runId: values['run-id'], signal: controller.signal })) {
    console.log(values.json ? JSON.stringify(event) : formatEvent(event));
    seen += 1;
    if (count !== undefined && seen >= count) {
      controller.abort();
      break;
    }
  }
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  return 0;
}

async function stats(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: STORE_OPTIONS });
  const s = await (await client(values)).stats();
  if (values.json) {
    console.log(JSON.stringify(s, null, 2));
    return 0;
  }
  const mb = (n: number | null) => (n === null ? 'none' : `${(n / 1e6).toFixed(1)} MB`);
  console.log(
    [
      `store           ${s.path}`,
      `rows            ${s.wire_rows} wire rows, ${s.annotations} annotations, ${s.runs} runs (last cursor ${s.cursor})`,
      `size            ${mb(s.used_bytes)} used, ${mb(s.file_bytes)} on disk (cap: ${mb(s.max_bytes)})`,
      `retention       ${s.retention_days === null ? 'none' : `${s.retention_days} days`}`,
      `removed         ${s.removed.retention} by retention, ${s.removed.cap} by the size cap`,
      `redacted        ${s.redacted} credentials`,
      `this daemon     pid ${s.daemon.pid}, ${s.daemon.inserted} rows inserted, ${s.daemon.deduped} deduped, ${s.daemon.refused} batches refused, ${s.daemon.streams} streams open`,
    ].join('\n'),
  );
  return 0;
}

const iso = (seconds: number | null) => (seconds === null ? '-' : new Date(seconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z'));
const cell = (v: unknown) => (v === null || v === undefined ? '-' : String(v));

function meanLogprob(row: WireRow): string {
  if (!row.logprobs || row.logprobs.length === 0) return '-';
  return (row.logprobs.reduce((a, b) => a + b, 0) / row.logprobs.length).toFixed(3);
}

function metaSummary(metadata: unknown): string {
  if (metadata === null || typeof metadata !== 'object') return cell(metadata);
  const text = Object.keys(metadata).join(',');
  return text.length > 40 ? `${text.slice(0, 39)}…` : text;
}

export function formatRows(rows: WireRow[]): string {
  if (rows.length === 0) return '(no rows)';
  const header = ['cursor', 'run', 'iter', 'group', 'traj', 'purpose', 'prompt', 'sampled', 'mean lp', 'created', 'metadata'];
  const lines = rows.map((r) => [
    String(r.cursor),
    r.run_id,
    cell(r.iteration),
    cell(r.group_idx),
    cell(r.traj_idx),
    cell(r.purpose),
    cell(r.prompt_tokens?.length),
    cell(r.sampled_tokens?.length),
    meanLogprob(r),
    iso(r.created_at),
    metaSummary(r.metadata),
  ]);
  return table([header, ...lines]);
}

function formatAnnotations(annotations: Annotation[]): string {
  if (annotations.length === 0) return '(no annotations)';
  return table([['cursor', 'run', 'kind', 'event', 'created', 'payload'], ...annotations.map((a) => [String(a.cursor), a.run_id, cell(a.kind), a.event_id, iso(a.created_at), metaSummary(a.payload)])]);
}

function formatEvent(event: StreamEvent): string {
  if (event.type === 'annotation') {
    const a = event.annotation;
    return `${a.cursor}  annotation  run=${a.run_id} kind=${cell(a.kind)} event=${a.event_id}`;
  }
  const r = event.row;
  return `${r.cursor}  wire_row    run=${r.run_id} iter=${cell(r.iteration)} group=${cell(r.group_idx)} traj=${cell(r.traj_idx)} prompt=${cell(r.prompt_tokens?.length)} sampled=${cell(r.sampled_tokens?.length)} mean_lp=${meanLogprob(r)}`;
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n');
}
