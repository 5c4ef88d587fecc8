/**
 * The capture store's rows (tinker-cookbook 0.6.1 `capture/store/schema.py`), declared once: the column
 * specs below render the store's SQLite tables, and the zod schemas validate what producers send.
 *
 * Two kinds of row share one monotone `cursor` (assigned by the store, in insert order, so a stream can
 * interleave them exactly):
 * - a **wire row**: one sampled sequence with its run coordinates (`run_id`, `iteration`, `group_idx`,
 *   `traj_idx`, ...), `prompt_tokens`, `sampled_tokens`, `logprobs` and free-form `metadata` JSON; deduped on
 *   (`sampling_session_id`, `seq_id`, `sample_idx`) when all three are non-null, so a resent batch is
 *   counted, not stored twice;
 * - an **annotation**: a free-form event (`kind`, `payload` JSON) deduped on `event_id`.
 *
 * Producers build `WireRowInput` / `AnnotationInput` objects (no `cursor`) and hand them to a
 * `CaptureExporter` (exporter.ts) as `CaptureRecord`s; readers get `WireRow` / `Annotation` back from the
 * store. `created_at` is Unix seconds (a float, as the reference's `time.time()`); `nowSeconds()` gives it.
 * A missing `run_id` is stored as `unattributed`, as the reference does.
 */
import { z } from 'zod';

export type ColumnKind = 'string' | 'int32' | 'int64' | 'float64' | 'json' | 'int32[]' | 'float32[]';

export interface Column {
  name: string;
  kind: ColumnKind;
  nullable: boolean;
}

const col = (name: string, kind: ColumnKind, nullable = true): Column => ({ name, kind, nullable });

/** Wire rows' columns, in the reference's order. */
export const WIRE_ROW_COLUMNS: readonly Column[] = [
  col('cursor', 'int64', false),
  col('run_id', 'string', false),
  col('run_attempt', 'int32'),
  col('split', 'string'),
  col('iteration', 'int32'),
  col('group_idx', 'int32'),
  col('traj_idx', 'int32'),
  col('purpose', 'string'),
  col('sampling_session_id', 'string'),
  col('seq_id', 'int64'),
  col('sample_idx', 'int32'),
  col('policy_version', 'string'),
  col('created_at', 'float64'),
  col('prompt_tokens', 'int32[]'),
  col('sampled_tokens', 'int32[]'),
  col('logprobs', 'float32[]'),
  col('metadata', 'json'),
];

/** Annotations' columns, in the reference's order. */
export const ANNOTATION_COLUMNS: readonly Column[] = [
  col('cursor', 'int64', false),
  col('event_id', 'string', false),
  col('run_id', 'string', false),
  col('kind', 'string'),
  col('payload', 'json'),
  col('created_at', 'float64'),
];

/** Columns stored as JSON text (lists and free-form JSON): SQLite has no type for them. */
export function jsonEncodedColumns(columns: readonly Column[]): string[] {
  return columns.filter((c) => c.kind === 'json' || c.kind.endsWith('[]')).map((c) => c.name);
}

