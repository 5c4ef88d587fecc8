// Two-player tic-tac-toe (reference recipes/multiplayer_rl/text_arena, game TicTacToe-v0), played
// in self-play: the two envs of a group are the two players of one shared game, both sampled from
// the policy, taking turns through a coordinator. The test set plays a fixed opponent (the policy's
// base weights, a uniformly random legal mover or the optimal minimax player). Moves are "[n]" for cell n; a move that is not a
// legal "[n]" ends the game with −2 for its player; a win is +1 and a loss −1.
import { z } from 'zod';
import { ConfigurationError } from '../../errors.js';
import { modelInputFromInts } from '../../model-input.js';
import { getTextContent } from '../../renderers/content.js';
import type { Renderer } from '../../renderers/types.js';
import type { MessageCompleter } from '../completers.js';
import type { ContextualEnvGroupBuilder, RolloutContext } from '../rollout-context.js';
import { BaseEnvGroupBuilder, type Action, type Env, type EnvGroupBuilder, type InitialObservation, type RLDataset, type StepResult } from '../types.js';
import { parseEnvArgs } from './args.js';

export const TICTACTOE_STOP = [']\n'];
export const ILLEGAL_MOVE_REWARD = -2.0;
const SYMBOLS = ['O', 'X'] as const;
const LINES = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]];

export type Cell = 'O' | 'X' | null;

export function winner(board: readonly Cell[]): 'O' | 'X' | null {
  for (const [a, b, c] of LINES) if (board[a] && board[a] === board[b] && board[a] === board[c]) return board[a];
  return null;
}

/** The first "[n]" in a reply, as TextArena reads a move; null when there is none. */
export function parseMove(reply: string): number | null {
  const m = /\[(\d+)\]/.exec(reply);
  return m ? Number(m[1]) : null;
}

export function renderBoard(board: readonly Cell[]): string {
  const row = (r: number) => [0, 1, 2].map((c) => ` ${board[3 * r + c] ?? String(3 * r + c)} `).join('|');
  return [row(0), '---+---+---', row(1), '---+---+---', row(2)].join('\n');
}

/** One game shared by two players; moves strictly alternate, player 0 ('O') first. */
export class TicTacToeGame {
  readonly board: Cell[] = Array(9).fill(null);
  current = 0;
  illegalPlayer: number | null = null;
  private waiters: Array<() => void> = [];

  /** A player whose rollout failed: the game ends, and nobody waits for that player's move. */
  abandonedBy: number | null = null;

  get done(): boolean {
    return this.abandonedBy !== null || this.illegalPlayer !== null || winner(this.board) !== null || this.board.every((c) => c !== null);
  }

  legalMoves(): number[] {
    return this.board.flatMap((c, i) => (c === null ? [i] : []));
  }

  /** +1 win, −1 loss, 0 draw or unfinished; −2 for an illegal move (the other player gets 0). */
  reward(player: number): number {
    if (this.illegalPlayer !== null) return this.illegalPlayer === player ? ILLEGAL_MOVE_REWARD : 0.0;
    const w = winner(this.board);
    if (w === null) return 0.0;
    return w === SYMBOLS[player] ? 1.0 : -1.0;
  }

  observation(player: number): string {
    return [
      `[GAME] You are Player ${player} in Tic Tac Toe, and you will be '${SYMBOLS[player]}'.`,
      'Your goal is to get three of your marks in a row, column or diagonal. On your turn, answer with the cell you mark in the format [n].',
      'Current Board:',
      renderBoard(this.board),
      `Available Moves: ${this.legalMoves().map((m) => `'[${m}]'`).join(', ')}`,
    ].join('\n');
  }

  abandon(player: number): void {
    this.abandonedBy ??= player;
    this.wake();
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const resolve of waiting) resolve();
  }

  move(player: number, reply: string): void {
    if (this.done) return;
    if (player !== this.current) throw new Error(`Not player ${player}'s turn (current: ${this.current})`);
    const cell = parseMove(reply);
    if (cell === null || cell > 8 || this.board[cell] !== null) this.illegalPlayer = player;
    else {
      this.board[cell] = SYMBOLS[player];
      this.current = 1 - player;
    }
    this.wake();
  }

  /** Resolves once it is `player`'s turn or the game is over. */
  async waitForTurn(player: number): Promise<void> {
    while (!this.done && this.current !== player) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
}

