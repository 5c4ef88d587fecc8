// tau2_bench's tool backend (the reference's ToolBackend): no official tool implementations, a
// heuristic over the db instead — a call's arguments pick a collection (a value that is a key of
// one, else the collection whose name best matches the tool's), arguments that look like ids pick
// records, and the others are written into them when the schema reads like a mutation. Every
// episode works on its own copy of the db, so its answers are a pure function of the calls made
// before: an episode replayed from its recorded history reaches the same state. Python's str() and
// json.dumps(…, default=str) shape the matching and the answers, as the reference's.
import { pyJsonDumps } from '../../pyjson.js';
import { pyRepr, pyStr } from './py-text.js';
import type { OpenAITool } from './tau2-data.js';

type Obj = Record<string, unknown>;

export interface Tau2Call {
  name: string;
  arguments: unknown;
}

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** str(v) of a JSON value: a string as itself, anything else as Python prints it. */
export const pyStrOf = (v: unknown): string => (typeof v === 'string' ? v : Array.isArray(v) || isObject(v) ? pyRepr(v) : pyStr(v));

/** Python's type name, for the AttributeError a non-dict argument raises. */
const pyTypeName = (v: unknown) => (v === null ? 'NoneType' : typeof v === 'string' ? 'str' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? (Number.isInteger(v) ? 'int' : 'float') : Array.isArray(v) ? 'list' : 'dict');

const MUTATION_WORDS = ['update', 'set', 'change', 'modify', 'new', 'replace', 'cancel', 'create', 'delete', 'remove', 'add'];

const get = (o: Obj, k: string): unknown => (Object.hasOwn(o, k) ? o[k] : undefined);
const descOf = (props: Obj, key: string): string => {
  const prop = get(props, key);
  const desc = isObject(prop) ? get(prop, 'description') : undefined;
  return (desc === undefined ? '' : pyStrOf(desc)).toLowerCase();
};

/** Arguments that look like identifiers (for record lookup). */
export function identifyIdArgs(props: Obj, args: Obj): Obj {
  const ids: Obj = {};
  for (const [key, val] of Object.entries(args)) {
    const desc = descOf(props, key);
    const k = key.toLowerCase();
    if (k.endsWith('_id') || k === 'id' || k.endsWith('_number') || ['email', 'username', 'phone'].includes(k) || ['identifier', 'unique', 'id of', 'id for'].some((w) => desc.includes(w))) ids[key] = val;
  }
  return ids;
}

function looksLikeWrite(props: Obj, valueArgs: Obj): boolean {
  return Object.keys(valueArgs).some((key) => MUTATION_WORDS.some((w) => descOf(props, key).includes(w)) || key.toLowerCase().startsWith('new_'));
}

/** A record matches when each non-null filter equals its non-null field, as lower-cased str(). */
function matches(record: Obj, filters: Obj): boolean {
  for (const [key, val] of Object.entries(filters)) {
    if (val === null) continue;
    const have = get(record, key);
    if (have === undefined || have === null) continue;
    if (pyStrOf(have).toLowerCase() !== pyStrOf(val).toLowerCase()) return false;
  }
  return true;
}

export class Tau2Backend {
  private readonly db: Obj;
  private readonly tools = new Map<string, Obj>();
  /** Every call made, in order (what grading reads). */
  readonly callLog: Tau2Call[] = [];

  constructor(db: Obj, tools: readonly OpenAITool[]) {
    this.db = structuredClone(db);
    for (const t of tools) {
      const fn = (isObject(t) && isObject(get(t, 'function')) ? t.function : t) as unknown as Obj;
      const name = get(fn, 'name');
      if (typeof name === 'string' && name !== '') this.tools.set(name, fn);
    }
  }