/** The name SQLite keeps a row's `run_id` under when its producer gave none. */
export const UNATTRIBUTED_RUN = 'unattributed';

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const int32 = z.number().int().min(INT32_MIN).max(INT32_MAX);
// JavaScript numbers hold integers exactly only up to 2^53; a larger seq_id would be silently rounded.
const int64 = z.number().refine(Number.isSafeInteger, 'must be an integer within ±2^53 (a JavaScript safe integer)');
const float = z.number().refine(Number.isFinite, 'must be a finite number');
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Plain JSON, walked once (zod's own z.json() is a recursive union, ~50x slower on the enqueue path). */
function isJsonValue(value: unknown, depth = 0): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (depth > 64 || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.every((item) => isJsonValue(item, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key in value) if (!isJsonValue((value as Record<string, unknown>)[key], depth + 1)) return false;
  return true;
}
const jsonValue = z.custom<JsonValue>((value) => isJsonValue(value), 'must be plain JSON (finite numbers, strings, booleans, null, lists, objects; at most 64 levels deep)');

/**
 * A list of numbers checked in one loop: token lists run to tens of thousands, and an element-wise
 * zod array costs ~100x more on the exporter's enqueue, which is on the sampling path. The list is
 * kept as given (not copied): a producer must not change it after handing it over.
 */
// Each list kind has its own loop (not one loop calling a predicate): a call site shared by two
// predicates is polymorphic, and V8 then no longer inlines it.
function firstNonToken(list: unknown[]): number {
  for (let i = 0; i < list.length; i++) {
    const x = list[i];
    if (typeof x !== 'number' || !Number.isInteger(x) || x < INT32_MIN || x > INT32_MAX) return i;
  }
  return -1;
}

function firstNonFinite(list: unknown[]): number {
  for (let i = 0; i < list.length; i++) {
    const x = list[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) return i;
  }
  return -1;
}

function numberList(one: string, many: string, firstBad: (list: unknown[]) => number) {
  return z.custom<number[]>().superRefine((value, ctx) => {
    if (!Array.isArray(value)) {
      ctx.addIssue({ code: 'custom', message: `must be a list of ${many}` });
      return;
    }
    const i = firstBad(value);
    if (i >= 0) {
      const got = typeof value[i] === 'number' ? String(value[i]) : (JSON.stringify(value[i]) ?? String(value[i]));
      ctx.addIssue({ code: 'custom', path: [i], message: `must be ${one}, got ${got}` });
    }
  });
}
const tokenList = numberList('a 32-bit integer', '32-bit integers', firstNonToken);
const logprobList = numberList('a finite number', 'finite numbers', firstNonFinite);

export const wireRowInputSchema = z.strictObject({
  run_id: z.string().nullish(),
  run_attempt: int32.nullish(),
  split: z.string().nullish(),
  iteration: int32.nullish(),
  group_idx: int32.nullish(),
  traj_idx: int32.nullish(),
  purpose: z.string().nullish(),
  sampling_session_id: z.string().nullish(),
  seq_id: int64.nullish(),
  sample_idx: int32.nullish(),
  policy_version: z.string().nullish(),
  created_at: float.nullish(),
  prompt_tokens: tokenList.nullish(),
  sampled_tokens: tokenList.nullish(),
  logprobs: logprobList.nullish(),
  metadata: jsonValue.nullish(),
});

export const annotationInputSchema = z.strictObject({
  event_id: z.string().min(1, 'must be a non-empty string'),
  run_id: z.string().nullish(),
  kind: z.string().nullish(),
  payload: jsonValue.nullish(),
  created_at: float.nullish(),
});

export type WireRowInput = z.infer<typeof wireRowInputSchema>;
export type AnnotationInput = z.infer<typeof annotationInputSchema>;

/** A wire row as the store returns it: every column present, `null` where absent. */
export interface WireRow {
  cursor: number;
  run_id: string;
  run_attempt: number | null;
  split: string | null;
  iteration: number | null;
  group_idx: number | null;
  traj_idx: number | null;
  purpose: string | null;
  sampling_session_id: string | null;
  seq_id: number | null;
  sample_idx: number | null;
  policy_version: string | null;
  created_at: number | null;
  prompt_tokens: number[] | null;
  sampled_tokens: number[] | null;
  logprobs: number[] | null;
  metadata: JsonValue | null;
}

/** An annotation as the store returns it. */
export interface Annotation {
  cursor: number;
  event_id: string;
  run_id: string;
  kind: string | null;
  payload: JsonValue | null;
  created_at: number | null;
}

/** What an exporter carries: a wire row or an annotation, in the order the producer made them. */
export type CaptureRecord = { type: 'wire_row'; row: WireRowInput } | { type: 'annotation'; annotation: AnnotationInput };

/** One event of the store's stream: either kind of row, by cursor. */
export type StreamEvent = { type: 'wire_row'; cursor: number; row: WireRow } | { type: 'annotation'; cursor: number; annotation: Annotation };

/** Unix time in seconds, as a float (the reference's `created_at`). */
export function nowSeconds(): number {
  return Date.now() / 1000;
}

/** The first problem with an input, as one line naming the row and field (`wire row 3: iteration: ...`). */
export function describeIssue(label: string, error: z.ZodError): string {
  const issue = error.issues[0];
  const path = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
  return `${label}: ${path}${issue.message}`;
}

/** Parses a wire row, or throws one line naming the row and the field at fault. */
export function parseWireRow(value: unknown, label = 'wire row'): WireRowInput {
  const parsed = wireRowInputSchema.safeParse(value);
  if (!parsed.success) throw new Error(describeIssue(label, parsed.error));
  return parsed.data;
}

/** Parses an annotation, or throws one line naming the annotation and the field at fault. */
export function parseAnnotation(value: unknown, label = 'annotation'): AnnotationInput {
  const parsed = annotationInputSchema.safeParse(value);
  if (!parsed.success) throw new Error(describeIssue(label, parsed.error));
  return parsed.data;
}

/** Parses a capture record (either kind). */
export function parseCaptureRecord(record: CaptureRecord, label = 'record'): CaptureRecord {
  return record.type === 'wire_row'
    ? { type: 'wire_row', row: parseWireRow(record.row, label) }
    : { type: 'annotation', annotation: parseAnnotation(record.annotation, label) };
}
