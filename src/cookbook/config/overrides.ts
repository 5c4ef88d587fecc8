// `key=value` overrides with dotted keys, as the CLI takes them. Values parse as JSON when they can
// (numbers, booleans, null, arrays, objects) and stay strings otherwise.
import { z } from 'zod';
import { closestKey, knownKeysAt } from './did-you-mean.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function parseOverride(arg: string): [string[], unknown] {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new ConfigError(`override "${arg}" is not of the form key=value`);
  const path = arg.slice(0, eq).split('.');
  if (path.some((p) => p === '')) throw new ConfigError(`override "${arg}" has an empty key segment`);
  const raw = arg.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    // a bare word: keep the string
  }
  return [path, value];
}

/**
 * Applies overrides in order. A segment indexes into a list where the config has one
 * (`dataset_configs.0.file_path=…`); a missing or null object on the way is created.
 */
export function applyOverrides(config: Record<string, unknown>, overrides: string[]): Record<string, unknown> {
  const out = structuredClone(config);
  for (const arg of overrides) {
    const [path, value] = parseOverride(arg);
    let node: Record<string, unknown> | unknown[] = out;
    path.forEach((key, i) => {
      const at = path.slice(0, i).join('.') || '(root)';
      const last = i === path.length - 1;
      let slot: string | number = key;
      if (Array.isArray(node)) {
        // The last segment may append (index = length); one on the way must name an element.
        const index = /^(0|[1-9]\d*)$/.test(key) ? Number(key) : NaN;
        const bound = last ? node.length : node.length - 1;
        if (!(index <= bound)) {
          const range = node.length === 0 ? (last ? 'the only index is 0' : 'it is empty') : `indices are 0..${bound}`;
          throw new ConfigError(`override "${arg}": "${at}" is a list of ${node.length}, "${key}" is not an index into it (${range})`);
        }
        slot = index;
      }
      const container = node as Record<string | number, unknown>;
      if (last) {
        container[slot] = value;
        return;
      }
      const next = container[slot];
      if (next === undefined || next === null) container[slot] = {};
      else if (typeof next !== 'object') throw new ConfigError(`override "${arg}": "${path.slice(0, i + 1).join('.')}" is not an object or a list`);
      node = container[slot] as Record<string, unknown> | unknown[];
    });
  }
  return out;
}

/** Where a config value came from, for an error about it: a file, or a command-line override. */
export type ConfigSource = string | ((path: readonly PropertyKey[]) => string | undefined);

/**
 * One line per zod issue, each naming the offending config path (e.g. `dataset.batch_size`) and,
 * given the schema, the known key closest to an unknown one.
 */
export function formatZodError(err: z.ZodError, source?: ConfigSource, schema?: z.ZodType): string {
  const where = (path: readonly PropertyKey[]) => {
    const s = typeof source === 'function' ? source(path) : source;
    return s ? `${s}: ` : '';
  };
  return err.issues
    .flatMap((issue) => {
      const path = issue.path.length ? issue.path.join('.') : '(root)';
      if (issue.code === 'unrecognized_keys') {
        const known = schema ? knownKeysAt(schema, issue.path) : [];
        return issue.keys.map((k) => {
          const full = [...issue.path, k];
          const near = closestKey(k, known);
          const at = (key: string) => [...issue.path, key].join('.');
          return `${where(full)}${at(k)}: unknown config key${near ? `; did you mean ${at(near)}?` : ''}`;
        });
      }
      return [`${where(issue.path)}${path}: ${issue.message}`];
    })
    .join('\n');
}

export function parseConfig<S extends z.ZodType>(schema: S, raw: unknown, source?: ConfigSource): z.output<S> {
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(formatZodError(result.error, source, schema));
  return result.data;
}

/**
 * A config file's object with the command line's `key=value` overrides applied, parsed: an error
 * about a value an override set (or a key it added) names that override, any other the file.
 */
export function parseWithOverrides<S extends z.ZodType>(schema: S, fromFile: Record<string, unknown>, overrides: string[], file: string): z.output<S> {
  const set = overrides.map((arg) => ({ arg, path: parseOverride(arg)[0] }));
  const within = (outer: readonly PropertyKey[], inner: readonly PropertyKey[]) => outer.length <= inner.length && outer.every((k, i) => String(k) === String(inner[i]));
  const blame = (path: readonly PropertyKey[]) => {
    // The last override that set this value, a value around it, or a value within it (not the root).
    const hit = [...set].reverse().find((o) => within(o.path, path) || (path.length > 0 && within(path, o.path)));
    return hit ? `command-line override ${hit.arg}` : file;
  };
  return parseConfig(schema, applyOverrides(fromFile, overrides), blame);
}
