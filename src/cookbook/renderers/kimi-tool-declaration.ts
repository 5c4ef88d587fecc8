// Kimi K2.5's TypeScript-style tool declarations (reference
// renderers/kimi_k2_5_tool_declaration_ts.py, itself Moonshot's tool_declaration_ts.py): OpenAI
// function specs with JSON-Schema parameters become
//
//   # Tools
//
//   ## functions
//   namespace functions {
//   // Get the weather
//   type get_weather = (_: {
//     city: string,
//     unit?: "c" | "f"
//   }) => any;
//   }
//
// The text must match byte for byte, so Python's str()/repr()/json.dumps spellings are kept.

import { RendererError } from '../errors.js';
import { pyFloatRepr } from '../pyjson.js';
import { pyStrRepr, pyTruthy } from './content.js';
import { compareCodePoints, pyJsonDumpValue } from './py-json.js';

type Schema = Record<string, unknown>;

const INDENT = '  ';
const FIELD_DELIMITER = ',\n';

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: Schema, k: string): boolean => Object.hasOwn(o, k);

// JSON numbers lose int vs float: an integral value is written as an int (1, not 1.0).
const pyNumber = (x: number): string => (Number.isInteger(x) ? String(x) : pyFloatRepr(x));

/** Python str() of a JSON value (repr() for what a container holds). */
function pyStr(v: unknown): string {
  if (typeof v === 'string') return v;
  return pyRepr(v);
}
function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return pyNumber(v);
  if (typeof v === 'string') return pyStrRepr(v);
  if (Array.isArray(v)) return '[' + v.map(pyRepr).join(', ') + ']';
  if (isObject(v)) return '{' + Object.entries(v).map(([k, x]) => `${pyStrRepr(k)}: ${pyRepr(x)}`).join(', ') + '}';
  return String(v);
}

function formatDescription(description: string, indent = ''): string {
  return description
    .split('\n')
    .map((line) => (line ? `${indent}// ${line}` : ''))
    .join('\n');
}

function textField(v: unknown, what: string): string {
  if (typeof v === 'string') return v;
  if (!pyTruthy(v)) return '';
  throw new RendererError(`${what} must be a string, got ${JSON.stringify(v)}`);
}

/** `$defs` seen so far, for resolving `$ref`s (`#` is the parameters object itself). */
class SchemaRegistry {
  readonly definitions = new Map<string, unknown>();
  hasSelfRef = false;

  register(defs: unknown): void {
    if (!pyTruthy(defs)) return;
    if (!isObject(defs)) throw new RendererError(`$defs must be an object, got ${JSON.stringify(defs)}`);
    for (const [name, schema] of Object.entries(defs)) this.definitions.set(name, schema);
  }

  resolve(ref: unknown): 'self' | unknown {
    if (ref === '#') {
      this.hasSelfRef = true;
      return 'self';
    }
    if (typeof ref === 'string' && ref.startsWith('#/$defs/')) {
      const name = ref.split('/').pop()!;
      if (!this.definitions.has(name)) throw new RendererError(`Reference not found: ${ref}`);
      return this.definitions.get(name);
    }
    throw new RendererError(`Unsupported reference format: ${String(ref)}`);
  }
}

abstract class TsType {
  readonly description: string;
  readonly constraints: Array<[string, unknown]>;

  constructor(props: Schema, allowedConstraints: readonly string[] = []) {
    this.description = textField(props.description, 'description');
    this.constraints = Object.entries(props).filter(([k]) => allowedConstraints.includes(k));
  }

  abstract render(indent: string): string;

  /** Comment lines put above a field of this type. */
  docstring(indent: string): string {
    const lines: string[] = [];
    if (this.description) lines.push(formatDescription(this.description, indent));
    if (this.constraints.length) {
      const sorted = [...this.constraints].sort(([a], [b]) => compareCodePoints(a, b));
      lines.push(`${indent}// ${sorted.map(([k, v]) => `${k}: ${pyStr(v)}`).join(', ')}`);
    }
    return lines.map((l) => l + '\n').join('');
  }
}

const SCALAR_CONSTRAINTS: Record<string, readonly string[]> = {
  string: ['maxLength', 'minLength', 'pattern'],
  number: ['maximum', 'minimum'],
  integer: ['maximum', 'minimum'],
};

class ScalarType extends TsType {
  constructor(
    readonly type: string,
    props: Schema = {},
  ) {
    super(props, Object.hasOwn(SCALAR_CONSTRAINTS, type) ? SCALAR_CONSTRAINTS[type] : []);
  }

  render(): string {
    return this.type === 'integer' ? 'number' : this.type;
  }
}

class Parameter {
  constructor(
    readonly name: string,
    readonly type: TsType,
    readonly optional: boolean,
    readonly defaultValue: unknown,
  ) {}

