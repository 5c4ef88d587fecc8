// Evaluation results through Storage (the reference's `stores/eval_store.py`), on a local folder or
// a bucket alike. Here an evaluation is an eval run: its own folder holding results.json (aggregate
// metrics and every example, as src/activities/eval*.ts write it) and results.md (its table); the
// scheduled evals of a training run are eval runs under `<run>/evals/<checkpoint>/<benchmark>/`,
// the reference's `runs/<run_id>/<benchmark>/result.json`. What of the reference's EvalStore applies:
// list the runs with their scores, read a run's result, its examples filtered as `read_trajectories`
// filters them, write a result, delete a run. Its `runs.jsonl` index and `metadata.json` have no
// counterpart: the run record and results.json say the same, and listing finds the runs.
import { resultsTable, type EvalResultsFile } from '../eval/results.js';
import { SCHEDULED_EVALS_DIR } from '../eval/scheduled.js';
import type { InspectResultsFile, InspectSampleResult } from '../eval/inspect-config.js';
import type { ExampleResult } from '../eval/suites/index.js';
import type { TerminalResultsFile, TerminalTaskResult } from '../eval/suites/terminal-results.js';
import { jsonText } from '../run-store-integrity.js';
import { joinKey, LocalStorage, type Storage } from './storage.js';

export type ResultsFile = EvalResultsFile | TerminalResultsFile | InspectResultsFile;
export type ResultExample = ExampleResult | TerminalTaskResult | InspectSampleResult;
/** A results.json without its examples (or Inspect samples): what it says about the whole run. */
export type ResultsHead = DistributiveOmit<ResultsFile, 'examples' | 'samples'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export interface EvalRunSummary {
  /** The eval run's folder under the store's prefix ('' for the prefix itself). */
  run: string;
  uri: string;
  /** The benchmark (suite) or Inspect task. */
  benchmark: string;
  model: string;
  base_model: string;
  metrics: Record<string, number>;
  /** Examples graded (an Inspect run: samples), from the metrics; null when they do not say. */
  examples: number | null;
  /** A scheduled eval's checkpoint (its folder under `evals/`), else null. */
  checkpoint: string | null;
}

export interface ExampleFilter {
  correctOnly?: boolean;
  /** Graded and not correct (an errored example or task is left out, as the reference's `incorrect_only`). */
  incorrectOnly?: boolean;
  errorsOnly?: boolean;
}

/** Eval-run folders below the prefix that listRuns looks in; scheduled evals sit 3 below a training run. */
const MAX_DEPTH = 6;
const RESULTS = 'results.json';
/** results.json's aggregate comes before its examples (the order the eval activities write it in): a head this long holds it. */
const HEAD_BYTES = 64 * 1024;

const examplesOf = (f: ResultsFile): ResultExample[] => ('samples' in f ? f.samples : f.examples);
const benchmarkOf = (f: ResultsHead): string => ('task' in f ? f.task : f.suite);
const isError = (e: ResultExample) => 'status' in e && e.status === 'ERROR';
const isCorrect = (e: ResultExample) => 'correct' in e && e.correct === true;

export class EvalStore {
  constructor(
    readonly storage: Storage,
    /** An eval run's folder, or a folder holding eval runs (a training run's, a store's root). */
    readonly prefix = '',
  ) {}

  url(path = ''): string {
    return this.storage.url(this.path(path));
  }

  private path(...parts: string[]): string {
    return joinKey(this.prefix, ...parts);
  }

  /** The eval run's results.json (`run`: its folder under the prefix), or undefined before it finished. */
  async readResults(run = ''): Promise<ResultsFile | undefined> {
    const got = await this.storage.get(this.path(run, RESULTS));
    return got && this.parse(run, got.data);
  }

  private parse(run: string, data: Buffer): ResultsFile {
    try {
      return JSON.parse(jsonText(data.toString('utf8'))) as ResultsFile;
    } catch (err) {
      throw new Error(`${this.url(joinKey(run, RESULTS))}: not valid JSON (${(err as Error).message})`);
    }
  }

