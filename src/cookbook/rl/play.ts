// Playing an environment by hand (reference rl/play_w_env.py): a person is the policy. Each turn the
// observation is decoded and shown, a reply is read from the input one line at a time (or, in
// multi-line mode, until two blank lines), and encoded as the policy's action the way the
// reference's ManualPolicy does — the tokenizer's encoding without special tokens, stop reason
// "stop", no logprobs. Lines, not raw keys: a terminal's own line editing works, and so does a pipe.
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { modelInputToInts } from '../model-input.js';
import { pyFloatRepr } from '../pyjson.js';
import type { Tokenizer } from '../tokenizer.js';
import type { TokenCompleter } from './completers.js';
import type { Env, StepResult, Trajectory } from './types.js';

/** The input ended before the episode did. */
export class InputEndedError extends Error {}

type Colour = 'green' | 'blue' | 'yellow' | 'cyan' | 'red' | 'magenta';
const CODES: Record<Colour, number> = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36 };

/** Where the session writes: termcolor's colours only on a terminal (and not under NO_COLOR). */
export class PlayOutput {
  readonly colours: boolean;
  constructor(
    readonly out: Writable & { isTTY?: boolean } = process.stdout,
    colours?: boolean,
  ) {
    this.colours = colours ?? (Boolean(out.isTTY) && !process.env.NO_COLOR);
  }
  coloured(text: string, colour: Colour, bold = false): string {
    if (!this.colours) return text;
    return `${bold ? '\x1b[1m' : ''}\x1b[${CODES[colour]}m${text}\x1b[0m`;
  }
  line(text = ''): void {
    this.out.write(`${text}\n`);
  }
  write(text: string): void {
    this.out.write(text);
  }
}

/** Lines of the input, one per call; null once it has ended. */
export class LineInput {
  private readonly rl: Interface;
  private readonly lines: AsyncIterator<string>;
  /** Echo each line read: a pipe's lines would otherwise be missing from the transcript. */
  readonly echo: boolean;

  constructor(input: Readable & { isTTY?: boolean } = process.stdin, echo?: boolean) {
    this.rl = createInterface({ input, terminal: false, crlfDelay: Infinity });
    this.lines = this.rl[Symbol.asyncIterator]();
    this.echo = echo ?? !input.isTTY;
  }

  async next(): Promise<string | null> {
    const r = await this.lines.next();
    return r.done ? null : r.value;
  }

  close(): void {
    this.rl.close();
  }
}

/** `input(prompt)`; multi-line: lines until two blank ones in a row, the first of them dropped. */
export async function readReply(input: LineInput, out: PlayOutput, prompt: string, multiline: boolean): Promise<string> {
  const need = async (): Promise<string> => {
    const line = await input.next();
    if (line === null) throw new InputEndedError('the input ended before the episode did');
    if (input.echo) out.line(line);
    return line;
  };
  if (!multiline) {
    out.write(prompt);
    return need();
  }
  out.line(`${prompt} (enter two blank lines when done)`);
  const lines: string[] = [];
  let prev: string | null = null;
  for (;;) {
    const line = await need();
    if (line === '' && prev === '') {
      if (lines.length && lines[lines.length - 1] === '') lines.pop();
      return lines.join('\n');
    }
    lines.push(line);
    prev = line;
  }
}

export interface ManualPolicyOptions {
  multiline?: boolean;
  showObservation?: boolean;
}

/** The reference's ManualPolicy: the person's reply as the action tokens. */
export function manualPolicy(tokenizer: Tokenizer, input: LineInput, out: PlayOutput, opts: ManualPolicyOptions = {}): TokenCompleter {
  const multiline = opts.multiline ?? true;
  let stepCount = 0;
  return async (ob) => {
    if (opts.showObservation ?? true) {
      out.line(out.coloured(`\n--- Step ${stepCount} ---`, 'green'));
      out.line(out.coloured('Observation:', 'blue'));
      out.line(tokenizer.decode(modelInputToInts(ob)));
      out.line(out.coloured('-'.repeat(60), 'green'));
    }
    const reply = await readReply(input, out, out.coloured(multiline ? 'Your action:' : 'Your action: ', 'yellow'), multiline);
    stepCount++;
    return { tokens: tokenizer.encode(reply, { addSpecialTokens: false }), maybeLogprobs: null, stopReason: 'stop' };
  };
}

/** Python's repr of a float reward (1.0, -0.1, inf). */
export function pyRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  return pyFloatRepr(x);
}

const shown = (v: string | number, max = 400) => {
  const s = String(v);
  return s.length > max ? `${s.slice(0, max)}… (${s.length} characters)` : s;
};

/** What each step gave the player: its reward, metrics and logs, as they arrive. Everything else is the env's own. */
export function showingSteps(env: Env, out: PlayOutput): Env {
  const step = async (...args: Parameters<Env['step']>): Promise<StepResult> => {
    const r = await env.step(...args);
    out.line(out.coloured(`Reward: ${pyRepr(r.reward)}${r.episodeDone ? ' (episode done)' : ''}`, 'magenta'));
    const metrics = Object.entries(r.metrics ?? {});
    if (metrics.length) out.line(`Metrics: ${metrics.map(([k, v]) => `${k}=${pyRepr(v)}`).join(', ')}`);
    for (const [k, v] of Object.entries(r.logs ?? {})) out.line(`  ${k}: ${shown(v).replace(/\n/g, '\n    ')}`);
    return r;
  };
  return new Proxy(env, {
    get(target, prop) {
      if (prop === 'step') return step;
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' && prop !== 'constructor' ? v.bind(target) : v;
    },
    set: (target, prop, value) => Reflect.set(target, prop, value, target),
  });
}

/** Another seat's env, showing what its player did each turn. */
export function showingMoves(env: Env, tokenizer: Tokenizer, out: PlayOutput, who: string): Env {
  return new Proxy(env, {
    get(target, prop) {
      if (prop === 'step') {
        return (action: number[], opts?: Parameters<Env['step']>[1]) => {
          out.line(out.coloured(`${who} played: ${shown(JSON.stringify(tokenizer.decode(action).trim()), 200)}`, 'cyan'));
          return target.step(action, opts);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' && prop !== 'constructor' ? v.bind(target) : v;
    },
    set: (target, prop, value) => Reflect.set(target, prop, value, target),
  });
}

/** print_trajectory_summary: steps, total reward, the non-zero rewards by step. */
export function printTrajectorySummary(trajectory: Trajectory, out: PlayOutput): void {
  out.line(out.coloured('\n=== Game Summary ===', 'cyan', true));
  const rewards = trajectory.transitions.map((t) => t.reward);
  out.line(`Total steps: ${rewards.length}`);
  // Python's sum() of no floats is the int 0.
  out.line(`Total reward: ${rewards.length ? pyRepr(rewards.reduce((a, b) => a + b, 0)) : '0'}`);
  if (rewards.length) {
    out.line('\nReward per step:');
    rewards.forEach((r, i) => {
      if (r !== 0) out.line(`  Step ${i}: reward = ${pyRepr(r)}`);
    });
  }
  out.line(out.coloured('===================', 'cyan', true));
}
