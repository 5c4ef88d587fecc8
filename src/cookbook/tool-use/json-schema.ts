// A zod object schema as the JSON Schema the reference's `@tool` declares for the matching Python
// signature (pydantic v2's model_json_schema of the `<name>_params` model), byte for byte once
// serialized, so the model sees the same tool declaration whichever implementation trains it.
//
// The schema is built by walking the zod tree and writing each node as pydantic writes its Python
// counterpart, rather than by patching zod's own JSON Schema, whose spelling differs in many places
// (`type: [X, "null"]`, `items: false` on tuples, `propertyNames` on records, ...):
//
//   zod                                  Python                          declared
//   z.int() / z.number() / z.string()    int / float / str               {type}, with constraints
//   z.boolean() / z.null()               bool / None                     {type}
//   X.nullable(), z.union([X, z.null()]) Optional[X]                     {anyOf: [X, {type: null}]}
//   X.default(v)                         X = v                           X + {default: v}
//   z.array(X)                           list[X]                         {items: X, type: array}
//   z.tuple([A, B]) / z.tuple([A], X)    tuple[A, B] / tuple[A, *tuple[X, ...]]   prefixItems, minItems (, maxItems / items)
//   z.record(z.string(), X)              dict[str, X]                    {additionalProperties: X, type: object}
//   z.union([A, B])                      Union[A, B]                     {anyOf: [A, B]} (flattened, deduplicated)
//   z.discriminatedUnion('k', [A, B])    Annotated[A | B, Field(discriminator='k')]   {oneOf, discriminator}
//   z.literal(v) / z.enum([...])         Literal[...]                    {const} or {enum}, + type when uniform
//   z.enum([...]).meta({ id: 'E' })      class E(Enum)                   {$ref} to $defs.E
//   z.object({...}).meta({ id: 'M' })    class M(BaseModel)              {$ref} to $defs.M (.meta description: docstring)
//   z.any() / z.unknown()                Any                             {}
//   .describe(d) / .meta({ title })      Annotated[X, Field(description=d, title=...)]
//
// What has no pydantic counterpart, and how it is declared all the same:
// - a nested z.object without `.meta({ id })`: every pydantic model has a class name and is
//   declared once under $defs; an anonymous object is written inline, its fields titled as a model's;
// - X.optional() without a default: a Python parameter without a default is required; it is left
//   out of `required` and has no `default`; an optional tuple item is declared as a required one;
// - string formats (z.email(), z.iso.datetime(), ...), intersections, z.date(), z.set(), ...: zod's
//   own spelling of that node (they are not used by this cookbook's tools);
// - z.strictObject/z.looseObject/.catchall(X) parameters: the reference's params model never
//   declares extra keys, so the top level has no `additionalProperties`; nested, they are written
//   as pydantic writes `extra='forbid'` / `extra='allow'` / typed extras (false / true / X).
//
// Keys are sorted as pydantic sorts them (GenerateJsonSchema.sort, see pydanticSort below), field
// order and a default's own keys kept. Two places where that sort keeps pydantic's generation order,
// which this walk does not reproduce: the schema of a field named `default` or `properties`. And a
// JS object lists integer-like keys first, so a dict default such as {"b": 1, "2": 0} is written in
// a different order than Python's.
import { z } from 'zod';

type Json = Record<string, unknown>;
type Node = z.core.$ZodType;
interface Def {
  type: string;
  [key: string]: unknown;
}

/** pydantic's get_title_from_name: Python's str.title(), `_` → space, then stripped. */
export function pyTitle(name: string): string {
  return name
    .replace(/[\p{Lu}\p{Ll}\p{Lt}]+/gu, (w) => w[0].toUpperCase() + w.slice(1).toLowerCase())
    .replace(/_/g, ' ')
    .trim();
}

/** One declaration's state: the named schemas ($defs) met so far, and the anonymous objects being walked. */
interface Ctx {
  defs: Map<string, { node: Node; json: Json }>;
  walking: Set<Node>;
}

const defOf = (node: Node): Def => node._zod.def as unknown as Def;
const NULL: Json = { type: 'null' };

/** The metadata of `node` (what .describe()/.meta() gave it or the schema it was copied from), minus zod's `id`. */
function metaOf(node: Node): Json {
  const { id: _id, ...meta } = (z.globalRegistry.get(node) ?? {}) as Json;
  return meta;
}

/** The id `node` itself was given with .meta({ id }) (an id is not inherited by copies). */
function ownId(node: Node): string | undefined {
  const id = z.globalRegistry.get(node)?.id;
  return typeof id === 'string' ? id : undefined;
}

/** The named schema `node` is, or is a copy of (a `.describe()` of a named model): pydantic's class. */
function namedSource(node: Node): Node | undefined {
  for (let n: Node | undefined = node; n; n = n._zod.parent) if (ownId(n)) return n;
  return undefined;
}

