// `cookbook play` in a real terminal: tmux runs it on a pseudo-terminal in a detached session, keys
// are typed into it, and the screen is read back (`capture-pane`). The terminal's own line
// discipline echoes what is typed; colours appear because stdout is a TTY. Skipped, saying so, where
// tmux is not installed.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { guessNumberSplit } from '../../src/cookbook/rl/envs/guess-number.js';
import { cookbookBin } from '../support/cli.js';

const REPO = join(import.meta.dirname, '..', '..');
const GOLD = guessNumberSplit(0.99).train[0];
const noTmux = spawnSync('tmux', ['-V']).error ? 'tmux is not installed (apt-get install -y tmux)' : null;
// A server of this file's own, so no user's tmux sessions are touched.
const SOCKET = `h55play-${process.pid}`;
const SESSION = 'play';

const tmux = (...args: string[]) => {
  const r = spawnSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};
/** The pane's whole history; with escapes: its colours as escape sequences. */
const screen = (escapes = false) => tmux('capture-pane', '-p', '-J', '-S', '-', ...(escapes ? ['-e'] : []), '-t', SESSION);

/** Polls the screen until `pattern` shows (the program's output is the event waited for). */
async function until(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  for (const deadline = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 100))) {
    const s = screen();
    if (pattern.test(s)) return s;
    if (Date.now() > deadline) throw new Error(`the screen never showed ${pattern}:\n${s}`);
  }
}

afterAll(() => {
  if (noTmux) return;
  spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
  // kill-server leaves the socket file behind.
  rmSync(join(process.env.TMUX_TMPDIR ?? '/tmp', `tmux-${process.getuid?.() ?? 0}`, SOCKET), { force: true });
});

describe.skipIf(noTmux)(`cookbook play in a terminal (tmux)${noTmux ? ` — skipped: ${noTmux}` : ''}`, { timeout: 120_000 }, () => {
  it('shows the observation, reads typed replies, shows each reward and the summary; exits 0', async () => {
    tmux('-f', '/dev/null', 'new-session', '-d', '-s', SESSION, '-x', '200', '-y', '50', '-c', REPO, `${process.execPath} ${cookbookBin} play configs/rl_guess_number.json; echo "play exited $?"; read`);
    tmux('set-option', '-t', SESSION, 'history-limit', '5000');
    await until(/Your action: $/m);
    expect(screen()).toContain('Your job is to guess a integer between 0 and 1024.');
    tmux('send-keys', '-t', SESSION, '-l', 'Guess: 0');
    tmux('send-keys', '-t', SESSION, 'Enter');
    await until(/Reward: 0\.0\n\s*guess: Guess: 0\n\s*feedback: Too low/);
    tmux('send-keys', '-t', SESSION, '-l', `Guess: ${GOLD}`);
    tmux('send-keys', '-t', SESSION, 'Enter');
    const end = await until(/play exited \d+/);
    expect(end).toContain('play exited 0');
    // The typed line shows once: echoed by the terminal, not again by the program.
    expect(end).toContain(`Your action: Guess: ${GOLD}\nReward: 1.0 (episode done)`);
    expect(end.match(/^Your action: Guess: 0$/gm)?.length).toBe(1);
    expect(end).not.toMatch(/^Guess: 0$/m);
    expect(end).toContain('=== Game Summary ===\nTotal steps: 2\nTotal reward: 1.0\n\nReward per step:\n  Step 1: reward = 1.0\n===================');
    // termcolor's colours on a terminal: the step header green, the prompt yellow.
    const coloured = screen(true);
    expect(coloured).toContain('\x1b[32m--- Step 0 ---');
    expect(coloured).toContain('\x1b[33mYour action: ');
  });
});
