// `cookbook play <rl config> [key=value …] [--against <model>] [--player N] [--multiline]`: a person
// plays the policy's part in the first env of the config's first batch (reference rl/play_w_env.py).
// The dataset is built as the RL run builds it; side samplers (graders, answerers, opponents) sample
// from the engine. With --against (and always for tic-tac-toe, whose group is one two-player game)
// the group's other envs are played by that model, as text_arena/play.py plays a checkpoint, and the
// game can be played again. Input is read a line at a time, so a pipe works as well as a terminal.
import { parseArgs } from 'node:util';
import type { SamplingSession } from '../backends/types.js';
import { ConfigError } from '../cookbook/config/overrides.js';
import { sequentialSeeds } from '../cookbook/rl/seeds.js';
import type { RLConfig } from '../cookbook/config/rl.js';
import { applyWireFlag, DEFAULT_ENGINE_URL } from './connect.js';

export const PLAY_USAGE = `  play <rl config.json> [k=v …]       play the policy yourself in the config's first env: its observation is shown,
        [--against <model>] [--player N]    your reply (a line; --multiline: until two blank lines) is its action; rewards,
        [--multiline]                       metrics and a summary follow. --against tinker://… or a base model plays the
                                            group's other envs (tic-tac-toe: default the config's model); --player: your seat`;

/** text_arena/play.py's TinkerTokenCompleter for the model player. */
export const AGAINST_MAX_TOKENS = 64;
/** Envs whose group is one shared game: the other seats must be played for the game to go on. */
const SHARED_GAME_ENVS = new Set(['tictactoe']);
/** Seeds of a play session, apart from any training run's positions. */
const PLAY_SEED_MARKER = 2_000_029;
const SIDE_SAMPLERS = 1;

/** The sampling seeds of the model at `seat` in game `game` (0-based), one per move. */
export const againstSeeds = (seed: number, game: number, seat: number): (() => number) => sequentialSeeds(seed, PLAY_SEED_MARKER, game, 0, seat);

