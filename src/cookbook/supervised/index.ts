export * from './datum.js';
export * from './nll.js';
export * from './jsonl.js';
export * from './dataset.js';