  render(indent: string): string {
    let comments = this.type.docstring(indent);
    const d = this.defaultValue;
    if (d !== null && d !== undefined) {
      const repr = typeof d === 'number' || typeof d === 'boolean' ? pyRepr(d) : pyJsonDumpValue(d, { ensureAscii: false });
      comments += `${indent}// Default: ${repr}\n`;
    }
    return `${comments}${indent}${this.name}${this.optional ? '?' : ''}: ${this.type.render(indent)}`;
  }
}

class ObjectType extends TsType {
  readonly properties: Parameter[] = [];
  private readonly additional: unknown = undefined;

  constructor(schema: Schema, registry: SchemaRegistry) {
    super(schema);
    if (Object.keys(schema).length === 0) return;
    if (has(schema, '$defs')) registry.register(schema.$defs);
    const additional = schema.additionalProperties;
    this.additional = isObject(additional) ? parseType(additional, registry) : additional;
    if (!has(schema, 'properties')) return;
    const props = schema.properties;
    if (!isObject(props)) throw new RendererError(`properties must be an object, got ${JSON.stringify(props)}`);
    const required = schema.required ?? [];
    if (!Array.isArray(required)) throw new RendererError(`required must be a list, got ${JSON.stringify(required)}`);
    for (const [name, prop] of Object.entries(props)) {
      this.properties.push(
        new Parameter(
          name,
          parseType(prop, registry),
          !required.includes(name),
          isObject(prop) ? prop.default : undefined,
        ),
      );
    }
  }

  render(indent: string): string {
    // Required fields first, each group by name.
    const byName = (a: Parameter, b: Parameter) => compareCodePoints(a.name, b.name);
    const ordered = [
      ...this.properties.filter((p) => !p.optional).sort(byName),
      ...this.properties.filter((p) => p.optional).sort(byName),
    ];
    const fields = ordered.map((p) => p.render(indent + INDENT));
    const ap = this.additional;
    if (ap !== null && ap !== undefined) {
      let apType: string;
      if (ap === true) apType = 'any';
      else if (ap === false) apType = 'never';
      else if (ap instanceof TsType) apType = ap.render(indent + INDENT);
      else throw new RendererError(`Unknown additionalProperties: ${pyStr(ap)}`);
      fields.push(`${indent + INDENT}[k: string]: ${apType}`);
    }
    if (!fields.length) return '{}';
    return `{\n${fields.join(FIELD_DELIMITER)}\n${indent}}`;
  }
}

class ArrayType extends TsType {
  readonly item: TsType;

  constructor(schema: Schema, registry: SchemaRegistry) {
    super(schema, ['minItems', 'maxItems']);
    this.item = pyTruthy(schema.items) ? parseType(schema.items, registry) : new ScalarType('any');
  }

  render(indent: string): string {
    const itemDoc = this.item.docstring(indent + INDENT);
    if (!itemDoc) return `Array<${this.item.render(indent)}>`;
    return `Array<\n${itemDoc}${indent}${INDENT}${this.item.render(indent + INDENT)}\n${indent}>`;
  }
}

class EnumType extends TsType {
  readonly values: unknown[];

  constructor(schema: Schema) {
    super(schema);
    if (!Array.isArray(schema.enum)) throw new RendererError(`enum must be a list, got ${JSON.stringify(schema.enum)}`);
    this.values = schema.enum;
    if (has(schema, 'type')) this.validate(schema.type);
  }

  /** Values must fit a declared scalar type (bools count as numbers, as in Python). */
  private validate(declared: unknown): void {
    let typ = declared;
    if (Array.isArray(typ)) {
      if (typ.length === 1) typ = typ[0];
      else if (typ.length === 2 && typ.includes('null')) typ = typ[0] !== 'null' ? typ[0] : typ[1];
      else throw new RendererError(`Enum type ${pyStr(typ)} is not supported`);
    }
    const checks: Record<string, [string, (v: unknown) => boolean]> = {
      string: ['a string', (v) => typeof v === 'string'],
      number: ['a number', (v) => typeof v === 'number' || typeof v === 'boolean'],
      integer: ['an integer', (v) => typeof v === 'boolean' || (typeof v === 'number' && Number.isInteger(v))],
      boolean: ['a boolean', (v) => typeof v === 'boolean'],
    };
    const check = typeof typ === 'string' && Object.hasOwn(checks, typ) ? checks[typ] : undefined;
    if (!check) return;
    for (const v of this.values) {
      if (v !== null && !check[1](v)) throw new RendererError(`Enum value ${pyStr(v)} is not ${check[0]}`);
    }
  }

  render(): string {
    return this.values.map((v) => (typeof v === 'string' ? `"${v}"` : pyStr(v))).join(' | ');
  }
}

class AnyOfType extends TsType {
  readonly types: TsType[];

  constructor(schema: Schema, registry: SchemaRegistry) {
    super(schema);
    if (!Array.isArray(schema.anyOf)) {
      throw new RendererError(`anyOf must be a list, got ${JSON.stringify(schema.anyOf)}`);
    }
    this.types = schema.anyOf.map((t) => parseType(t, registry));
  }

  render(indent: string): string {
    return this.types.map((t) => t.render(indent)).join(' | ');
  }
}

