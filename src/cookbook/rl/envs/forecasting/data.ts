// Prophet Arena in the reference's layout (recipes/forecasting/data.py): one CSV row per snapshot of
// an event, each of the event's markets a binary question; the earliest snapshot of each market is
// kept, and events are split around a date so that no training label comes from after validation
// begins. The reference downloads a pinned CSV from the Hub; here the CSV is a local file (the
// Hub's `subset_data_1200.csv`, or this repository's synthetic data/forecasting/questions.csv).
import { readFileSync } from 'node:fs';
import { DataFormatError } from '../../../errors.js';
import { PyFloat } from '../../../pyjson.js';
import { pySample, pyShuffled } from '../../../python-random.js';
import { compareCodePoints } from '../../../renderers/py-json.js';
import { pyStripWs } from '../../../renderers/py-whitespace.js';
import { CsvFormatError, readCsvDicts, type CsvRow } from './csv.js';
import { parseUtcDatetime, type UtcInstant } from './iso-datetime.js';
import { parseStructured, PyDict, type PyValue } from './structured.js';

export const DATASET_REPOSITORY = 'prophetarena/Prophet-Arena-Subset-1200';
export const DEFAULT_DATASET_REVISION = 'c94b6f450d7fe3b03688799cce1c8b29838b5d96';
export const DEFAULT_SPLIT_DATE = '2025-10-20';
export const DEFAULT_MAX_TRAIN_QUESTIONS = 1024;
export const DEFAULT_MAX_VALIDATION_QUESTIONS = 256;

export const REQUIRED_COLUMNS = ['submission_id', 'event_ticker', 'title', 'snapshot_time', 'close_time', 'market_outcome', 'category', 'markets', 'sources'] as const;

/** One binary market at one snapshot. */
export interface ForecastExample {
  submission_id: string;
  event_ticker: string;
  event_title: string;
  market: string;
  reference_material: string;
  resolution_criteria: string;
  snapshot_time: UtcInstant;
  close_time: UtcInstant;
  category: string;
  outcome: 0 | 1;
}

export interface ForecastSplit {
  train: ForecastExample[];
  validation: ForecastExample[];
  split_time: UtcInstant;
  excluded_crossing_events: number;
}

/** Errors name the file, the line the row starts on, and the column. */
class RowContext {
  constructor(
    readonly shownAs: string,
    readonly row: CsvRow,
  ) {}

  fail(field: string, message: string): never {
    throw new DataFormatError(`${this.shownAs}:${this.row.line}: ${field}: ${message}`);
  }

  /** `row.get(key, "").strip()`, refused when empty. */
  text(key: string): string {
    const raw = this.row.values.get(key);
    if (raw === null || raw === undefined) this.fail(key, 'missing (the row has fewer cells than the header)');
    const value = pyStripWs(raw);
    if (!value) this.fail(key, 'expected a non-empty value');
    return value;
  }

  structured(key: string): PyValue {
    try {
      return parseStructured(this.text(key));
    } catch (err) {
      if (err instanceof DataFormatError) throw err;
      this.fail(key, `invalid structured value: neither JSON nor a Python literal (${(err as Error).message})`);
    }
  }

  datetime(key: string): UtcInstant {
    const value = this.text(key);
    try {
      return parseUtcDatetime(value);
    } catch (err) {
      this.fail(key, `invalid ISO datetime ${JSON.stringify(value)} (${(err as Error).message})`);
    }
  }
}

const isInt = (v: PyValue | undefined): v is bigint => typeof v === 'bigint';

/** The sources as numbered "title\nsummary" blocks, by (ranking, title); blank sources dropped. */
export function formatSources(rawSources: PyValue[], field: (index: number, message: string) => never): string {
  const sources: Array<{ ranking: bigint; title: string; summary: string }> = [];
  rawSources.forEach((raw, index) => {
    if (!(raw instanceof PyDict)) field(index, 'expected an object');
    const title = raw.map.get('title');
    const summary = raw.map.get('summary');
    const ranking = raw.map.has('ranking') ? raw.map.get('ranking')! : BigInt(index + 1);
    if (typeof title !== 'string' || typeof summary !== 'string') field(index, 'expected title and summary strings');
    const [t, s] = [pyStripWs(title), pyStripWs(summary)];
    if (t || s) sources.push({ ranking: isInt(ranking) ? ranking : BigInt(index + 1), title: t, summary: s });
  });
  sources.sort((a, b) => (a.ranking < b.ranking ? -1 : a.ranking > b.ranking ? 1 : compareCodePoints(a.title, b.title)));
  return sources.map((s, i) => `${i + 1}. ${s.title}\n${s.summary}`).join('\n\n');
}

