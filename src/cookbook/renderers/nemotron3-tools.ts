// Nemotron-3 tool declarations (reference renderers/nemotron3.py): unlike Qwen3.5's one JSON
// object per line, the HF template writes each tool as structured XML inside <tools>…</tools>,
// and the system prompt comes before the tools block rather than after it.

import { RendererError } from '../errors.js';
import { pyFloatRepr, pyJsonDumps } from '../pyjson.js';
import { pyStrRepr } from './content.js';
import { pyStripWs } from './py-whitespace.js';
import type { Message, ToolSpec } from './types.js';

/**
 * The reference's ToolSpec plus any extra keys, which Nemotron's template prints too; its
 * template also takes a tool without description or parameters.
 */
export type Nemotron3ToolSpec = Pick<ToolSpec, 'name'> & Partial<ToolSpec> & Record<string, unknown>;

const isMapping = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** Python `str(value)` of a JSON value (`True`, `None`, `1.5`, `['a', 'b']`). */
function pyStr(value: unknown, nested = false): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : pyFloatRepr(value);
  if (typeof value === 'string') return nested ? pyStrRepr(value) : value;
  if (Array.isArray(value)) return `[${value.map((v) => pyStr(v, true)).join(', ')}]`;
  if (isMapping(value)) {
    return `{${Object.entries(value).map(([k, v]) => `${pyStrRepr(k)}: ${pyStr(v, true)}`).join(', ')}}`;
  }
  return String(value);
}

/** `.strip()` of a field the template treats as text; anything else is refused. */
function strippedText(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new RendererError(`Nemotron-3 tool declaration: ${what} must be a string`);
  return pyStripWs(value);
}

/** The template's render_extra_keys macro: mappings/lists as JSON, scalars through `str()`. */
function renderExtraKeys(obj: Record<string, unknown>, handled: ReadonlySet<string>): string[] {
  return Object.entries(obj)
    .filter(([key]) => !handled.has(key))
    .map(([key, v]) => `<${key}>${v !== null && typeof v === 'object' ? pyJsonDumps(v) : pyStr(v)}</${key}>`);
}

const PARAM_KEYS = new Set(['name', 'type', 'description', 'enum']);
const PARAMETERS_KEYS = new Set(['type', 'properties', 'required']);
const TOOL_KEYS = new Set(['type', 'name', 'description', 'parameters']);

/** One tool as the template's `<function>` block, extra schema fields included. */
export function formatNemotron3ToolDeclaration(tool: Nemotron3ToolSpec): string {
  if (!Object.hasOwn(tool, 'name')) throw new RendererError('Nemotron-3 tool declaration: a tool needs a "name"');
  const lines = ['<function>', `<name>${pyStr(tool.name)}</name>`];
  const description = strippedText(tool.description ?? '', 'a tool description');
  if (description) lines.push(`<description>${description}</description>`);
  lines.push('<parameters>');
  const params = tool.parameters || {};
  if (isMapping(params)) {
    if ('properties' in params) {
      if (!isMapping(params.properties)) {
        throw new RendererError('Nemotron-3 tool declaration: "properties" must be an object');
      }
      for (const [paramName, fields] of Object.entries(params.properties)) {
        if (!isMapping(fields)) {
          throw new RendererError(`Nemotron-3 tool declaration: parameter ${paramName} must be an object`);
        }
        lines.push('<parameter>', `<name>${paramName}</name>`);
        if ('type' in fields) lines.push(`<type>${pyStr(fields.type)}</type>`);
        if ('description' in fields) {
          const paramDescription = strippedText(fields.description, `the description of ${paramName}`);
          lines.push(`<description>${paramDescription}</description>`);
        }
        if ('enum' in fields) lines.push(`<enum>${pyJsonDumps(fields.enum)}</enum>`);
        lines.push(...renderExtraKeys(fields, PARAM_KEYS), '</parameter>');
      }
    }
    lines.push(...renderExtraKeys(params, PARAMETERS_KEYS));
    if ('required' in params) lines.push(`<required>${pyJsonDumps(params.required)}</required>`);
  }
  lines.push('</parameters>', ...renderExtraKeys(tool, TOOL_KEYS), '</function>');
  return lines.join('\n');
}

const TOOLS_INSTRUCTIONS =
  'If you choose to call a function ONLY reply in the following format with NO suffix:\n\n' +
  '<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n' +
  '<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n' +
  '</parameter>\n</function>\n</tool_call>\n\n' +
  '<IMPORTANT>\nReminder:\n' +
  '- Function calls MUST follow the specified format: an inner <function=...></function> block must be ' +
  'nested within <tool_call></tool_call> XML tags\n' +
  '- Required parameters MUST be specified\n' +
  '- You may provide optional reasoning for your function call in natural language BEFORE the function ' +
  'call, but NOT after\n' +
  '- If there is no function call available, answer the question like normal with your current knowledge ' +
  'and do not tell the user about function calls\n' +
  '</IMPORTANT>';

/** The system message declaring `tools`, with the system prompt first (the template's order). */
export function nemotron3ConversationPrefixWithTools(tools: Nemotron3ToolSpec[], systemPrompt = ''): Message[] {
  let content = systemPrompt;
  if (tools.length) {
    const declarations = tools.map(formatNemotron3ToolDeclaration).join('\n');
    const toolsText =
      '# Tools\n\nYou have access to the following functions:\n\n' +
      `<tools>\n${declarations}\n</tools>\n\n` +
      TOOLS_INSTRUCTIONS;
    content = systemPrompt ? `${systemPrompt}\n\n${toolsText}` : toolsText;
  }
  return [{ role: 'system', content }];
}
