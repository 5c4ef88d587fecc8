// Public API of the distillation library (plain TypeScript, no Temporal imports).
export * from './prompts.js';
export * from './kl.js';
export * from './plan.js';
export * from './teacher-samples.js';
