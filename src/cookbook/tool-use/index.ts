// Public API of the tool-use library (reference 0.6.1 tool_use/__init__.py).
export * from './types.js';
export * from './results.js';
export * from './tools.js';
export * from './json-schema.js';
export * from './agent-tool-env.js';
export * from './durable.js';
export * from './declaring.js';
