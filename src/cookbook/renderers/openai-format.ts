// OpenAI chat messages to the cookbook's Message shape and back: text and image_url parts, reasoning
// (`reasoning_content`, a thinking part), tool calls and tool results, and the tools a request
// offers, which the renderer declares in its family's format (a system prefix for Qwen3, a
// developer message for gpt-oss, …). `cookbook serve` renders requests with it, and environments
// written against an OpenAI client reach the policy through it.
import { randomBytes } from 'node:crypto';
import { CookbookError, RendererError } from '../errors.js';
import { firstImagePart } from './image-parts.js';
import type { Content, ContentPart, Message, Renderer, TextPart, ToolCall, ToolSpec } from './types.js';

/** A chat message as the OpenAI API carries it (the fields read here). */
export interface OpenAIChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | Array<{ type: string; [key: string]: unknown }> | null;
  reasoning_content?: string | null;
  tool_calls?: Array<{ id?: string; type?: 'function'; function: { name: string; arguments: string } }> | null;
  tool_call_id?: string;
  name?: string;
}

export interface OpenAITool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/** What the OpenAI API returns as a choice's message. */
export interface OpenAIAssistantMessage {
  role: 'assistant';
  content: string | null;
  reasoning_content?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
}

/** A message or tool list the format cannot take; `param` names where, as the OpenAI API does. */
export class OpenAIFormatError extends CookbookError {
  constructor(
    message: string,
    readonly param: string,
    readonly code: 'invalid_value' | 'unsupported_parameter',
  ) {
    super(message);
  }
}

/** Renderers that can declare tools (the reference's create_conversation_prefix_with_tools). */
interface ToolRenderer {
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt?: string): Message[];
}

const canDeclareTools = (r: Renderer): r is Renderer & ToolRenderer =>
  typeof (r as Partial<ToolRenderer>).createConversationPrefixWithTools === 'function';

/**
 * An `image_url` part's image: a `data:` URL or a local file (`file://` URL or absolute path),
 * decoded later by loadMessageImages. Remote URLs are refused: the server does not fetch on a
 * request's behalf (no network reach to lean on, no SSRF), as the reference's image_to_data_uri.
 */
function imageOf(part: { [key: string]: unknown }, where: string): string {
  const imageUrl = part.image_url as { url?: unknown } | string | undefined;
  const url = typeof imageUrl === 'string' ? imageUrl : imageUrl?.url;
  if (typeof url !== 'string' || !url) {
    throw new OpenAIFormatError(`${where}.image_url.url must be a data: URL or a local file`, `${where}.image_url.url`, 'invalid_value');
  }
  if (url.startsWith('data:') || url.startsWith('file://') || url.startsWith('/')) return url;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1];
  throw new OpenAIFormatError(
    scheme
      ? `${where}.image_url.url: remote image URLs (${scheme}:) are not fetched; send the image inline as a data: URL (base64) or as a local file:// path`
      : `${where}.image_url.url must be a data: URL, a file:// URL or an absolute path, got ${JSON.stringify(url.slice(0, 80))}`,
    `${where}.image_url.url`,
    scheme ? 'unsupported_parameter' : 'invalid_value',
  );
}

/** Text parts joined (a string, as before), or text and image parts when the message has images. */
function contentOf(content: OpenAIChatMessage['content'], where: string): Content {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  const parts = content.map((part, i): ContentPart => {
    const at = `${where}.content[${i}]`;
    if (part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text };
    if (part.type === 'image_url') return { type: 'image', image: imageOf(part, at) };
    throw new OpenAIFormatError(`${at}: content parts of type "${part.type}" are not supported (text and image_url only)`, at, 'unsupported_parameter');
  });
  if (parts.some((p) => p.type === 'image')) return parts;
  return parts.map((p) => (p as TextPart).text).join('');
}

function textOf(content: OpenAIChatMessage['content'], where: string): string {
  const c = contentOf(content, where);
  if (typeof c === 'string') return c;
  throw new OpenAIFormatError(`${where}: image parts are only taken in user and system messages`, `${where}.content`, 'unsupported_parameter');
}

