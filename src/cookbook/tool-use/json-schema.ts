// A zod object schema as the JSON Schema the reference's `@tool` declares (pydantic's
// model_json_schema of the `<name>_params` model): a title per field (`max_results` → "Max
// Results") and for the model, keys sorted as pydantic sorts them, no `$schema` or
// `additionalProperties`, and none of the ±2^53 bounds zod adds to integers. The model then sees
// the same tool declaration whichever implementation trains it.
import { z } from 'zod';

/** Python's str.title() followed by pydantic's `_` → space. */
export function pyTitle(name: string): string {
  return name.replace(/[A-Za-z]+/g, (w) => w[0].toUpperCase() + w.slice(1).toLowerCase()).replace(/_/g, ' ');
}

// Values of these keys are data, not schema: pydantic neither sorts nor rewrites them.
const DATA_KEYS = new Set(['default', 'enum', 'const', 'examples']);

function clean(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(clean);
  if (node === null || typeof node !== 'object') return node;
  const src = node as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(src).sort()) {
    const value = src[key];
    if (key === '$schema' || key === 'additionalProperties') continue;
    if ((key === 'minimum' && value === Number.MIN_SAFE_INTEGER) || (key === 'maximum' && value === Number.MAX_SAFE_INTEGER)) continue;
    if (DATA_KEYS.has(key)) out[key] = value;
    else if (key === 'properties' || key === '$defs') {
      // Field order is the function's parameter order: kept, each field's schema cleaned.
      const props: Record<string, unknown> = {};
      for (const [name, schema] of Object.entries(value as Record<string, unknown>)) props[name] = clean(schema);
      out[key] = props;
    } else out[key] = clean(value);
  }
  return out;
}

function withTitles(schema: Record<string, unknown>): Record<string, unknown> {
  const props = schema.properties as Record<string, Record<string, unknown>> | undefined;
  if (!props) return schema;
  const titled: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(props)) {
    titled[name] = Object.fromEntries(Object.entries({ ...field, title: field.title ?? pyTitle(name) }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
  return { ...schema, properties: titled };
}

/** The parameters schema of a tool named `toolName` whose arguments `params` validates. */
export function parametersJsonSchema(toolName: string, params: z.ZodObject): Record<string, unknown> {
  const raw = z.toJSONSchema(params, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const schema = withTitles(clean(raw) as Record<string, unknown>);
  if (!Object.keys((schema.properties as object | undefined) ?? {}).length) schema.properties = {};
  const { properties, required, ...rest } = schema;
  // pydantic's top-level order, alphabetical: properties, required (only when non-empty), title, type.
  return Object.fromEntries(
    Object.entries({ ...rest, properties, ...(Array.isArray(required) && required.length ? { required } : {}), title: `${toolName}_params`, type: 'object' }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
}
