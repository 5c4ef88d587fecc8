// Nemotron-3 pieces the renderer parity harness does not reach: the XML tool declarations of
// create_conversation_prefix_with_tools (expected text copied from the Python reference's output)
// and the low-thinking renderer's refusal of structured content in the last user message.
import { beforeAll, describe, expect, it } from 'vitest';
import { RendererError } from '../../src/cookbook/errors.js';
import { NEMOTRON3_RENDERERS } from '../../src/cookbook/renderers/nemotron3.js';
import { nemotron3ConversationPrefixWithTools } from '../../src/cookbook/renderers/nemotron3-tools.js';
import { getTokenizer, type Tokenizer } from '../../src/cookbook/tokenizer.js';

const TOOLS = [
  {
    name: 'get_weather',
    description: '  Get it. ',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', description: ' City ' },
        unit: { type: ['string', 'null'], enum: ['c', 'f'], default: 'c' },
        n: { type: 'integer', minimum: 0, items: { type: 'x' }, flag: true, nul: null },
      },
      required: ['city'],
      additionalProperties: false,
    },
    strict: true,
  },
  { name: 'noparams', description: '' },
];

const DECLARATIONS = [
  '<function>\n<name>get_weather</name>\n<description>Get it.</description>\n<parameters>',
  '<parameter>\n<name>city</name>\n<type>string</type>\n<description>City</description>\n</parameter>',
  "<parameter>\n<name>unit</name>\n<type>['string', 'null']</type>\n<enum>[\"c\", \"f\"]</enum>\n<default>c</default>",
  '</parameter>\n<parameter>\n<name>n</name>\n<type>integer</type>\n<minimum>0</minimum>',
  '<items>{"type": "x"}</items>\n<flag>True</flag>\n<nul>None</nul>\n</parameter>',
  '<additionalProperties>False</additionalProperties>\n<required>["city"]</required>\n</parameters>',
  '<strict>True</strict>\n</function>\n<function>\n<name>noparams</name>\n<parameters>\n</parameters>\n</function>',
].join('\n');

describe('nemotron3 tool declarations (reference create_conversation_prefix_with_tools)', () => {
  it('writes XML declarations after the system prompt', () => {
    const [message, ...rest] = nemotron3ConversationPrefixWithTools(TOOLS, 'Be nice.');
    expect(rest).toEqual([]);
    expect(message.role).toBe('system');
    const content = message.content as string;
    expect(content.startsWith('Be nice.\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n')).toBe(
      true,
    );
    expect(content).toContain(`<tools>\n${DECLARATIONS}\n</tools>\n\nIf you choose to call a function ONLY reply`);
    expect(content.endsWith('do not tell the user about function calls\n</IMPORTANT>')).toBe(true);
  });

  it('without a system prompt the tools block stands alone; without tools only the prompt', () => {
    expect((nemotron3ConversationPrefixWithTools(TOOLS)[0].content as string).startsWith('# Tools\n\n')).toBe(true);
    expect(nemotron3ConversationPrefixWithTools([], 'Hi')).toEqual([{ role: 'system', content: 'Hi' }]);
  });
});

describe('nemotron3_low_thinking', () => {
  let tok: Tokenizer;
  beforeAll(async () => {
    tok = await getTokenizer('Qwen/Qwen3-8B');
  });

  it('refuses structured content in the last user message (the reference asserts text-only)', () => {
    const r = NEMOTRON3_RENDERERS.nemotron3_low_thinking('nemotron3_low_thinking', tok);
    expect(() => r.buildGenerationPrompt([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }])).toThrow(
      RendererError,
    );
  });
});
