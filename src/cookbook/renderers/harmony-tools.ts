// Harmony tool definitions (reference renderers/gpt_oss.py, the "TypeScript formatting utilities"):
// gpt-oss reads its tools as TypeScript-ish declarations inside a `functions` namespace of the
// developer message, so JSON-schema parameters are rewritten as inline TypeScript types.
//
// Property order is the schema object's key order, like Python dict order -- except that
// JavaScript objects list integer-like keys ("0", "12") first.

import { pyJsonDumps } from '../pyjson.js';
import { pyTruthy } from './content.js';
import type { ToolSpec } from './types.js';

export type JsonSchema = Record<string, unknown>;

const asSchema = (x: unknown): JsonSchema => (x !== null && typeof x === 'object' ? (x as JsonSchema) : {});
const asArray = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
const requiredSet = (schema: JsonSchema): Set<unknown> => new Set(asArray(schema.required));
const properties = (schema: JsonSchema): Array<[string, JsonSchema]> =>
  Object.entries(asSchema(schema.properties)).map(([k, v]) => [k, asSchema(v)]);

/** One JSON-schema type as a TypeScript type (unions for oneOf/anyOf/type lists, enums as literals). */
function jsonTypeToTypescript(schema: JsonSchema): string {
  if ('oneOf' in schema) return asArray(schema.oneOf).map((s) => jsonTypeToTypescript(asSchema(s))).join(' | ');
  if ('anyOf' in schema) return asArray(schema.anyOf).map((s) => jsonTypeToTypescript(asSchema(s))).join(' | ');

  const jsonType = 'type' in schema ? schema.type : 'any';
  if (Array.isArray(jsonType)) return jsonType.map((t) => jsonTypeToTypescript({ type: t })).join(' | ');

  let base: string;
  if (jsonType === 'string') {
    // An enum replaces the type outright, nullable or not.
    if ('enum' in schema) return asArray(schema.enum).map((v) => pyJsonDumps(v)).join(' | ');
    base = 'string';
  } else if (jsonType === 'number' || jsonType === 'integer') base = 'number';
  else if (jsonType === 'boolean') base = 'boolean';
  else if (jsonType === 'array') base = `${jsonTypeToTypescript(asSchema(schema.items ?? {}))}[]`;
  else if (jsonType === 'object') base = jsonSchemaToTypescript(schema);
  else base = 'any';

  return pyTruthy(schema.nullable) ? `${base} | null` : base;
}

/** An object schema as an inline `{ a: T, b?: U }` type. */
function jsonSchemaToTypescript(schema: JsonSchema): string {
  if (schema.type !== 'object') return 'any';
  const required = requiredSet(schema);
  const fields = properties(schema).map(
    ([name, prop]) => `${name}${required.has(name) ? '' : '?'}: ${jsonTypeToTypescript(prop)}`,
  );
  return '{ ' + fields.join(', ') + ' }';
}

/** Comment lines for a property: title (then a blank line), description, examples. */
function schemaComments(schema: JsonSchema): string[] {
  const comments: string[] = [];
  // String() stands in for Python's str(); these fields are strings in any real schema.
  if (pyTruthy(schema.title)) comments.push(String(schema.title), '');
  if (pyTruthy(schema.description)) comments.push(String(schema.description));
  if (pyTruthy(schema.examples)) {
    comments.push('Examples:');
    for (const example of asArray(schema.examples)) comments.push(`- ${pyJsonDumps(example)}`);
  }
  return comments;
}

/** The parameter list `(_: { ... })`, one commented line per property; `()` when there are none. */
function formatParametersBlock(schema: JsonSchema): string {
  if (schema.type !== 'object' || !pyTruthy(schema.properties)) return '()';
  const description = schema.description;
  const lines = [pyTruthy(description) ? `(_: // ${String(description)}` : '(_:', '{'];
  const required = requiredSet(schema);
  for (const [name, prop] of properties(schema)) {
    for (const comment of schemaComments(prop)) lines.push(`// ${comment}`);
    const defaultComment = 'default' in prop ? ` // default: ${pyJsonDumps(prop.default)}` : '';
    lines.push(`${name}${required.has(name) ? '' : '?'}: ${jsonTypeToTypescript(prop)},${defaultComment}`);
  }
  lines.push('})');
  return lines.join('\n');
}

/** `// description` then `type name = (_: {...}) => any;`. */
export function formatToolDefinition(tool: ToolSpec): string {
  const lines: string[] = [];
  if (tool.description) lines.push(`// ${tool.description}`);
  lines.push(`type ${tool.name} = ${formatParametersBlock(asSchema(tool.parameters))} => any;`);
  return lines.join('\n');
}

/** The developer message's `# Tools` section declaring every tool in the `functions` namespace. */
export function formatToolsSection(tools: ToolSpec[]): string {
  return (
    '# Tools\n\n## functions\n\nnamespace functions {\n\n' +
    tools.map(formatToolDefinition).join('\n\n') +
    '\n\n} // namespace functions'
  );
}
