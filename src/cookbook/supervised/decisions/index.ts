// Decision models (reference recipes/decisions): a probability over user-defined choices from one
// answer token, trained by cross-entropy on a label or by a loss on the choice distribution.
export * from './decision.js';
export * from './datums.js';
export * from './probability-loss.js';
export * from './sample.js';
export * from './data.js';
export * from './run-data.js';
export * from './score.js';