/** `raw not in (0, 1)` with bools refused, then int(). */
function binaryOutcome(raw: PyValue | undefined): 0 | 1 | null {
  if (isInt(raw) && (raw === 0n || raw === 1n)) return raw === 1n ? 1 : 0;
  if (raw instanceof PyFloat && (raw.value === 0 || raw.value === 1)) return raw.value === 1 ? 1 : 0;
  return null;
}

function rowToExamples(ctx: RowContext): ForecastExample[] {
  const submission_id = ctx.text('submission_id');
  const event_ticker = ctx.text('event_ticker');
  const category = ctx.text('category');
  const markets = ctx.structured('markets');
  if (!Array.isArray(markets)) ctx.fail('markets', 'expected a JSON list');
  const outcomes = ctx.structured('market_outcome');
  if (!(outcomes instanceof PyDict)) ctx.fail('market_outcome', 'expected a JSON object');
  if (!markets.length || !markets.every((m) => typeof m === 'string' && pyStripWs(m))) ctx.fail('markets', 'expected non-empty string markets');
  const names = markets as string[];
  const nameSet = new Set(names);
  if (outcomes.otherKeys > 0 || nameSet.size !== outcomes.map.size || ![...nameSet].every((m) => outcomes.map.has(m))) {
    ctx.fail('market_outcome', `its keys disagree with markets ${JSON.stringify([...nameSet])}`);
  }
  const event_title = ctx.text('title');
  const rawSources = ctx.structured('sources');
  if (!Array.isArray(rawSources)) ctx.fail('sources', 'expected a JSON list');
  const reference_material = formatSources(rawSources, (i, message) => ctx.fail(`sources[${i}]`, message));
  if (!reference_material) ctx.fail('sources', 'expected at least one source with a title or summary');
  const snapshot_time = ctx.datetime('snapshot_time');
  const close_time = ctx.datetime('close_time');
  if (snapshot_time.compare(close_time) >= 0) ctx.fail('snapshot_time', 'must precede close_time');
  return names.map((market) => {
    const outcome = binaryOutcome(outcomes.map.get(market));
    if (outcome === null) ctx.fail('market_outcome', `expected a binary outcome (0 or 1) for ${JSON.stringify(market)}`);
    return {
      submission_id,
      event_ticker,
      event_title,
      market,
      reference_material,
      resolution_criteria: `The market resolves YES if this condition occurs: ${market}.`,
      snapshot_time,
      close_time,
      category,
      outcome,
    };
  });
}

const byTimeTickerMarket = (a: ForecastExample, b: ForecastExample) =>
  a.snapshot_time.compare(b.snapshot_time) || compareCodePoints(a.event_ticker, b.event_ticker) || compareCodePoints(a.market, b.market);

/** What must not change between snapshots of a market. */
const stableFields = (e: ForecastExample) => JSON.stringify([e.event_title, e.market, e.resolution_criteria, String(e.close_time.us), e.category, e.outcome]);

/** The first snapshot by (snapshot_time, submission_id). */
function earliest(snapshots: ForecastExample[]): ForecastExample {
  const key = (e: ForecastExample, best: ForecastExample) => e.snapshot_time.compare(best.snapshot_time) || compareCodePoints(e.submission_id, best.submission_id);
  return snapshots.reduce((best, e) => (key(e, best) < 0 ? e : best));
}

function readCsvText(file: string, shownAs: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    throw new DataFormatError(`${shownAs}: cannot read (${(err as Error).message})`);
  }
  try {
    // encoding="utf-8": invalid bytes are an error, and a BOM stays part of the first header.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new DataFormatError(`${shownAs}: not valid UTF-8`);
  }
}

