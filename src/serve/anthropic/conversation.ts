// An Anthropic Messages request as the conversation the renderer renders. The request is first put
// in the OpenAI chat shape (system prompt first; tool_use blocks as tool_calls, thinking blocks as
// reasoning_content, each tool_result block as a `tool` message) so both APIs reach the renderer
// through one conversion (conversationFromOpenAI: tool declarations in the family's format, images
// for vision models). Everything the shape cannot carry is refused here, named by its place in the
// Anthropic request.
import { conversationFromOpenAI, type OpenAIChatMessage, type OpenAITool } from '../../cookbook/renderers/openai-format.js';
import type { Message, Renderer } from '../../cookbook/renderers/types.js';
import { invalid, type AnthropicMessageIn, type AnthropicToolIn, type Block, type CountTokensRequest } from './requests.js';

type Part = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } };

export interface AnthropicConversation {
  conversation: Message[];
  /** tool_choice "none": tool calls the model writes anyway are answered as text. */
  toolsForbidden: boolean;
}

export function conversationFromAnthropic(renderer: Renderer, req: CountTokensRequest): AnthropicConversation {
  if (req.output_config?.format) throw invalid('output_config.format: structured outputs are not supported (the Tinker sampling API cannot constrain decoding); leave it out');
  const systemTexts: string[] = [];
  if (req.system != null) systemTexts.push(textOf(req.system, 'system'));
  const messages: OpenAIChatMessage[] = [];
  const toolNames = new Map<string, string>();
  req.messages.forEach((m, i) => {
    if (m.role === 'system') systemTexts.push(textOf(m.content, `messages.${i}.content`));
    else if (m.role === 'assistant') messages.push(assistantMessage(m, i, toolNames));
    else messages.push(...userMessages(m, i, renderer, toolNames));
  });
  if (!messages.length) throw invalid('messages: at least one message is required');
  if (req.messages[req.messages.length - 1].role === 'assistant') {
    throw invalid(`messages.${req.messages.length - 1}: a final assistant message (prefill) is not supported; the model answers after the last user message`);
  }
  const system = systemTexts.filter(Boolean).join('\n\n');
  const openAI: OpenAIChatMessage[] = system ? [{ role: 'system', content: system }, ...messages] : messages;
  const toolChoice = toolChoiceOf(req.tool_choice);
  const conversation = conversationFromOpenAI(renderer, openAI, req.tools?.map(toolOf), toolChoice);
  return { conversation, toolsForbidden: toolChoice === 'none' };
}

function blocksOf(content: string | Block[]): Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

/** Text blocks joined; any other block is refused. */
function textOf(content: string | Block[], where: string): string {
  return blocksOf(content)
    .map((b, j) => {
      if (b.type !== 'text') throw invalid(`${where}.${j}: only text blocks are supported here, not "${b.type}"`);
      return textField(b, `${where}.${j}`);
    })
    .join('');
}

function textField(b: Block, where: string): string {
  if (typeof b.text !== 'string') throw invalid(`${where}.text: Field required`);
  return b.text;
}

function assistantMessage(m: AnthropicMessageIn, i: number, toolNames: Map<string, string>): OpenAIChatMessage {
  const where = `messages.${i}.content`;
  const texts: string[] = [];
  const reasoning: string[] = [];
  const calls: NonNullable<OpenAIChatMessage['tool_calls']> = [];
  blocksOf(m.content).forEach((b, j) => {
    const at = `${where}.${j}`;
    if (b.type === 'text') texts.push(textField(b, at));
    else if (b.type === 'thinking') reasoning.push(typeof b.thinking === 'string' ? b.thinking : '');
    else if (b.type === 'redacted_thinking') return; // Claude's encrypted reasoning: nothing a renderer can show
    else if (b.type === 'tool_use') {
      if (typeof b.id !== 'string' || !b.id) throw invalid(`${at}.id: Field required`);
      if (typeof b.name !== 'string' || !b.name) throw invalid(`${at}.name: Field required`);
      if (b.input === null || typeof b.input !== 'object' || Array.isArray(b.input)) throw invalid(`${at}.input: Input should be an object`);
      toolNames.set(b.id, b.name);
      calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } });
    } else throw invalid(`${at}: an assistant message takes text, thinking and tool_use blocks, not "${b.type}"`);
  });
  return { role: 'assistant', content: texts.join(''), ...(reasoning.length ? { reasoning_content: reasoning.join('\n') } : {}), ...(calls.length ? { tool_calls: calls } : {}) };
}

/** A user turn: its tool results (each a `tool` message, in order), then its text and images. */
function userMessages(m: AnthropicMessageIn, i: number, renderer: Renderer, toolNames: Map<string, string>): OpenAIChatMessage[] {
  const where = `messages.${i}.content`;
  if (typeof m.content === 'string') return [{ role: 'user', content: m.content }];
  const results: OpenAIChatMessage[] = [];
  const parts: Part[] = [];
  m.content.forEach((b, j) => {
    const at = `${where}.${j}`;
    if (b.type === 'text') parts.push({ type: 'text', text: textField(b, at) });
    else if (b.type === 'image') parts.push({ type: 'image_url', image_url: { url: imageUrl(b, at, renderer) } });
    else if (b.type === 'tool_result') {
      if (typeof b.tool_use_id !== 'string' || !b.tool_use_id) throw invalid(`${at}.tool_use_id: Field required`);
      const content = b.content == null ? '' : textOf(b.content as string | Block[], `${at}.content`);
      const name = toolNames.get(b.tool_use_id);
      results.push({ role: 'tool', tool_call_id: b.tool_use_id, content, ...(name ? { name } : {}) });
    } else throw invalid(`${at}: a user message takes text, image and tool_result blocks, not "${b.type}"`);
  });
  if (!parts.length) return results;
  const content = parts.every((p) => p.type === 'text') ? parts.map((p) => (p as { text: string }).text).join('') : parts;
  return [...results, { role: 'user', content }];
}

/** An image block as the URL the OpenAI conversion decodes: base64 data, or a file on this machine. */
function imageUrl(b: Block, where: string, renderer: Renderer): string {
  if (!renderer.takesImages) throw invalid(`${where}: renderer ${renderer.name} renders text only; send images to a vision model`);
  const source = b.source as { type?: string; media_type?: string; data?: string; url?: string } | undefined;
  if (source?.type === 'base64' && typeof source.data === 'string' && typeof source.media_type === 'string') return `data:${source.media_type};base64,${source.data}`;
  if (source?.type === 'url' && typeof source.url === 'string') {
    if (source.url.startsWith('file://') || source.url.startsWith('/')) return source.url;
    throw invalid(`${where}.source.url: remote images are not fetched; send the image as base64 data`);
  }
  throw invalid(`${where}.source: a base64 source (media_type, data) or a url source is required`);
}

function toolOf(t: AnthropicToolIn, i: number): OpenAITool {
  if (t.type != null && t.type !== 'custom') {
    throw invalid(`tools.${i}: Anthropic's server tool "${t.type}" is not supported; declare client tools (name, description, input_schema)`);
  }
  return { type: 'function', function: { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters: t.input_schema ?? { type: 'object', properties: {} } } };
}

function toolChoiceOf(choice: CountTokensRequest['tool_choice']): 'auto' | 'none' | undefined {
  if (!choice) return undefined;
  if (choice.type === 'auto' || choice.type === 'none') return choice.type;
  throw invalid(`tool_choice: forced tool use ("${choice.type}") is not supported: the model decides whether to call a tool; send {"type": "auto"} or {"type": "none"}`);
}