/** pydantic compares schemas as JSON whatever their key order (_make_json_hashable). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
}
const sameJson = (a: unknown, b: unknown) => canonical(a) === canonical(b);

/** The JSON value pydantic writes for a default or a literal (its to_jsonable_python). */
function jsonValue(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : JSON.parse(text);
}

/** A node as pydantic declares it: a reference when it is (a copy of) a named schema, else its structure and metadata. */
function walk(node: Node, ctx: Ctx): Json {
  const named = namedSource(node);
  if (named) return refTo(node, named, ctx);
  return { ...structural(node, ctx), ...metaOf(node) };
}

function structural(node: Node, ctx: Ctx): Json {
  const def = defOf(node);
  switch (def.type) {
    case 'object':
      return objectJson(node, ctx);
    case 'array':
      return { type: 'array', items: walk(def.element as Node, ctx), ...itemBounds(def) };
    case 'tuple':
      return tupleJson(def, ctx);
    case 'record':
      return recordJson(def, ctx);
    case 'union':
      return def.discriminator ? taggedUnionJson(def, ctx) : unionJson(def.options as Node[], ctx);
    case 'nullable':
      return nullableJson(walk(def.innerType as Node, ctx));
    case 'default':
    case 'prefault':
      return withDefault(walk(def.innerType as Node, ctx), def.defaultValue);
    // Validation-only wrappers: pydantic declares what they wrap.
    case 'optional':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return walk(def.innerType as Node, ctx);
    case 'pipe': {
      // The arguments the model writes are the pipe's input; z.preprocess starts with a transform, which declares nothing.
      const input = def.in as Node;
      return walk(defOf(input).type === 'transform' ? (def.out as Node) : input, ctx);
    }
    case 'lazy':
      return walk((def.getter as () => Node)(), ctx);
    case 'literal':
      return literalJson(def.values as unknown[]);
    case 'enum':
      // An anonymous z.enum is a Literal; a named one (.meta({ id })) is an Enum class, see definitionJson.
      return literalJson(z.core.util.getEnumValues(def.entries as z.core.util.EnumLike));
    case 'any':
    case 'unknown':
      return {};
    default:
      return leafJson(node);
  }
}

/** Strings, numbers, booleans, null (and what pydantic has no counterpart for): zod's own JSON Schema of the node. */
function leafJson(node: Node): Json {
  // An empty registry: metadata is written by walk, where pydantic puts it.
  const json = z.toJSONSchema(node, { io: 'input', unrepresentable: 'any', metadata: z.registry() }) as Json;
  delete json.$schema;
  // zod bounds z.int() to the safe integers; Python's int has no bounds.
  if (json.minimum === Number.MIN_SAFE_INTEGER) delete json.minimum;
  if (json.maximum === Number.MAX_SAFE_INTEGER) delete json.maximum;
  return json;
}

/** A z.object's fields as a pydantic model's: each titled after its name unless it refers to a named schema. */
function objectJson(node: Node, ctx: Ctx): Json {
  // pydantic reaches a recursive model through its $defs entry; an anonymous object has none.
  if (ctx.walking.has(node)) throw new Error('A recursive tool parameter schema needs a name: give the recursive object .meta({ id })');
  ctx.walking.add(node);
  try {
    const def = defOf(node);
    const properties: Json = {};
    const required: string[] = [];
    for (const [name, field] of Object.entries(def.shape as Record<string, Node>)) {
      const json = walk(field, ctx);
      properties[name] = 'title' in json || !takesFieldTitle(json) ? json : { ...json, title: pyTitle(name) };
      if (isRequired(field)) required.push(name);
    }
    const json: Json = { type: 'object', properties };
    if (required.length) json.required = required;
    const extra = extrasJson(def.catchall as Node | undefined, ctx);
    if (extra !== undefined) json.additionalProperties = extra;
    return json;
  } finally {
    ctx.walking.delete(node);
  }
}

/**
 * Whether the model must write the field: not when it is optional or has a default (zod's
 * `optin`). A transform or catch lets zod observe a missing key, but what it wraps decides, as in
 * zod's own input schema.
 */
function isRequired(field: Node): boolean {
  const def = defOf(field);
  if (def.type === 'pipe' && defOf(def.in as Node).type === 'transform') return isRequired(def.out as Node);
  if (def.type === 'catch') return isRequired(def.innerType as Node);
  return field._zod.optin === undefined;
}

/**
 * pydantic's field_title_should_be_set: a field whose schema is a named one (a model, an enum), bare
 * or made nullable, is titled by its definition, not after the field.
 */
