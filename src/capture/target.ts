// Where captured rows go: a store daemon's URL as given, or the daemon of a data folder (started
// detached when none runs there, reused when one does). `cookbook serve --capture [DIR|URL]`,
// `cookbook capture export --store`, and a run config's `capture` all name a store this way.
import { resolve } from 'node:path';

export const isStoreUrl = (target: string) => /^https?:\/\//i.test(target);

/**
 * The store's base URL for a target ('' or undefined: the default folder). A URL must answer as a
 * capture store (its /healthz), so that a wrong one fails here, not on every batch later.
 */
export async function captureStoreUrl(target: string | undefined): Promise<string> {
  if (target && isStoreUrl(target)) {
    const url = target.replace(/\/+$/, '');
    let answer: Response;
    try {
      answer = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      throw new Error(`no capture store answers at ${url} (${(err as Error).message}); start one with \`cookbook capture serve\` or give its data folder instead`);
    }
    if (!answer.ok) throw new Error(`${url} is not a capture store (GET /healthz answered ${answer.status})`);
    return url;
  }
  const { defaultCaptureDir, ensureCaptureStore } = await import('./store/client.js');
  return ensureCaptureStore(resolve(target || defaultCaptureDir()));
}

/**
 * `--capture` may stand alone (the default folder): given without a value, or followed by another
 * flag, it becomes `--capture=` for parseArgs, which wants a value for a string option.
 */
export function bareCaptureFlag(argv: string[]): string[] {
  return argv.map((a, i) => (a === '--capture' && (i + 1 >= argv.length || argv[i + 1].startsWith('-')) ? '--capture=' : a));
}