export async function playCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      against: { type: 'string' },
      player: { type: 'string', default: '0' },
      multiline: { type: 'boolean', default: false },
      'engine-url': { type: 'string' },
      wire: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(PLAY_USAGE);
    return 0;
  }
  const [configPath, ...overrides] = positionals;
  if (!configPath) throw new ConfigError('play: usage `cookbook play <rl config.json> [key=value …] [--against <tinker://… or base model>] [--player N] [--multiline]`');
  if (!/^\d+$/.test(values.player)) throw new ConfigError(`--player: "${values.player}" is not a seat number (0, 1, …)`);
  const player = Number(values.player);

  const [{ resolveRun }, { buildRLDatasets }] = await Promise.all([import('./train.js'), import('../cookbook/rl/datasets.js')]);
  const cfg = resolveRun('rl', configPath, overrides).config as RLConfig;
  // As `train` checks a run's data: what the config or its data get wrong is the user's to fix (exit 2).
  const built = await buildRLDatasets(cfg.dataset, cfg).catch((err: Error) => {
    throw err instanceof ConfigError ? err : new ConfigError(`dataset: ${err.message}`);
  });
  if (built.train.length === 0) throw new ConfigError('dataset: the RL dataset has no batches');
  const envName = cfg.dataset.kind === 'custom' ? cfg.dataset.name : cfg.dataset.kind;
  const against = values.against ?? (SHARED_GAME_ENVS.has(envName) ? (cfg.load_checkpoint_path ?? cfg.model_name) : undefined);

  const [{ createTinkerBackend }, { apiKeyFor }, play, { samplerRolloutContext, bindRollout }, { tinkerTokenCompleter }, { doSingleRollout }] = await Promise.all([
    import('../backends/tinker-backend.js'),
    import('../backends/api-key.js'),
    import('../cookbook/rl/play.js'),
    import('../cookbook/rl/rollout-context.js'),
    import('../cookbook/rl/completers.js'),
    import('../cookbook/rl/rollouts.js'),
  ]);
  applyWireFlag(values.wire ?? cfg.wire ?? undefined);
  const baseUrl = values['engine-url'] ?? cfg.base_url ?? process.env.TINKER_BASE_URL ?? DEFAULT_ENGINE_URL;
  // The engine is reached only when something samples: a grader, an answerer, the other player.
  let backend: ReturnType<typeof createTinkerBackend> | undefined;
  const sessions = new Map<string, Promise<SamplingSession>>();
  const openSession = (source: { modelPath: string } | { baseModel: string }) => {
    const key = JSON.stringify(source);
    backend ??= createTinkerBackend({ baseUrl, apiKey: apiKeyFor(baseUrl) });
    if (!sessions.has(key)) sessions.set(key, backend.createSamplingSession(source));
    return sessions.get(key)!;
  };
  const sourceOf = (model: string) => (model.startsWith('tinker://') ? { modelPath: model } : { baseModel: model });

  const out = new play.PlayOutput();
  const input = new play.LineInput();
  try {
    for (let game = 0; ; game++) {
      const ctx = samplerRolloutContext({
        openSession,
        policyModel: cfg,
        seeds: (...parts) => sequentialSeeds(cfg.seed, PLAY_SEED_MARKER, game, SIDE_SAMPLERS, ...parts),
      });
      const builder = bindRollout(built.train.getBatch(0)[0], ctx, cfg.rollout_limits, { parseErrors: cfg.parse_errors, hooks: cfg.rollout_hooks });
      const envs = await builder.makeEnvs();
      if (player >= envs.length) throw new ConfigError(`--player: seat ${player} does not exist; the group has ${envs.length} env(s) (seats 0..${envs.length - 1})`);
      const human = play.showingSteps(envs[player], out);
      const policy = play.manualPolicy(built.tokenizer, input, out, { multiline: values.multiline, showObservation: true });
      if (against === undefined) {
        out.line(out.coloured('Starting interactive environment session...', 'cyan', true));
        out.line('Type your actions when prompted. The episode will end when the episode is done.');
        play.printTrajectorySummary(await doSingleRollout(policy, human), out);
        return 0;
      }
      const session = await openSession(sourceOf(against));
      out.line(out.coloured(`\nYou are Player ${player}.`, 'cyan', true));
      if (envName === 'tictactoe') out.line(out.coloured('Type moves like: [4]', 'cyan'));
      out.line(out.coloured(`The other player${envs.length > 2 ? 's' : ''}: ${against}`, 'cyan'));
      out.line(out.coloured('='.repeat(40), 'cyan'));
      const others = envs.flatMap((env, seat) =>
        seat === player ? [] : [doSingleRollout(tinkerTokenCompleter(session, { maxTokens: AGAINST_MAX_TOKENS, seedFor: againstSeeds(cfg.seed, game, seat) }), play.showingMoves(env, built.tokenizer, out, `Player ${seat}`))],
      );
      const [mine] = await Promise.all([doSingleRollout(policy, human), ...others]);
      out.line(out.coloured('\n--- Your Game Summary ---', 'cyan', true));
      play.printTrajectorySummary(mine, out);
      const total = mine.transitions.reduce((a, t) => a + t.reward, 0);
      const result = total > 0 ? out.coloured('WIN', 'green') : total < 0 ? out.coloured('LOSS', 'red') : out.coloured('DRAW', 'yellow');
      out.line(`Result: ${result} (reward=${total.toFixed(1)})`);
      out.write(out.coloured('\nPlay again? [y/n]: ', 'cyan'));
      const again = await input.next();
      if (again !== null && input.echo) out.line(again);
      if (again === null) out.line();
      if (again?.trim().toLowerCase() !== 'y') return 0;
    }
  } catch (err) {
    if (err instanceof play.InputEndedError) {
      out.line();
      console.error(`play: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    input.close();
    await backend?.close();
  }
}
