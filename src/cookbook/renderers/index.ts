export * from './types.js';
export * from './content.js';
export { BaseRenderer, parseResponseForStopToken, parseResult } from './base.js';
export { RoleColonRenderer } from './role-colon.js';
export { Llama3Renderer } from './llama3.js';
export { Qwen3Renderer, Qwen3DisableThinkingRenderer, Qwen3InstructRenderer } from './qwen3.js';
export * from './registry.js';
