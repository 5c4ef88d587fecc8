// `cookbook play` (reference rl/play_w_env.py and text_arena/play.py) as a person runs it without a
// terminal: the CLI in its own process, replies piped on stdin. Guess-the-number is deterministic
// (its first training number is known), so the transcript, the rewards, the summary and the exit
// status are checked exactly; tic-tac-toe is played against a tinker:// checkpoint on the real engine,
// whose moves are the engine's own samples for the same prompt and seed.
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTinkerBackend } from '../../src/backends/tinker-backend.js';
import { againstSeeds, AGAINST_MAX_TOKENS } from '../../src/cli/play.js';
import { rendererForModel } from '../../src/cookbook/renderers/for-model.js';
import { guessNumberSplit, GUESS_NUMBER_SYSTEM_PROMPT } from '../../src/cookbook/rl/envs/guess-number.js';
import { TICTACTOE_STOP, TicTacToeGame } from '../../src/cookbook/rl/envs/tictactoe.js';
import { LineInput, manualPolicy, PlayOutput, readReply } from '../../src/cookbook/rl/play.js';
import { cookbookBin } from '../support/cli.js';
import { serveBackend } from '../support/serve.js';

const REPO = join(import.meta.dirname, '..', '..');
const GOLD = guessNumberSplit(0.99).train[0]; // configs/rl_guess_number.json's first env
const ESC = '\x1b';

function play(args: string[], input: string, env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [cookbookBin, 'play', ...args], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TINKER_API_KEY: 'tml-test', ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, out, err })));
}

describe('cookbook play, piped', { timeout: 120_000 }, () => {
  it('guess the number: each observation, the replies, rewards as they come, the reference’s summary; exit 0', async () => {
    const r = await play(['configs/rl_guess_number.json'], `Guess: 0\nhello\nGuess: ${GOLD}\n`);
    expect(r.code, r.err).toBe(0);
    expect(r.out).not.toContain(ESC); // no colours without a terminal
    expect(r.out.startsWith('Starting interactive environment session...\nType your actions when prompted. The episode will end when the episode is done.\n')).toBe(true);
    expect(r.out.match(/^--- Step \d ---$/gm)).toEqual(['--- Step 0 ---', '--- Step 1 ---', '--- Step 2 ---']);
    expect(r.out).toContain(`Observation:\n<|im_start|>system\n${GUESS_NUMBER_SYSTEM_PROMPT}<|im_end|>\n<|im_start|>assistant\n\n${'-'.repeat(60)}\nYour action: Guess: 0\nReward: 0.0\n`);
    // The second observation holds the first turn as the env recorded it.
    expect(r.out).toContain('<|im_start|>player\nGuess: 0<|im_end|>\n<|im_start|>user\nToo low<|im_end|>\n<|im_start|>assistant\n');
    expect(r.out).toContain('Your action: hello\nReward: -1.0\n  guess: hello\n  feedback: Failed to parse.');
    expect(r.out).toContain(`Your action: Guess: ${GOLD}\nReward: 1.0 (episode done)\n  guess: Guess: ${GOLD}\n  feedback: Correct\n  target: ${GOLD}\n`);
    expect(r.out.endsWith('\n=== Game Summary ===\nTotal steps: 3\nTotal reward: 0.0\n\nReward per step:\n  Step 1: reward = -1.0\n  Step 2: reward = 1.0\n===================\n')).toBe(true);
  });

  it('--multiline: a reply runs until two blank lines; input that ends mid-episode exits 1 saying so', async () => {
    const r = await play(['configs/rl_guess_number.json', '--multiline'], `Guess: 1023\nthinking aloud\n\n\n`);
    expect(r.code).toBe(1);
    expect(r.out).toContain('Your action: (enter two blank lines when done)\nGuess: 1023\nthinking aloud\n\n\nReward: 0.0\n  guess: Guess: 1023\n    thinking aloud\n  feedback: Too high\n');
    expect(r.out).toContain('<|im_start|>player\nGuess: 1023\nthinking aloud<|im_end|>\n<|im_start|>user\nToo high<|im_end|>');
    expect(r.err).toContain('play: the input ended before the episode did');
  });

  it('overrides apply as in train: a bad value, like a seat the group lacks, is refused with exit 2', async () => {
    const [bad, seat] = await Promise.all([play(['configs/rl_guess_number.json', 'dataset.args.max_turns=0'], ''), play(['configs/rl_guess_number.json', '--player', '7'], '')]);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/dataset\.args\.max_turns/);
    expect(seat.code).toBe(2);
    expect(seat.err).toContain('--player: seat 7 does not exist; the group has 4 env(s)');
  });

  it('ManualPolicy: the reply encoded without special tokens, stop reason "stop", no logprobs', async () => {
    const { renderer, tokenizer } = await rendererForModel('tiny-qwen3');
    const sink: string[] = [];
    const out = new PlayOutput({ write: (s: string) => sink.push(s) } as never, false);
    const reply = 'Guess: 12 <|im_end|> ünïcode';
    const policy = manualPolicy(tokenizer, new LineInput(Readable.from([`${reply}\n`]), false), out, { multiline: false });
    const ac = await policy(renderer.buildGenerationPrompt([{ role: 'user', content: 'hi' }]), renderer.getStopSequences());
    expect(ac).toEqual({ tokens: tokenizer.encode(reply, { addSpecialTokens: false }), maybeLogprobs: null, stopReason: 'stop' });
    expect(sink.join('')).toContain('Observation:\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
    // Multi-line: the blank line that starts the pair of blank lines is dropped, inner ones kept.
    expect(await readReply(new LineInput(Readable.from(['a\n', '\n', 'b\n', '\n', '\n']), false), out, 'p', true)).toBe('a\n\nb');
  });
});