/** `load_prophet_arena_examples`: the earliest snapshot of each (event, market), by snapshot time. */
export function loadProphetArenaExamples(file: string, shownAs = file): ForecastExample[] {
  let parsed: ReturnType<typeof readCsvDicts>;
  try {
    parsed = readCsvDicts(readCsvText(file, shownAs));
  } catch (err) {
    if (err instanceof CsvFormatError) throw new DataFormatError(`${shownAs}:${err.line}: ${err.message}`);
    throw err;
  }
  const missing = REQUIRED_COLUMNS.filter((c) => !parsed.fieldnames?.includes(c)).sort();
  if (missing.length) throw new DataFormatError(`${shownAs}:1: the header is missing columns ${JSON.stringify(missing)}`);
  const byMarket = new Map<string, Array<{ example: ForecastExample; line: number }>>();
  for (const row of parsed.rows) {
    for (const example of rowToExamples(new RowContext(shownAs, row))) {
      const key = JSON.stringify([example.event_ticker, example.market]);
      const list = byMarket.get(key);
      if (list) list.push({ example, line: row.line });
      else byMarket.set(key, [{ example, line: row.line }]);
    }
  }
  if (byMarket.size === 0) throw new DataFormatError(`${shownAs}: no Prophet Arena examples`);
  const examples: ForecastExample[] = [];
  for (const snapshots of byMarket.values()) {
    const [first] = snapshots;
    const changed = snapshots.find((s) => stableFields(s.example) !== stableFields(first.example));
    if (changed) {
      const e = changed.example;
      throw new DataFormatError(
        `${shownAs}:${changed.line}: market ${e.event_ticker}:${e.market} changes across snapshots (title, close_time, category or market_outcome differ from line ${first.line})`,
      );
    }
    examples.push(earliest(snapshots.map((s) => s.example)));
  }
  return examples.sort(byTimeTickerMarket);
}

/** `_sample`: all of them when within the cap, else `random.Random(seed).sample(examples, cap)`. */
function sampleCapped(examples: ForecastExample[], cap: number | null, seed: number): ForecastExample[] {
  if (cap !== null && cap <= 0) throw new DataFormatError('question caps must be positive or null');
  if (cap === null || examples.length <= cap) return [...examples];
  return pySample(examples, cap, seed);
}

export interface SplitOptions {
  splitTime: UtcInstant;
  maxTrainQuestions: number | null;
  maxValidationQuestions: number | null;
  seed: number;
}

/** `load_prophet_arena_split`: events on one side of the split each; events open across it dropped. */
export function loadProphetArenaSplit(file: string, opts: SplitOptions, shownAs = file): ForecastSplit {
  const examples = loadProphetArenaExamples(file, shownAs);
  const starts = new Map<string, UtcInstant>();
  const closes = new Map<string, UtcInstant>();
  for (const e of examples) {
    const start = starts.get(e.event_ticker);
    if (!start || e.snapshot_time.compare(start) < 0) starts.set(e.event_ticker, e.snapshot_time);
    const close = closes.get(e.event_ticker);
    if (!close || e.close_time.compare(close) > 0) closes.set(e.event_ticker, e.close_time);
  }
  const trainEvents = new Set([...closes].filter(([, close]) => close.compare(opts.splitTime) < 0).map(([t]) => t));
  const validationEvents = new Set([...starts].filter(([, start]) => start.compare(opts.splitTime) >= 0).map(([t]) => t));
  const excluded = [...starts.keys()].filter((t) => !trainEvents.has(t) && !validationEvents.has(t)).length;
  const train = pyShuffled(
    sampleCapped(
      examples.filter((e) => trainEvents.has(e.event_ticker)),
      opts.maxTrainQuestions,
      opts.seed,
    ),
    opts.seed,
  );
  const validation = sampleCapped(
    examples.filter((e) => validationEvents.has(e.event_ticker)),
    opts.maxValidationQuestions,
    opts.seed + 1,
  ).sort(byTimeTickerMarket);
  if (!train.length || !validation.length) {
    throw new DataFormatError(`${shownAs}: empty temporal split around ${opts.splitTime.isoformat()}: ${train.length} train and ${validation.length} validation questions`);
  }
  return { train, validation, split_time: opts.splitTime, excluded_crossing_events: excluded };
}
