// Renderers of model families with a tool-call format declare tools in the conversation prefix;
// an agent env checks its renderer is one of them before building any episode.
import { ConfigurationError } from '../errors.js';
import type { Message, Renderer, ToolSpec } from '../renderers/types.js';

export interface ToolDeclaringRenderer extends Renderer {
  createConversationPrefixWithTools(tools: ToolSpec[], systemPrompt?: string): Message[];
}

/** `renderer` as one that declares tools; else a ConfigurationError naming `envName`. */
export function toolDeclaring(renderer: Renderer, envName: string): ToolDeclaringRenderer {
  const r = renderer as Partial<ToolDeclaringRenderer> & Renderer;
  if (typeof r.createConversationPrefixWithTools !== 'function') throw new ConfigurationError(`${envName}: renderer ${renderer.name} cannot declare tools`);
  return r as ToolDeclaringRenderer;
}
