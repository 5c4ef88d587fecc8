// TuFT 0.2.2 in the compatibility matrix (matrix.ts): its CPU test mode, whose training and sampling
// backends are dummies, so these runs prove the protocol, not the learning.
import { peerMatrix } from './matrix.js';

peerMatrix('tuft', { rl: true, dpo: true, chat: true });