export class TicTacToeEnv implements Env {
  constructor(
    readonly player: number,
    readonly game: TicTacToeGame,
    readonly renderer: Renderer,
    /** Null in self-play: the other player is another env of the group. */
    readonly opponent: MessageCompleter | null,
  ) {}

  abandon(): void {
    this.game.abandon(this.player);
  }

  private async waitForTurn(): Promise<void> {
    if (this.game.done) return;
    if (this.opponent === null) return this.game.waitForTurn(this.player);
    const reply = await this.opponent([{ role: 'user', content: this.game.observation(1 - this.player) }]);
    this.game.move(1 - this.player, getTextContent(reply));
  }

  private observation() {
    return this.renderer.buildGenerationPrompt([{ role: 'user', content: this.game.observation(this.player) }]);
  }

  async initialObservation(): Promise<InitialObservation> {
    if (this.player !== 0) await this.waitForTurn();
    return { ob: this.observation(), stopCondition: TICTACTOE_STOP };
  }

  async step(action: Action): Promise<StepResult> {
    if (this.game.done) return { reward: 0.0, episodeDone: true, nextObservation: modelInputFromInts([]), nextStopCondition: TICTACTOE_STOP, metrics: {} };
    const reply = getTextContent(this.renderer.parseResponse(action).message);
    this.game.move(this.player, reply);
    // Wait here rather than before the move, so the result says whether this player moves again.
    await this.waitForTurn();
    const done = this.game.done;
    const reward = this.game.reward(this.player);
    return {
      reward,
      episodeDone: done,
      nextObservation: this.observation(),
      nextStopCondition: TICTACTOE_STOP,
      metrics: done ? { win: reward === 1 ? 1 : 0, draw: reward === 0 && this.game.illegalPlayer === null ? 1 : 0, illegal_move: this.game.illegalPlayer === this.player ? 1 : 0 } : {},
      logs: { move: reply, board: renderBoard(this.game.board) },
    };
  }
}

export const OPPONENT_TYPES = ['base_model', 'random', 'optimal'] as const;
export type OpponentType = (typeof OPPONENT_TYPES)[number];

/** The side-sampler role of the random opponent: its seeds are apart from the base model's (role 0). */
export const RANDOM_OPPONENT_ROLE = 1;

/** Perfect play by minimax (the reference's OptimalOpponent); ties go to the lowest cell. */
export function optimalMove(board: readonly Cell[], me: 'O' | 'X'): number {
  const opp = me === 'O' ? 'X' : 'O';
  const score = (b: Cell[], turn: 'O' | 'X'): number => {
    const w = winner(b);
    if (w) return w === me ? 1 : -1;
    if (b.every((c) => c !== null)) return 0;
    const scores = b.flatMap((c, i) => (c === null ? [i] : [])).map((i) => {
      b[i] = turn;
      const s = score(b, turn === 'O' ? 'X' : 'O');
      b[i] = null;
      return s;
    });
    return turn === me ? Math.max(...scores) : Math.min(...scores);
  };
  const b = [...board];
  let best = -2;
  let bestPos = -1;
  for (let i = 0; i < 9; i++) {
    if (b[i] !== null) continue;
    b[i] = me;
    const s = score(b, opp);
    b[i] = null;
    if (s > best) [best, bestPos] = [s, i];
  }
  return bestPos;
}

/** The optimal opponent as a completer: it reads its symbol and the board from the game itself. */
function optimalOpponent(game: TicTacToeGame, player: number): MessageCompleter {
  return async () => ({ role: 'assistant', content: `[${optimalMove(game.board, SYMBOLS[1 - player])}]` });
}

/**
 * A uniformly random legal move (the reference's RandomOpponent), drawn from the rollout's seeds, one
 * per move, so a recomputed episode makes the same moves.
 */
