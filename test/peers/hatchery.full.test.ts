// hatchery-core 0.3.0 in the compatibility matrix (matrix.ts): its real trainer on CPU
// (src/stack/hatchery_cpu.py), not local_dev's scripted stub.
import { peerMatrix } from './matrix.js';

peerMatrix('hatchery', { rl: true, dpo: true, chat: true });