function toMessage(m: OpenAIChatMessage, i: number): Message {
  const where = `messages[${i}]`;
  if (m.role === 'assistant') {
    const text = textOf(m.content, where);
    const message: Message = { role: 'assistant', content: m.reasoning_content ? [{ type: 'thinking', thinking: m.reasoning_content }, { type: 'text', text }] : text };
    if (m.tool_calls?.length) {
      message.tool_calls = m.tool_calls.map((c, j): ToolCall => {
        try {
          JSON.parse(c.function.arguments);
        } catch {
          throw new OpenAIFormatError(`${where}.tool_calls[${j}].function.arguments is not valid JSON`, `${where}.tool_calls[${j}].function.arguments`, 'invalid_value');
        }
        return { type: 'function', id: c.id ?? null, function: { name: c.function.name, arguments: c.function.arguments } };
      });
    }
    return message;
  }
  if (m.content == null) throw new OpenAIFormatError(`${where}: a ${m.role} message needs content`, `${where}.content`, 'invalid_value');
  if (m.role === 'tool') {
    const text = textOf(m.content, where);
    return { role: 'tool', content: text, ...(m.tool_call_id ? { tool_call_id: m.tool_call_id } : {}), ...(m.name ? { name: m.name } : {}) };
  }
  // OpenAI's `developer` role is its newer name for the system prompt.
  return { role: m.role === 'developer' ? 'system' : m.role, content: contentOf(m.content, where) };
}

function toolSpec(t: OpenAITool): ToolSpec {
  const { name, description, parameters } = t.function;
  // Keys in the order the reference's ToolSpec has them; absent ones stay absent, as in a dict.
  return { name, ...(description !== undefined ? { description } : {}), ...(parameters !== undefined ? { parameters } : {}) } as ToolSpec;
}

/** The conversation to render: the messages, with the tools declared when any are offered. */
export function conversationFromOpenAI(renderer: Renderer, messages: OpenAIChatMessage[], tools?: OpenAITool[] | null, toolChoice?: unknown): Message[] {
  const converted = messages.map(toMessage);
  const image = renderer.takesImages ? undefined : firstImagePart(converted);
  if (image) {
    throw new OpenAIFormatError(`${image}: renderer ${renderer.name} renders text only; send images to a vision model`, image, 'unsupported_parameter');
  }
  if (toolChoice != null && toolChoice !== 'auto' && toolChoice !== 'none') {
    throw new OpenAIFormatError('tool_choice: only "auto" and "none" are supported (the model decides whether to call a tool)', 'tool_choice', 'unsupported_parameter');
  }
  if (!tools?.length || toolChoice === 'none') return converted;
  if (!canDeclareTools(renderer)) {
    throw new OpenAIFormatError(`tools: renderer ${renderer.name} has no tool-calling format; send the request without tools or use a renderer that has one`, 'tools', 'unsupported_parameter');
  }
  const [first, ...rest] = converted;
  const hasSystem = first?.role === 'system';
  const systemPrompt = hasSystem ? first.content : '';
  if (typeof systemPrompt !== 'string') {
    // The formats' tool declarations take the system prompt as text (the reference's
    // create_conversation_prefix_with_tools(tools, system_prompt: str)).
    throw new OpenAIFormatError(
      'messages[0]: a system message with images cannot be combined with tools (the tool declaration takes a text system prompt); put the images in a user message',
      'messages[0].content',
      'unsupported_parameter',
    );
  }
  let prefix: Message[];
  try {
    prefix = renderer.createConversationPrefixWithTools(tools.map(toolSpec), systemPrompt);
  } catch (err) {
    if (err instanceof RendererError) throw new OpenAIFormatError(`tools: ${err.message}`, 'tools', 'unsupported_parameter');
    throw err;
  }
  return [...prefix, ...(hasSystem ? rest : converted)];
}

/**
 * A parsed assistant message as the OpenAI API returns it: text, reasoning apart, tool calls with
 * ids (the model's own, else `idFor(i)`, else random).
 */
export function openAIAssistantMessage(message: Message, idFor?: (index: number) => string): OpenAIAssistantMessage {
  const parts = typeof message.content === 'string' ? [{ type: 'text' as const, text: message.content }] : message.content;
  let text = parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
  const reasoning = parts.filter((p) => p.type === 'thinking').map((p) => (p as { thinking: string }).thinking);
  // A tool call the model wrote but that does not parse stays visible as text rather than vanish.
  for (const u of message.unparsed_tool_calls ?? []) if (!text.includes(u.raw_text)) text += u.raw_text;
  const calls = (message.tool_calls ?? []).map((c, i) => ({ id: c.id ?? idFor?.(i) ?? `call_${randomBytes(12).toString('hex')}`, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments } }));
  const out: OpenAIAssistantMessage = { role: 'assistant', content: text || calls.length === 0 ? text : null };
  if (reasoning.length) out.reasoning_content = reasoning.join('\n');
  if (calls.length) out.tool_calls = calls;
  return out;
}
