// What a reader may ask the store for, as a typed filter and as the query string of `GET /rows` and
// `GET /annotations` (one conversion each way, so the client, the CLI and the daemon cannot disagree).
//   run_id, split, purpose, policy_version, sampling_session_id   equal to
//   iteration | iteration_min, iteration_max, group_idx, traj_idx  integers (a range for iteration)
//   since, until                                                    created_at bounds, Unix seconds
//   meta.<path>=<value>                                            a metadata field (dotted path) equal to
//                                                                  value (true/false for booleans)
//   has=<path>                                                     a metadata field present and not null
//   cursor, limit                                                  rows after cursor, at most limit (≤ 1000)

export const MAX_PAGE = 1000;

export interface RowFilter {
  run_id?: string;
  split?: string;
  purpose?: string;
  policy_version?: string;
  sampling_session_id?: string;
  iteration?: number;
  iteration_min?: number;
  iteration_max?: number;
  group_idx?: number;
  traj_idx?: number;
  since?: number;
  until?: number;
  /** metadata path (dotted) -> value it must equal */
  meta?: Record<string, string>;
  /** metadata paths that must be present */
  has?: string[];
}

export interface AnnotationFilter {
  run_id?: string;
  kind?: string;
  since?: number;
  until?: number;
}

export interface Page {
  /** Only rows after this cursor. */
  cursor?: number;
  limit?: number;
}

export const STRING_FILTERS = ['run_id', 'split', 'purpose', 'policy_version', 'sampling_session_id'] as const;
export const INT_FILTERS = ['iteration', 'iteration_min', 'iteration_max', 'group_idx', 'traj_idx'] as const;
const TIME_FILTERS = ['since', 'until'] as const;
const META_PATH = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export class QueryError extends Error {
  override name = 'QueryError';
}

export function checkMetaPath(path: string): string {
  if (!META_PATH.test(path)) throw new QueryError(`metadata path "${path}" must be dotted names (letters, digits, _ or -), e.g. tool_use or labels.quality`);
  return path;
}

function integer(key: string, raw: string): number {
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(value)) throw new QueryError(`${key} must be an integer, got "${raw}"`);
  return value;
}

function seconds(key: string, raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) throw new QueryError(`${key} must be Unix seconds, got "${raw}"`);
  return value;
}

export function rowFilterToParams(filter: RowFilter, page: Page = {}): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of [...STRING_FILTERS, ...INT_FILTERS, ...TIME_FILTERS]) {
    const value = filter[key];
    if (value !== undefined) params.set(key, String(value));
  }
  for (const [path, value] of Object.entries(filter.meta ?? {})) params.append(`meta.${checkMetaPath(path)}`, value);
  for (const path of filter.has ?? []) params.append('has', checkMetaPath(path));
  addPage(params, page);
  return params;
}

export function paramsToRowFilter(params: URLSearchParams): { filter: RowFilter; page: Page } {
  const filter: RowFilter = {};
  for (const key of STRING_FILTERS) {
    const value = params.get(key);
    if (value !== null) filter[key] = value;
  }
  for (const key of INT_FILTERS) {
    const value = params.get(key);
    if (value !== null) filter[key] = integer(key, value);
  }
  for (const key of TIME_FILTERS) {
    const value = params.get(key);
    if (value !== null) filter[key] = seconds(key, value);
  }
  for (const [key, value] of params) {
    if (key.startsWith('meta.')) (filter.meta ??= {})[checkMetaPath(key.slice(5))] = value;
  }
  const has = params.getAll('has').map(checkMetaPath);
  if (has.length > 0) filter.has = has;
  const known = new Set<string>([...STRING_FILTERS, ...INT_FILTERS, ...TIME_FILTERS, 'has', 'cursor', 'limit']);
  for (const key of params.keys()) {
    if (!known.has(key) && !key.startsWith('meta.')) throw new QueryError(`unknown filter "${key}" (known: ${[...known].join(', ')}, meta.<path>)`);
  }
  return { filter, page: readPage(params) };
}

export function annotationFilterToParams(filter: AnnotationFilter, page: Page = {}): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of ['run_id', 'kind', 'since', 'until'] as const) {
    if (filter[key] !== undefined) params.set(key, String(filter[key]));
  }
  addPage(params, page);
  return params;
}

export function paramsToAnnotationFilter(params: URLSearchParams): { filter: AnnotationFilter; page: Page } {
  const filter: AnnotationFilter = {};
  for (const key of ['run_id', 'kind'] as const) {
    const value = params.get(key);
    if (value !== null) filter[key] = value;
  }
  for (const key of TIME_FILTERS) {
    const value = params.get(key);
    if (value !== null) filter[key] = seconds(key, value);
  }
  const known = new Set(['run_id', 'kind', 'since', 'until', 'cursor', 'limit']);
  for (const key of params.keys()) if (!known.has(key)) throw new QueryError(`unknown filter "${key}" (known: ${[...known].join(', ')})`);
  return { filter, page: readPage(params) };
}

function addPage(params: URLSearchParams, page: Page): void {
  if (page.cursor !== undefined) params.set('cursor', String(page.cursor));
  if (page.limit !== undefined) params.set('limit', String(page.limit));
}

function readPage(params: URLSearchParams): Page {
  const page: Page = {};
  const cursor = params.get('cursor');
  if (cursor !== null) page.cursor = integer('cursor', cursor);
  const limit = params.get('limit');
  if (limit !== null) {
    page.limit = integer('limit', limit);
    // SQLite reads LIMIT -1 as "no limit": a bad query must not page a whole store into one answer.
    if (page.limit < 1) throw new QueryError(`limit must be a positive integer, got "${limit}"`);
  }
  return page;
}
