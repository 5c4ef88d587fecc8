// "did you mean": the known config key closest to a mistyped one, read from the zod schema itself so
// the suggestion follows the schema wherever the key is nested.
import type { z } from 'zod';

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
  valueType?: z.ZodType;
  left?: z.ZodType;
  right?: z.ZodType;
  getter?: () => z.ZodType;
};

const defOf = (s: z.ZodType): Def | undefined => (s as unknown as { _zod?: { def?: Def } })._zod?.def;

/** The schemas a value at `path` may be checked against (wrappers, pipes, unions and lazies looked through). */
function schemasAt(schema: z.ZodType, path: readonly PropertyKey[], depth = 0): z.ZodType[] {
  const def = defOf(schema);
  if (!def || depth > 64) return [];
  const through = (...inner: Array<z.ZodType | undefined>) => inner.flatMap((s) => (s ? schemasAt(s, path, depth + 1) : []));
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      return through(def.innerType);
    case 'pipe':
      return through(def.in, def.out);
    case 'lazy':
      return through(def.getter?.());
    case 'union':
      return through(...(def.options ?? []));
    case 'intersection':
      return through(def.left, def.right);
  }
  if (path.length === 0) return [schema];
  const [head, ...rest] = path;
  if (def.type === 'object') return def.shape && String(head) in def.shape ? schemasAt(def.shape[String(head)], rest, depth + 1) : [];
  if (def.type === 'array') return def.element ? schemasAt(def.element, rest, depth + 1) : [];
  if (def.type === 'record') return def.valueType ? schemasAt(def.valueType, rest, depth + 1) : [];
  return [];
}

/** The keys an object at `path` of `schema` may have. */
export function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const keys = schemasAt(schema, path).flatMap((s) => {
    const def = defOf(s);
    return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
  });
  return [...new Set(keys)];
}

/** Edit distance counting a swap of two neighbours as one edit (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The candidate closest to `key`, if it is close enough to be a typo of it (about one edit in three letters). */
export function closestKey(key: string, candidates: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(lower, name.toLowerCase());
    if (!best || distance < best.distance) best = { name, distance };
  }
  return best && best.distance <= Math.max(1, Math.floor(key.length / 3)) ? best.name : undefined;
}