function takesFieldTitle(json: Json): boolean {
  if ('$ref' in json) return false;
  const anyOf = json.anyOf as Json[] | undefined;
  return !(Array.isArray(anyOf) && anyOf.length === 2 && sameJson(anyOf[1], NULL) && '$ref' in anyOf[0]);
}

/** What an object says of keys it does not name: strict → false, loose → true, .catchall(X) → X (pydantic's extra config). */
function extrasJson(catchall: Node | undefined, ctx: Ctx): unknown {
  if (!catchall) return undefined;
  const type = defOf(catchall).type;
  if (type === 'never') return false;
  if (type === 'any' || type === 'unknown') return true;
  const { title: _title, ...json } = walk(catchall, ctx);
  return Object.keys(json).length ? json : true;
}

/** An array's length checks as minItems/maxItems, the tightest of each. */
function itemBounds(def: Def): Json {
  let min: number | undefined;
  let max: number | undefined;
  for (const check of (def.checks as Node[] | undefined) ?? []) {
    const c = check._zod.def as unknown as { check: string; minimum?: number; maximum?: number; length?: number };
    const lo = c.check === 'min_length' ? c.minimum : c.check === 'length_equals' ? c.length : undefined;
    const hi = c.check === 'max_length' ? c.maximum : c.check === 'length_equals' ? c.length : undefined;
    if (lo !== undefined) min = Math.max(min ?? lo, lo);
    if (hi !== undefined) max = Math.min(max ?? hi, hi);
  }
  return { ...(min !== undefined ? { minItems: min } : {}), ...(max !== undefined ? { maxItems: max } : {}) };
}

/** pydantic's tuple_schema: fixed items as prefixItems with an exact length; a rest element as `items`. */
function tupleJson(def: Def, ctx: Ctx): Json {
  const prefix = (def.items as Node[]).map((item) => walk(item, ctx));
  const json: Json = { type: 'array' };
  if (def.rest) {
    if (prefix.length) Object.assign(json, { minItems: prefix.length, prefixItems: prefix });
    json.items = walk(def.rest as Node, ctx);
  } else {
    if (prefix.length) json.prefixItems = prefix;
    Object.assign(json, { minItems: prefix.length, maxItems: prefix.length });
  }
  return json;
}

/**
 * pydantic's dict_schema: the value schema (untitled) as additionalProperties, or under the key
 * pattern in patternProperties; constrained keys as propertyNames. dict[str, Any] allows anything.
 * (A z.record over z.enum keys requires every key, where Python's dict[Literal[...], X] does not;
 * the declaration is the same.)
 */
function recordJson(def: Def, ctx: Ctx): Json {
  const keys = { ...walk(def.keyType as Node, ctx) };
  let pattern: unknown;
  if (!('$ref' in keys)) {
    pattern = keys.pattern;
    delete keys.pattern;
    delete keys.title;
  }
  const { title: _title, ...values } = walk(def.valueType as Node, ctx);
  const json: Json = { type: 'object' };
  if (typeof pattern === 'string') json.patternProperties = { [pattern]: values };
  else json.additionalProperties = Object.keys(values).length ? values : true;
  if ((keys.type === 'string' && Object.keys(keys).length > 1) || '$ref' in keys) {
    delete keys.type;
    json.propertyNames = keys;
  }
  return json;
}

/** pydantic's get_flattened_anyof: members that are bare anyOfs spliced in, duplicates dropped, one member unwrapped. */
function anyOfJson(schemas: Json[]): Json {
  const members: Json[] = [];
  for (const schema of schemas) {
    const flat = Object.keys(schema).length === 1 && Array.isArray(schema.anyOf) ? (schema.anyOf as Json[]) : [schema];
    for (const m of flat) if (!members.some((seen) => sameJson(seen, m))) members.push(m);
  }
  return members.length === 1 ? members[0] : { anyOf: members };
}

/** pydantic's nullable_schema: `X | None` is anyOf [X, null], never zod's `type: [X, "null"]`. */
function nullableJson(inner: Json): Json {
  return sameJson(inner, NULL) ? NULL : anyOfJson([inner, NULL]);
}

/** Python's Union: `None` among the members makes the union of the others nullable, null last. */
function unionJson(options: Node[], ctx: Ctx): Json {
  const members = options.filter((o) => defOf(o).type !== 'null');
  const inner = members.length === 0 ? NULL : members.length === 1 ? walk(members[0], ctx) : anyOfJson(members.map((m) => walk(m, ctx)));
  return members.length < options.length ? nullableJson(inner) : inner;
}

