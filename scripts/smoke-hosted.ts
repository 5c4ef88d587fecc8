// `TINKER_API_KEY=tml-… npm run smoke:hosted`: a short check of the TypeScript client against the
// hosted Tinker service (or any server named by TINKER_BASE_URL): two supervised steps, one
// checkpoint, one sample and one compute_logprobs, printing what it did. Opt-in and outside CI (it
// needs the network and an API key). TINKER_SMOKE_MODEL picks the base model; by default the
// smallest-looking Qwen3 or Llama model the server lists.

import { createTinkerBackend, DEFAULT_BASE_URL, type Datum } from '../src/backends/index.js';

const apiKey = process.env.TINKER_API_KEY;
if (!apiKey) {
  console.error('smoke:hosted needs TINKER_API_KEY (and optionally TINKER_BASE_URL, TINKER_SMOKE_MODEL)');
  process.exit(2);
}
const baseUrl = process.env.TINKER_BASE_URL ?? DEFAULT_BASE_URL;
const backend = createTinkerBackend({ baseUrl, apiKey });

function datum(seq: number[]): Datum {
  const targets = seq.slice(1);
  return {
    model_input: { chunks: [{ type: 'encoded_text', tokens: seq.slice(0, -1) }] },
    loss_fn_inputs: {
      target_tokens: { data: targets, dtype: 'int64', shape: [targets.length] },
      weights: { data: targets.map(() => 1), dtype: 'float32', shape: [targets.length] },
    },
  };
}

function pickModel(names: string[]): string {
  const wanted = process.env.TINKER_SMOKE_MODEL;
  if (wanted) return wanted;
  const size = (n: string) => Number(/(\d+(?:\.\d+)?)B/i.exec(n)?.[1] ?? Infinity);
  const candidates = names.filter((n) => /qwen3|llama/i.test(n)).sort((a, b) => size(a) - size(b));
  if (candidates.length === 0 && names.length === 0) throw new Error('the server lists no models');
  return candidates[0] ?? names[0];
}

const log = (what: string, detail: unknown) => console.log(`${what}: ${JSON.stringify(detail)}`);

try {
  const caps = await backend.capabilities();
  const model = pickModel(caps.supported_models.map((m) => m.model_name ?? '').filter(Boolean));
  log('server', { baseUrl, models: caps.supported_models.length, model });

  const session = await backend.createTrainingSession({ baseModel: model, lora: { rank: 8, seed: 0 } });
  log('training session', { modelId: session.modelId });
  // Token ids below 2000 exist in every vocabulary the service offers.
  const data = [0, 1].map((i) => datum(Array.from({ length: 32 }, (_, j) => 1000 + ((i * 7 + j) % 40))));
  let seqId = 1;
  for (let step = 0; step < 2; step++) {
    const fb = await session.forwardBackward(data, 'cross_entropy', { seqId });
    seqId += fb.seqIds;
    const opt = await session.optimStep({ learning_rate: 1e-4 }, { seqId });
    seqId += opt.seqIds;
    const [out] = await Promise.all([fb.result(), opt.result()]);
    log(`step ${step}`, { loss: out.metrics['loss:sum'] });
  }
  const save = await session.saveWeightsForSampler('smoke', { seqId });
  const { path } = await save.result();
  log('saved sampler weights', { path });

  const sampler = await backend.createSamplingSession({ modelPath: path });
  const prompt = { chunks: [{ type: 'encoded_text' as const, tokens: [1000, 1001, 1002, 1003] }] };
  const sample = await sampler.sample(prompt, 2, { max_tokens: 8, seed: 1, temperature: 1 });
  log('sample', sample.sequences.map((s) => ({ tokens: s.tokens, stop: s.stop_reason, id: s.sequence_id })));
  const logprobs = await sampler.computeLogprobs(prompt);
  log('compute_logprobs', logprobs);
  console.log('smoke:hosted passed');
} finally {
  await backend.close();
}
