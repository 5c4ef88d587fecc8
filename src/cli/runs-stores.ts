// `cookbook runs --store <uri> [--store <uri> …]`: the runs found in run stores (local folders and
// buckets together, stores/registry.ts), each with Temporal's status when Temporal is reachable and
// knows the workflow, else the status the files imply (marked "inferred"). A store that cannot be
// read is one line on stderr naming it; the other stores are still listed.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { RunRegistry, type RunInfo } from '../cookbook/stores/registry.js';
import { StatusKey } from '../workflows/shared/search-attributes.js';
import { formatNumber } from './numbers.js';
import { elideMiddle, elideStart, statusCell } from './runs-table.js';

/** Metrics people look at first, by kind; else the row's first two. */
const PREFERRED_METRICS = ['env/all/reward/total', 'train_mean_nll', 'test/nll', 'dpo_loss', 'loss', 'score', 'accuracy', 'pass_rate'];
const CONCURRENCY = 8;
const MAX_ID = 40;
const MAX_MODEL = 28;

/** Up to two `key=value` of a metrics row. */
export function metricsCell(row: Record<string, unknown> | null): string {
  if (!row) return '';
  const numeric = Object.keys(row).filter((k) => typeof row[k] === 'number' && k !== 'step');
  const preferred = PREFERRED_METRICS.filter((k) => numeric.includes(k));
  const rest = numeric.filter((k) => !preferred.includes(k) && !/^(progress|optim|time|timing)\//.test(k));
  return [...preferred, ...rest]
    .slice(0, 2)
    .map((k) => `${k}=${formatNumber(row[k] as number, 4)}`)
    .join(' ');
}

/** Temporal's status of each run it knows (by workflow id), as the `runs` table words it. */
async function temporalStatuses(client: Client, runs: RunInfo[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const ids = [...new Set(runs.filter((r) => r.hasRecord).map((r) => r.id))];
  for (let i = 0; i < ids.length; i += CONCURRENCY) {
    await Promise.all(
      ids.slice(i, i + CONCURRENCY).map(async (id) => {
        try {
          const desc = await client.workflow.getHandle(id).describe();
          out.set(id, statusCell(String(desc.typedSearchAttributes.get(StatusKey) ?? ''), desc.status.name));
        } catch (err) {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        }
      }),
    );
  }
  return out;
}

export interface StoreRunsOptions {
  /** Temporal's client; a rejection (Temporal not reachable) leaves every status inferred. */
  connect: () => Promise<Client>;
  wide?: boolean;
}

export interface StoreRunsOutput {
  /** The table (or a line saying no run was found). */
  lines: string[];
  /** For stderr: unreadable stores, walks cut short, Temporal not reachable. */
  notes: string[];
  /** Whether some store could not be read. */
  failed: boolean;
}

export async function listStoreRuns(stores: string[], o: StoreRunsOptions): Promise<StoreRunsOutput> {
  const scans = await new RunRegistry(stores).refresh();
  const notes: string[] = [];
  for (const s of scans) {
    if (s.error) notes.push(`error: ${s.error}`);
    if (s.truncated) notes.push(`${s.store}: ${s.truncated}`);
  }
  const runs = scans.flatMap((s) => s.runs);
  let temporal = new Map<string, string>();
  if (runs.some((r) => r.hasRecord)) {
    try {
      temporal = await temporalStatuses(await o.connect(), runs);
    } catch (err) {
      notes.push(`statuses inferred from the files: ${(err as Error).message}`);
    }
  }
  const failed = scans.some((s) => s.error);
  if (runs.length === 0) return { lines: [`no runs in ${stores.filter((s) => !scans.find((x) => x.store === s)?.error).join(', ') || 'the stores given'}`], notes, failed };

  const header = ['RUN', 'KIND', 'MODEL', 'STATUS', 'STEP', 'METRICS', 'STORE URI'];
  const cells = runs.map((r) => [
    o.wide ? r.id : elideMiddle(r.id, MAX_ID),
    r.kind ?? '?',
    o.wide ? (r.model ?? '') : elideStart(r.model ?? '', MAX_MODEL),
    temporal.get(r.id) ?? `${r.status} (inferred)`,
    r.lastStep === null ? '' : String(r.lastStep),
    metricsCell(r.lastMetrics),
    r.uri,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const lines = [header, ...cells].map((row) => row.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
  if (!o.wide && runs.some((r) => r.id.length > MAX_ID || (r.model ?? '').length > MAX_MODEL)) lines.push('(… marks a shortened id or model: `--wide` prints them whole)');
  return { lines, notes, failed };
}

/** The command: the table on stdout, notes on stderr; exit 1 when a store could not be read. */
export async function storeRunsCommand(stores: string[], o: StoreRunsOptions): Promise<number> {
  const { lines, notes, failed } = await listStoreRuns(stores, o);
  for (const n of notes) console.error(n);
  console.log(lines.join('\n'));
  return failed ? 1 : 0;
}