/** pydantic's tagged_union_schema: oneOf the members, and the discriminator's value → member mapping. */
function taggedUnionJson(def: Def, ctx: Ctx): Json {
  const key = def.discriminator as string;
  const byValue = new Map<string, Json>();
  for (const option of def.options as Node[]) {
    const json = walk(option, ctx);
    for (const value of option._zod.propValues?.[key] ?? []) byValue.set(String(value), json);
  }
  const oneOf: Json[] = [];
  for (const json of byValue.values()) if (!oneOf.some((seen) => sameJson(seen, json))) oneOf.push(json);
  const mapping = Object.fromEntries([...byValue].map(([value, json]) => [value, json.$ref ?? json]));
  return { oneOf, discriminator: { propertyName: key, mapping } };
}

function withDefault(inner: Json, value: unknown): Json {
  const json = jsonValue(value);
  return json === undefined ? inner : { ...inner, default: json };
}

/** The JSON type of one literal value as Python sees it: an integral number is an int, true is a bool, not an int. */
function pyJsonType(value: unknown): string | undefined {
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'bigint') return 'integer';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return undefined;
}

/** The one JSON type every value has, or undefined when they differ. */
function commonType(values: unknown[], allowed: readonly string[]): string | undefined {
  const types = new Set(values.map(pyJsonType));
  const [only] = types;
  return types.size === 1 && only !== undefined && allowed.includes(only) ? only : undefined;
}

/** pydantic's literal_schema: const for one value, enum for several, and the type when they share one. */
function literalJson(values: unknown[]): Json {
  const expected = values.map((v) => (typeof v === 'bigint' ? Number(v) : jsonValue(v)));
  const json: Json = expected.length === 1 ? { const: expected[0] } : { enum: expected };
  const type = commonType(values, ['string', 'integer', 'number', 'boolean', 'array', 'null']);
  if (type) json.type = type;
  return json;
}

/** pydantic's enum_schema for an Enum class: always `enum`, typed when uniform (never `null`). */
function enumClassJson(def: Def): Json {
  const values = z.core.util.getEnumValues(def.entries as z.core.util.EnumLike);
  const json: Json = { enum: values };
  const type = commonType(values, ['string', 'integer', 'number', 'boolean', 'array']);
  if (type) json.type = type;
  return json;
}

/**
 * A reference to the named schema `named` (declared once under $defs), with what `node` adds to it
 * (a description beside a model) unless the definition says the same (pydantic's handle_ref_overrides).
 */
function refTo(node: Node, named: Node, ctx: Ctx): Json {
  const id = ownId(named)!;
  let entry = ctx.defs.get(id);
  if (!entry) {
    // Registered before its body is walked, so a model that refers to itself finds its own entry.
    entry = { node: named, json: {} };
    ctx.defs.set(id, entry);
    Object.assign(entry.json, definitionJson(named, ctx));
  } else if (entry.node !== named && entry.node._zod.def !== named._zod.def) {
    throw new Error(`Two different tool parameter schemas are named "${id}"`);
  }
  const ref: Json = { $ref: `#/$defs/${id}` };
  for (const [key, value] of Object.entries(metaOf(node))) if (!sameJson(entry.json[key], value)) ref[key] = value;
  return ref;
}

/** A named schema's $defs entry: a model or an Enum class is titled with its class name unless given a title. */
function definitionJson(named: Node, ctx: Ctx): Json {
  const def = defOf(named);
  const json = { ...(def.type === 'enum' ? enumClassJson(def) : structural(named, ctx)), ...metaOf(named) };
  if (!('title' in json) && (def.type === 'object' || def.type === 'enum')) json.title = ownId(named);
  return json;
}

/**
 * pydantic's GenerateJsonSchema.sort: every mapping's keys in order, recursively, except a mapping
 * directly under `properties` (the fields, in parameter order) or `default` (the value's own order);
 * a list hands its own key down to its items. (Python sorts by code point, JS by UTF-16 unit: the
 * same order for the keys of a schema.)
 */
function pydanticSort(value: unknown, parentKey?: string): unknown {
  if (Array.isArray(value)) return value.map((item) => pydanticSort(item, parentKey));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (parentKey !== 'properties' && parentKey !== 'default') keys.sort();
  return Object.fromEntries(keys.map((key) => [key, pydanticSort((value as Json)[key], key)]));
}

/** The parameters schema of a tool named `toolName` whose arguments `params` validates. */
export function parametersJsonSchema(toolName: string, params: z.ZodObject): Record<string, unknown> {
  const ctx: Ctx = { defs: new Map(), walking: new Set() };
  // The reference's create_model: no docstring, no extra-keys config, titled `<name>_params`.
  const { additionalProperties: _extras, ...body } = objectJson(params, ctx);
  const schema: Json = { ...body, title: `${toolName}_params` };
  if (ctx.defs.size) schema.$defs = Object.fromEntries([...ctx.defs].map(([id, entry]) => [id, entry.json]));
  return pydanticSort(schema) as Record<string, unknown>;
}
