// Public surface of the backends layer. Nothing here imports Temporal (DESIGN §2).
export * from './types.js';
export { createTinkerBackend, parseTinkerPath, TinkerBackend, type TinkerPath } from './tinker-backend.js';
export { TinkerTrainingSession, ADAM_DEFAULTS } from './training-session.js';
export { TinkerSamplingSession, type SampleOpts } from './sampling-session.js';
export { SamplerPool, isEngineFailure, type PoolEngine, type PoolEvent, type SamplerPoolOptions, type WeightsSource } from './sampler-pool.js';
export { DEFAULT_BASE_URL, SDK_VERSION, DEFAULT_RETRY, type TinkerBackendOptions, type RetryPolicy, type ServerSettings, type Encoding, type Logger } from './config.js';
export { mergeMetrics, combineForwardBackwardOutputs } from './merge.js';
export { chunkData, estimateDatumBytes } from './chunking.js';
export type { TrainingRun, GetSamplerResponse } from './schemas.js';
