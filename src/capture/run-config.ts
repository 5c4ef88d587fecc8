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

