// Preference learning (DPO): comparison data, datums and the loss.
export * from './comparisons.js';
export * from './dataset.js';
export * from './dpo-loss.js';
