// Conversations from the reference's renderers_test.py, shared by the renderer tests.
import type { Message, ToolCall } from '../../src/cookbook/renderers/types.js';

export const basic2turn = (): Message[] => [
  { role: 'user', content: 'Hello, how are you?' },
  { role: 'assistant', content: "I'm fine, thank you!" },
];

export const basic3turn = (): Message[] => [...basic2turn(), { role: 'user', content: 'What is the capital of France?' }];

export const system2turn = (): Message[] => [
  { role: 'system', content: 'You are a helpful coding assistant. Always explain your reasoning step by step.' },
  { role: 'user', content: 'How do I reverse a string in Python?' },
  { role: 'assistant', content: 'You can use slicing: `s[::-1]` to reverse a string.' },
];

export const system3turn = (): Message[] => [...system2turn(), { role: 'user', content: 'Can you show me another way?' }];

export const basic4turn = (): Message[] => [
  { role: 'user', content: 'What is 2+2?' },
  { role: 'assistant', content: 'The answer is 4.' },
  { role: 'user', content: 'And what is 3+3?' },
  { role: 'assistant', content: 'The answer is 6.' },
];

const weatherCall: ToolCall = {
  type: 'function',
  id: 'call_123',
  function: { name: 'get_weather', arguments: '{"location": "San Francisco"}' },
};

export const toolCall = (): Message[] => [
  { role: 'user', content: "What's the weather in San Francisco?" },
  { role: 'assistant', content: "I'll check the weather for you.", tool_calls: [weatherCall] },
  { role: 'tool', content: '{"temperature": 72, "condition": "sunny"}', tool_call_id: 'call_123', name: 'get_weather' },
  { role: 'assistant', content: 'The weather in San Francisco is sunny with 72°F.' },
];

export const toolCallGen = (): Message[] => toolCall().slice(0, -1);

export const thinkingWithWhitespace = (): Message[] => [
  { role: 'user', content: 'Hello, how are you?' },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: '\nLet me respond politely.\n' },
      { type: 'text', text: "\n\nI'm fine, thank you!" },
    ],
  },
];

export const fourTurnThinking = (): Message[] => [
  { role: 'user', content: 'What is 2+2?' },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'First turn reasoning here.' },
      { type: 'text', text: 'The answer is 4.' },
    ],
  },
  { role: 'user', content: 'And what is 3+3?' },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'Second turn reasoning here.' },
      { type: 'text', text: 'The answer is 6.' },
    ],
  },
];

/** The reference's to_openai_message for Qwen3: thinking → reasoning_content, tool calls as dicts. */
export function toOpenAi(m: Message): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role };
  if (typeof m.content === 'string') out.content = m.content;
  else {
    out.content = m.content.map((p) => (p.type === 'text' ? p.text : '')).join('');
    const thinking = m.content.filter((p) => p.type === 'thinking').map((p) => (p as { thinking: string }).thinking);
    if (thinking.length) out.reasoning_content = thinking.join('');
  }
  if (m.tool_calls?.length) {
    out.tool_calls = m.tool_calls.map((c) => ({ type: 'function', id: c.id, function: { ...c.function } }));
  }
  if (m.role === 'tool') {
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (m.name !== undefined) out.name = m.name;
  }
  return out;
}
