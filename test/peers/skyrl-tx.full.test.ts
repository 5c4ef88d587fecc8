// SkyRL-tx 0.3.0 (JAX, real training on CPU) in the compatibility matrix (matrix.ts).
import { peerMatrix } from './matrix.js';

peerMatrix('skyrl-tx', { rl: true, dpo: true, chat: true });
