// Public API of the cookbook library (plain TypeScript, no Temporal imports).
export * from './errors.js';
export * from './float32.js';
export * from './pyjson.js';
export * from './model-input.js';
export * from './tokenizer.js';
export * from './lr-schedule.js';
export * from './shuffle.js';
export * from './renderers/index.js';
export * from './supervised/index.js';
export * from './misc-utils.js';
