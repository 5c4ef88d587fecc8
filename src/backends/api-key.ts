// Which API key a Tinker backend gets, in a module of its own so that a CLI command that only asks
// the backend something (`cookbook models`) does not load the Temporal worker to learn it.

/**
 * The API key for a backend: the given one, else TINKER_API_KEY, else — for an engine on this
 * machine, which accepts any `tml-` key unless started with --api-key — a placeholder.
 */
export function apiKeyFor(baseUrl: string, explicit?: string): string | undefined {
  const key = explicit ?? process.env.TINKER_API_KEY;
  if (key) return key;
  const host = new URL(baseUrl).hostname;
  return host === '127.0.0.1' || host === 'localhost' || host === '[::1]' ? 'tml-local' : undefined;
}
