// Checkpoints saved with a TTL (rolling ones above all) are deleted by the backend once it runs out;
// checkpoints.jsonl rows record when (`expires_at`, taken just before the save was sent, so never
// later than the backend's own). Readers that pick a row to load from skip rows that have expired
// or will within EXPIRY_MARGIN_MS, the time a load may take to reach the backend.

export const EXPIRY_MARGIN_MS = 5 * 60_000;

/** The `expires_at` a row gets for a save sent now with `ttlSeconds` (none without a TTL). */
export function rowExpiry(ttlSeconds: number | null | undefined, nowMs = Date.now()): { expires_at?: string } {
  return ttlSeconds == null ? {} : { expires_at: new Date(nowMs + ttlSeconds * 1000).toISOString() };
}

/** Whether a row's checkpoint is gone, or too close to going to be loaded. Rows without `expires_at` never expire. */
export function rowExpired(row: Record<string, unknown>, nowMs = Date.now(), marginMs = EXPIRY_MARGIN_MS): boolean {
  if (typeof row.expires_at !== 'string') return false;
  const at = Date.parse(row.expires_at);
  return Number.isFinite(at) && at <= nowMs + marginMs;
}
