// Public API of the RL library (plain TypeScript, no Temporal imports).
export * from './types.js';
export * from './completers.js';
export * from './seeds.js';
export * from './rollouts.js';
export * from './problem-env.js';
export * from './advantages.js';
export * from './data.js';
export * from './kl.js';
export * from './metrics.js';
export * from './serialize.js';
export * from './grading.js';
export * from './mt19937.js';
export * from './envs/arithmetic.js';
export * from './envs/math.js';
export * from './envs/gsm8k.js';
export * from './datasets.js';
export * from './registry.js';
