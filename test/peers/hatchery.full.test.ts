// hatchery-core 0.3.0 in the compatibility matrix (matrix.ts): its real trainer on CPU
// (src/stack/hatchery_cpu.py), not local_dev's scripted stub. RL and DPO sample from checkpoints
// saved under a path (the policy's sampler weights, DPO's reference), which hatchery 0.3.0 without
// an external sampler (vLLM) does not write: its `save_weights_for_sampler` returns the path, then
// `create_sampling_session` on it fails (500 KeyError …/lora_weights.pt). That is hatchery's, listed
// in docs/tinker-compat.md; those two rows are not run here.
import { peerMatrix } from './matrix.js';

peerMatrix('hatchery', { rl: false, dpo: false, chat: true });