export function randomOpponent(game: TicTacToeGame, seedFor: () => number): MessageCompleter {
  return async () => {
    const moves = game.legalMoves();
    const seed = seedFor();
    return { role: 'assistant', content: moves.length ? `[${moves[seed % moves.length]}]` : '[0]' };
  };
}

export class TicTacToeEnvGroupBuilder extends BaseEnvGroupBuilder implements ContextualEnvGroupBuilder {
  private made = 0;
  constructor(
    readonly renderer: Renderer,
    readonly selfPlay: boolean,
    readonly opponentType: OpponentType,
    readonly opponentMaxTokens: number,
    private readonly ctx: RolloutContext | null = null,
  ) {
    super();
  }

  withContext(ctx: RolloutContext): EnvGroupBuilder {
    return new TicTacToeEnvGroupBuilder(this.renderer, this.selfPlay, this.opponentType, this.opponentMaxTokens, ctx);
  }

  async makeEnvs(): Promise<Env[]> {
    // A retried slot would get a fresh game whose other player never moves: refuse it plainly.
    if (this.made++ > 0) throw new ConfigurationError('tictactoe: a self-play game cannot retry one player alone; use rollout_error_tolerance=false');
    if (this.selfPlay) {
      const game = new TicTacToeGame();
      return [0, 1].map((p) => new TicTacToeEnv(p, game, this.renderer, null));
    }
    return [0, 1].map((p) => {
      const game = new TicTacToeGame();
      return new TicTacToeEnv(p, game, this.renderer, this.opponentFor(game, p));
    });
  }

  private opponentFor(game: TicTacToeGame, player: number): MessageCompleter {
    if (this.opponentType === 'optimal') return optimalOpponent(game, player);
    if (!this.ctx) throw new ConfigurationError(`tictactoe: the ${this.opponentType} opponent needs a rollout context (the rollout activity binds one)`);
    if (this.opponentType === 'random') return randomOpponent(game, this.ctx.seeds(player, RANDOM_OPPONENT_ROLE));
    return this.ctx.messageCompleter({ model: null, maxTokens: this.opponentMaxTokens, stopCondition: TICTACTOE_STOP }, player, 0);
  }
}

export class TicTacToeDataset implements RLDataset {
  constructor(
    readonly batchSize: number,
    readonly numDatapoints: number,
    readonly makeBuilder: () => EnvGroupBuilder,
  ) {}
  get length(): number {
    return Math.floor(this.numDatapoints / this.batchSize);
  }
  /** batch_size players per batch: batch_size / 2 games, none past num_datapoints. */
  getBatch(index: number): EnvGroupBuilder[] {
    return Array.from({ length: Math.floor(this.batchSize / 2) }, (_, i) => i).filter((i) => index * this.batchSize + 2 * i < this.numDatapoints).map(() => this.makeBuilder());
  }
}

export const TicTacToeArgsSchema = z.strictObject({
  batch_size: z.int().positive(),
  num_train_datapoints: z.int().positive(),
  num_test_datapoints: z.int().positive(),
  test_opponent: z.enum(OPPONENT_TYPES).default('base_model'),
  opponent_max_tokens: z.int().positive().default(16),
});

export function buildTicTacToeDatasets(args: Record<string, unknown>, renderer: Renderer): { train: RLDataset; test: RLDataset } {
  const a = parseEnvArgs(TicTacToeArgsSchema, args, 'tictactoe');
  for (const key of ['num_train_datapoints', 'num_test_datapoints'] as const) {
    if (a[key] % 2 !== 0) throw new ConfigurationError(`dataset.args.${key}: must be divisible by the 2 players, got ${a[key]}`);
  }
  if (a.batch_size % 2 !== 0) throw new ConfigurationError(`dataset.args.batch_size: one game takes 2 players, so it must be even, got ${a.batch_size}`);
  return {
    train: new TicTacToeDataset(a.batch_size, a.num_train_datapoints, () => new TicTacToeEnvGroupBuilder(renderer, true, a.test_opponent, a.opponent_max_tokens)),
    test: new TicTacToeDataset(a.num_test_datapoints, a.num_test_datapoints, () => new TicTacToeEnvGroupBuilder(renderer, false, a.test_opponent, a.opponent_max_tokens)),
  };
}