  /**
   * The run's results without their examples, reading only the head of results.json where the
   * backend allows a range read (a listing of many evals, each file holding every example, does
   * not download them all); undefined before the run finished.
   */
  async readHead(run = ''): Promise<ResultsHead | undefined> {
    const path = this.path(run, RESULTS);
    const got = this.storage.getRange ? await this.storage.getRange(path, 0, HEAD_BYTES) : undefined;
    if (!got || got.data.length < got.size) {
      const text = got?.data.toString('utf8');
      // the top-level key of the examples, as JSON.stringify(file, null, 2) indents it
      const cut = text?.search(/\n {2}"(examples|samples)": /) ?? -1;
      if (text !== undefined && cut !== -1) {
        try {
          return JSON.parse(jsonText(`${text.slice(0, cut).replace(/,\s*$/, '')}\n}`)) as ResultsHead;
        } catch {
          // not the layout the activities write: read it whole
        }
      }
    }
    const file = got && got.data.length >= got.size ? this.parse(run, got.data) : await this.readResults(run);
    if (!file) return undefined;
    const { examples: _e, samples: _s, ...head } = file as ResultsFile & { examples?: unknown; samples?: unknown };
    return head as ResultsHead;
  }

  /**
   * Writes results.json as the eval activities do, and results.md: `table`, or for a single-turn
   * benchmark's file the table `cookbook eval` prints.
   */
  async writeResults(file: ResultsFile, run = '', table?: string): Promise<void> {
    await this.storage.put(this.path(run, RESULTS), Buffer.from(`${JSON.stringify(file, null, 2)}\n`));
    const md = table ?? (file.format === 'eval_results/v1' && !('terminal' in file) ? resultsTable(file, file.skipped) : undefined);
    if (md !== undefined) await this.storage.put(this.path(run, 'results.md'), Buffer.from(`${md}\n`));
  }

  /** The run's examples (tasks, Inspect samples), filtered as the reference's `read_trajectories`. */
  async readExamples(run = '', filter: ExampleFilter = {}): Promise<ResultExample[]> {
    const file = await this.readResults(run);
    if (!file) return [];
    return examplesOf(file).filter((e) => {
      if (filter.correctOnly && !isCorrect(e)) return false;
      if (filter.incorrectOnly && (isCorrect(e) || isError(e))) return false;
      if (filter.errorsOnly && !isError(e)) return false;
      return true;
    });
  }

  /** Every finished eval run at or below the prefix (those with results.json), by folder. */
  async listRuns(): Promise<EvalRunSummary[]> {
    const out: EvalRunSummary[] = [];
    const visit = async (run: string, depth: number): Promise<void> => {
      const { dirs, files } = await this.storage.listDir(this.path(run));
      if (files.includes(RESULTS)) {
        const head = await this.readHead(run);
        if (head) out.push(this.summary(run, head));
      }
      if (depth < MAX_DEPTH) await Promise.all(dirs.filter((d) => !d.startsWith('.') && !/^iteration_\d+$/.test(d)).map((d) => visit(joinKey(run, d), depth + 1)));
    };
    await visit('', 0);
    return out.sort((a, b) => (a.run < b.run ? -1 : a.run > b.run ? 1 : 0));
  }

  /** A training run's scheduled evals (the prefix is the training run's folder), by checkpoint then benchmark. */
  async listScheduled(): Promise<EvalRunSummary[]> {
    const out: EvalRunSummary[] = [];
    for (const checkpoint of (await this.storage.listDir(this.path(SCHEDULED_EVALS_DIR))).dirs) {
      for (const benchmark of (await this.storage.listDir(this.path(SCHEDULED_EVALS_DIR, checkpoint))).dirs) {
        const run = joinKey(SCHEDULED_EVALS_DIR, checkpoint, benchmark);
        const head = await this.readHead(run);
        if (head) out.push(this.summary(run, head)); // still running, or failed: no results yet
      }
    }
    return out;
  }

  /** Removes every object of the eval run (no error when it is gone already). */
  async deleteRun(run: string): Promise<void> {
    const folder = this.path(run);
    if (folder === '') throw new Error(`${this.url()}: deleteRun of the store's root refused (name the eval run's folder)`);
    if (this.storage instanceof LocalStorage) return this.storage.deleteTree(folder);
    const objects = await this.storage.list(folder);
    await Promise.all(objects.map((o) => this.storage.delete(o.path)));
  }

  private summary(run: string, file: ResultsHead): EvalRunSummary {
    const scheduled = new RegExp(`(?:^|/)${SCHEDULED_EVALS_DIR}/([^/]+)/[^/]+$`).exec(run);
    return {
      run,
      uri: this.url(run),
      benchmark: benchmarkOf(file),
      model: file.model,
      base_model: file.base_model,
      metrics: file.metrics,
      examples: ('task' in file ? file.metrics.num_samples : file.metrics.num_examples) ?? null,
      checkpoint: scheduled ? scheduled[1] : null,
    };
  }
}
