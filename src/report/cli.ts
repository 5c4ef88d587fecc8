// The `report` command's options → a written file, or a server that runs until Ctrl-C.
import { ConfigError } from '../cookbook/config/overrides.js';
import type { LogDirLookup } from './resolve.js';
import { resolveTargets, writeReport } from './report.js';
import { serveReport } from './serve.js';
import { writeTrace } from './trace.js';

export interface ReportCommandOptions {
  out?: string;
  serve: boolean;
  port?: string;
  rolloutIterations?: string;
  /** Write the runs' timing spans as a Chrome trace-event file (Perfetto) here, instead of the page (unless `out` asks for it too). */
  trace?: string;
}

function positiveInt(flag: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`report: --${flag} must be an integer ≥ ${min}, got "${value}"`);
  return n;
}

export async function reportCommand(targets: string[], opts: ReportCommandOptions, lookup: LogDirLookup): Promise<number> {
  const rolloutIterations = positiveInt('rollout-iterations', opts.rolloutIterations, 0);
  const port = positiveInt('port', opts.port, 0);
  if (opts.trace !== undefined && opts.serve) throw new ConfigError('report: --trace writes a file; --serve writes none (choose one)');
  if (!opts.serve) {
    if (opts.port !== undefined) throw new ConfigError('report: --port goes with --serve');
    if (opts.trace !== undefined) {
      const events = await writeTrace(targets, opts.trace, { lookup });
      console.log(`wrote ${opts.trace} (${events} spans; open it in https://ui.perfetto.dev or chrome://tracing)`);
      if (opts.out === undefined) return 0;
    }
    console.log(`wrote ${await writeReport(targets, { out: opts.out, lookup, rolloutIterations })}`);
    return 0;
  }
  if (opts.out !== undefined) throw new ConfigError('report: --out writes a file; --serve writes none (choose one)');
  const logDirs = await resolveTargets(targets, lookup);
  const { url, close } = await serveReport(logDirs, { port, rolloutIterations });
  console.log(`serving the report of ${logDirs.join(', ')}\nopen ${url}   (it refreshes itself; Ctrl-C to stop)`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await close();
  return 0;
}