describe('cookbook play tic-tac-toe against a checkpoint on the engine', { timeout: 180_000 }, () => {
  let backend: Awaited<ReturnType<typeof serveBackend>>;
  let checkpoint: string;
  beforeAll(async () => {
    backend = await serveBackend();
    const tinker = createTinkerBackend({ baseUrl: backend.engineUrl, apiKey: 'tml-test', env: {} });
    try {
      const session = await tinker.createTrainingSession({ baseModel: 'tiny-qwen3', lora: { rank: 4, seed: 11 } });
      checkpoint = (await (await session.saveWeightsForSampler('play-opponent', { seqId: 1 })).result()).path;
    } finally {
      await tinker.close();
    }
  });
  afterAll(async () => {
    await backend?.stop();
  });

  it('the person is Player 0; the checkpoint answers with its own sample for the seeded prompt; the game ends with a result line', async () => {
    const r = await play(['configs/rl_tictactoe.json', '--against', checkpoint, '--engine-url', backend.engineUrl], '[4]\n[0]\n[8]\n[2]\n[6]\nn\n');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`You are Player 0.\nType moves like: [4]\nThe other player: ${checkpoint}\n`);
    // The engine's sample from the checkpoint for Player 1's first observation, at the session's first seed.
    const game = new TicTacToeGame();
    game.move(0, '[4]');
    const { renderer, tokenizer } = await rendererForModel('tiny-qwen3');
    const tinker = createTinkerBackend({ baseUrl: backend.engineUrl, apiKey: 'tml-test', env: {} });
    let firstReply: string;
    try {
      const sampler = await tinker.createSamplingSession({ modelPath: checkpoint });
      const prompt = renderer.buildGenerationPrompt([{ role: 'user', content: game.observation(1) }]);
      const res = await sampler.sample(prompt, 1, { stop: TICTACTOE_STOP, max_tokens: AGAINST_MAX_TOKENS, temperature: 1, seed: againstSeeds(0, 0, 1)() });
      firstReply = tokenizer.decode(res.sequences[0].tokens).trim();
    } finally {
      await tinker.close();
    }
    const shownReply = JSON.stringify(firstReply);
    expect(r.out).toContain(`Your action: [4]\nPlayer 1 played: ${shownReply.length > 200 ? `${shownReply.slice(0, 200)}… (${shownReply.length} characters)` : shownReply}\n`);
    expect(r.out).toMatch(/\n--- Your Game Summary ---\n\n=== Game Summary ===\nTotal steps: \d\nTotal reward: -?\d\.\d\n/);
    expect(r.out).toMatch(/\nResult: (WIN|LOSS|DRAW) \(reward=-?\d\.\d\)\n\nPlay again\? \[y\/n\]: /);
  });
});