const UNION_MEMBERS: Record<string, string> = {
  string: 'string',
  number: 'number',
  integer: 'number',
  boolean: 'boolean',
  null: 'null',
  object: '{}',
  array: 'Array<any>',
};

class UnionType extends TsType {
  readonly types: string[];

  constructor(schema: Schema) {
    super(schema);
    this.types = (schema.type as unknown[]).map((t) => {
      if (typeof t !== 'string' || !Object.hasOwn(UNION_MEMBERS, t)) {
        throw new RendererError(`Unsupported type in a type list: ${pyStr(t)}`);
      }
      return UNION_MEMBERS[t];
    });
  }

  render(): string {
    return this.types.join(' | ');
  }
}

class RefType extends TsType {
  readonly refName: string;

  constructor(schema: Schema, registry: SchemaRegistry) {
    super(schema);
    const resolved = registry.resolve(schema.$ref);
    if (resolved !== 'self' && !isObject(resolved)) {
      throw new RendererError(`Definition for ${String(schema.$ref)} is not a schema object`);
    }
    // A reference to the root object is written as its interface, `parameters`.
    const isSelf = resolved === 'self' || pyTruthy((resolved as Schema).$self_ref);
    this.refName = isSelf ? 'parameters' : (schema.$ref as string).split('/').pop()!;
  }

  render(): string {
    return this.refName;
  }
}

function parseType(schema: unknown, registry: SchemaRegistry): TsType {
  if (typeof schema === 'boolean') {
    if (schema) return new ScalarType('any');
    console.warn('[cookbook] Warning: Boolean value False is not supported, use null instead.');
    return new ScalarType('null');
  }
  if (!isObject(schema)) throw new RendererError(`Invalid JSON Schema object: ${pyStr(schema)}`);
  if (has(schema, '$ref')) return new RefType(schema, registry);
  if (has(schema, 'anyOf')) return new AnyOfType(schema, registry);
  if (has(schema, 'enum')) return new EnumType(schema);
  if (has(schema, 'type')) {
    const typ = schema.type;
    if (Array.isArray(typ)) return new UnionType(schema);
    if (typ === 'object') return new ObjectType(schema, registry);
    if (typ === 'array') return new ArrayType(schema, registry);
    return new ScalarType(pyStr(typ), schema);
  }
  if (Object.keys(schema).length === 0) return new ScalarType('any');
  throw new RendererError(`Invalid JSON Schema object: ${pyStr(schema)}`);
}

/** One function as `type name = (_: {…}) => any;`, preceded by its `$defs` interfaces. */
function functionToTypescript(fn: Schema): string {
  const registry = new SchemaRegistry();
  const parameters = pyTruthy(fn.parameters) ? fn.parameters : {};
  if (!isObject(parameters)) throw new RendererError(`parameters must be an object, got ${JSON.stringify(parameters)}`);
  const parsed = new ObjectType(parameters, registry);

  const interfaces: string[] = [];
  // A self-referencing schema needs the root as a named interface; its fields keep their order.
  const selfRef = registry.hasSelfRef;
  if (selfRef) {
    const fields = parsed.properties.map((p) => p.render(INDENT)).join(FIELD_DELIMITER);
    interfaces.push(`interface parameters {${fields ? `\n${fields}\n` : ''}}`);
  }
  // Definitions registered while rendering these are not emitted (the reference iterates a copy).
  for (const [name, schema] of [...registry.definitions]) {
    const body = parseType(schema, registry).render('');
    if (!isObject(schema)) throw new RendererError(`Definition ${name} is not a schema object`);
    const description = textField(schema.description, 'description');
    interfaces.push(`${description ? formatDescription(description) + '\n' : ''}interface ${name} ${body}`);
  }

  const name = has(fn, 'name') ? pyStr(fn.name) : 'function';
  const typeDef = `type ${name} = (_: ${selfRef ? 'parameters' : parsed.render('')}) => any;`;
  const description = textField(fn.description, 'description');
  return [interfaces.join('\n'), description ? formatDescription(description) : '', typeDef].filter(Boolean).join('\n');
}

/**
 * Tools in OpenAI form (`{type: "function", function: {…}}`) as Kimi K2.5's tool_declare text;
 * other tool types are skipped, and no function tools give "".
 */
export function encodeToolsToTypescriptStyle(tools: readonly unknown[]): string {
  const functions: string[] = [];
  for (const tool of tools) {
    if (!isObject(tool)) throw new RendererError(`A tool must be an object, got ${JSON.stringify(tool)}`);
    if (tool.type !== 'function') continue;
    const fn = has(tool, 'function') ? tool.function : {};
    if (!pyTruthy(fn)) continue;
    if (!isObject(fn)) throw new RendererError(`A tool's function must be an object, got ${JSON.stringify(fn)}`);
    functions.push(functionToTypescript(fn));
  }
  if (!functions.length) return '';
  return `# Tools\n\n## functions\nnamespace functions {\n${functions.join('\n')}\n}\n`;
}
