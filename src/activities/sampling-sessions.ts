// Sampling sessions a worker shares between the activities that sample the same weights: the
// reference opens one SamplingClient per step for all of its rollouts, and each of our rollout
// activities opening its own costs a request and a checksum of the weights on the server each.
// Seeds are per sample request, so which session serves a rollout changes nothing it samples.
import type { SamplingSession } from '../backends/types.js';

export class SamplingSessions {
  private readonly sessions = new Map<string, Promise<SamplingSession>>();

  /** `max`: sessions kept (the most recently used); async RL samples from a few steps at once. */
  constructor(private readonly max = 8) {}

  /**
   * Runs `fn` on the session for `key`, opened with `open` if this worker has none. A failure drops
   * the session, so a retry opens a new one (a restarted server knows no old session).
   */
  async use<T>(key: string, open: () => Promise<SamplingSession>, fn: (session: SamplingSession) => Promise<T>): Promise<T> {
    let session = this.sessions.get(key);
    if (session) {
      this.sessions.delete(key); // re-inserted below: Map order is the recency order
    } else {
      session = open();
    }
    this.sessions.set(key, session);
    for (const oldest of this.sessions.keys()) {
      if (this.sessions.size <= this.max) break;
      this.sessions.delete(oldest);
    }
    try {
      return await fn(await session);
    } catch (err) {
      if (this.sessions.get(key) === session) this.sessions.delete(key);
      throw err;
    }
  }
}
