// `key=value` overrides with dotted keys, as the CLI takes them. Values parse as JSON when they can
// (numbers, booleans, null, arrays, objects) and stay strings otherwise.
import { z } from 'zod';

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

export function applyOverrides(config: Record<string, unknown>, overrides: string[]): Record<string, unknown> {
  const out = structuredClone(config);
  for (const arg of overrides) {
    const [path, value] = parseOverride(arg);
    let node: Record<string, unknown> = out;
    for (const key of path.slice(0, -1)) {
      const next = node[key];
      if (next === undefined || next === null) node[key] = {};
      else if (typeof next !== 'object' || Array.isArray(next)) {
        throw new ConfigError(`override "${arg}": "${key}" is not an object`);
      }
      node = node[key] as Record<string, unknown>;
    }
    node[path[path.length - 1]] = value;
  }
  return out;
}

/** One line per zod issue, each naming the offending config path (e.g. `dataset.batch_size`). */
export function formatZodError(err: z.ZodError, source?: string): string {
  const where = source ? `${source}: ` : '';
  return err.issues
    .map((issue) => {
      const path = issue.path.length ? issue.path.join('.') : '(root)';
      if (issue.code === 'unrecognized_keys') {
        const keys = issue.keys.map((k) => (issue.path.length ? `${path}.${k}` : k));
        return `${where}unknown config key${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
      }
      return `${where}${path}: ${issue.message}`;
    })
    .join('\n');
}

export function parseConfig<S extends z.ZodType>(schema: S, raw: unknown, source?: string): z.output<S> {
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(formatZodError(result.error, source));
  return result.data;
}
