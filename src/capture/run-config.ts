// A run config's `capture` field (every run kind takes it): `true` records the run into the default
// capture store, `{"dir": …}` into the store of a data folder, `{"url": …}` into a running store.
// Schema only, no I/O: configs are parsed where no Node built-in may be imported.
import { z } from 'zod';

export const RunCaptureSchema = z.union([
  z.boolean(),
  z
    .strictObject({
      /** The store's data folder (its daemon is started when none runs there). */
      dir: z.string().min(1).optional(),
      /** A running store daemon's base URL. */
      url: z.string().regex(/^https?:\/\//, 'an http(s):// URL').optional(),
    })
    .refine((c) => !(c.dir && c.url), 'set dir or url, not both'),
]);
export type RunCaptureConfig = z.output<typeof RunCaptureSchema>;

/** The store a config names: undefined when capture is off, '' for the default folder. */
export function runCaptureTarget(capture: RunCaptureConfig | undefined): string | undefined {
  if (capture === undefined || capture === false) return undefined;
  if (capture === true) return '';
  return capture.url ?? capture.dir ?? '';
}


/** The run kinds whose activities record into a capture store; elsewhere the field would do nothing. */
export const CAPTURING_KINDS: readonly string[] = ['sl', 'rl'];

/** Why a `capture` field cannot stand in a run of this kind (undefined: it can). */
export function captureRefusal(kind: string, capture: RunCaptureConfig | undefined): string | undefined {
  if (runCaptureTarget(capture) === undefined || CAPTURING_KINDS.includes(kind)) return undefined;
  return `capture: ${CAPTURING_KINDS.join(' and ')} runs record their samples and training calls; a ${kind} run does not yet (leave capture out)`;
}