  /** The call's answer as the model reads it (Python's json.dumps of the result). */
  execute(name: string, args: unknown): string {
    this.callLog.push({ name, arguments: args });
    if (!this.tools.has(name)) {
      const names = [...this.tools.keys()].sort();
      return pyJsonDumps({ error: `Unknown tool: ${name}. Available: ${pyRepr(names)}` });
    }
    if (!isObject(args)) return pyJsonDumps({ error: `Tool execution failed: '${pyTypeName(args)}' object has no attribute 'items'` });
    return pyJsonDumps(this.run(name, args));
  }

  private run(name: string, args: Obj): unknown {
    const params = get(this.tools.get(name)!, 'parameters') ?? {};
    const props = isObject(params) && isObject(get(params, 'properties')) ? (params.properties as Obj) : {};
    const idArgs = identifyIdArgs(props, args);
    const valueArgs = Object.fromEntries(Object.entries(args).filter(([k]) => !(k in idArgs)));
    const found = this.findCollection(name, args);
    if (found === null) return { status: 'success', tool: name, arguments: args };
    const [collName, coll] = found;
    const isWrite = Object.keys(valueArgs).length > 0 && looksLikeWrite(props, valueArgs);
    return isWrite ? this.write(collName, coll, idArgs, valueArgs) : this.read(coll, args);
  }

  /** A collection keyed by one of the argument values, else the one whose name best matches the tool's. */
  private findCollection(tool: string, args: Obj): [string, Obj | unknown[]] | null {
    const entries = Object.entries(this.db);
    if (entries.length === 0) return null;
    const values = Object.values(args).map(pyStrOf);
    for (const [name, coll] of entries) {
      if (isObject(coll) && values.some((v) => Object.hasOwn(coll, v))) return [name, coll];
    }
    const toolLower = tool.toLowerCase();
    const toolTokens = new Set(toolLower.split('_'));
    let best: [string, Obj | unknown[]] | null = null;
    let bestScore = 0;
    for (const [name, coll] of entries) {
      if (!isObject(coll) && !Array.isArray(coll)) continue;
      const collLower = name.toLowerCase();
      const collTokens = new Set(collLower.split('_'));
      let overlap = [...toolTokens].filter((t) => collTokens.has(t)).length;
      if (toolLower.includes(collLower) || collLower.includes(toolLower)) overlap += 2;
      for (const ct of collTokens) {
        for (const tt of toolTokens) {
          if ((ct.startsWith(tt) || tt.startsWith(ct)) && Math.abs([...ct].length - [...tt].length) <= 1) overlap += 1;
        }
      }
      if (overlap > bestScore) [best, bestScore] = [[name, coll], overlap];
    }
    return best;
  }

  private read(coll: Obj | unknown[], args: Obj): unknown {
    if (Array.isArray(coll)) {
      const hits = coll.filter((r): r is Obj => isObject(r) && matches(r, args));
      return hits.length === 1 ? hits[0] : hits;
    }
    for (const v of Object.values(args)) {
      const key = pyStrOf(v);
      if (Object.hasOwn(coll, key)) return coll[key];
    }
    const hits = Object.values(coll).filter((r): r is Obj => isObject(r) && matches(r, args));
    if (hits.length === 1) return hits[0];
    return hits.length > 0 ? hits : { message: 'No matching records found' };
  }

  private write(collName: string, coll: Obj | unknown[], idArgs: Obj, valueArgs: Obj): unknown {
    if (Array.isArray(coll)) {
      const record = coll.find((r): r is Obj => isObject(r) && matches(r, idArgs));
      if (record) return { status: 'success', updated: Object.assign(record, valueArgs) };
    } else {
      for (const v of Object.values(idArgs)) {
        const key = pyStrOf(v);
        const record = get(coll, key);
        if (isObject(record)) return { status: 'success', updated: Object.assign(record, valueArgs) };
      }
      const record = Object.values(coll).find((r): r is Obj => isObject(r) && matches(r, idArgs));
      if (record) return { status: 'success', updated: Object.assign(record, valueArgs) };
    }
    return { status: 'success', tool: `write to ${collName}`, id: idArgs, values: valueArgs };
  }
}
