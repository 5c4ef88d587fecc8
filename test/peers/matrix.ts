// The compatibility matrix (#58, docs/tinker-compat.md "Other Tinker-compatible servers"): the
// project's workflows on a Tinker-compatible server other than its own engine, as a user runs them:
// the small test configs with model_name and base_url pointed at the peer, a worker whose backend
// key is the peer's, then `cookbook chat` and `cookbook serve` on the trained sampler checkpoint.
// Each peer's file says which of these its server supports.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRun, type ResolvedRun } from '../../src/cli/train.js';
import { createCookbookWorker } from '../../src/workers/worker.js';
import type { RunResult } from '../../src/workflows/shared/training-run.js';
import { cookbookBin } from '../support/cli.js';
import { startPeer, type PeerName, type PeerServer } from '../support/peer-servers.js';
import { metricsOf } from '../support/runs.js';
import { startTestStack, testRun, type TestStack } from '../support/stack.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures');
/** A run that has not ended by then is stuck (a server that fails every retry of a request). */
const RUN_DEADLINE_MS = 12 * 60_000;

export interface PeerSupport {
  /** RL's sampling: the server samples from the model being trained. */
  rl: boolean;
  /** DPO: forward (reference logprobs) and forward_backward with a custom loss. */
  dpo: boolean;
  /** `cookbook chat` / `serve` on the run's sampler checkpoint. */
  chat: boolean;
}

export function peerMatrix(name: PeerName, supports: PeerSupport): void {
  describe(`${name} (Tinker-compatible peer server)`, { timeout: RUN_DEADLINE_MS + 120_000 }, () => {
    let stack: TestStack;
    let peer: PeerServer;
    let sl: { result: RunResult; logPath: string } | undefined;

    beforeAll(async () => {
      [stack, peer] = await Promise.all([startTestStack(), startPeer(name)]);
    }, 1_800_000);
    afterAll(async () => {
      await peer?.stop();
      await stack?.stop();
    });

    /** A test config on the peer: its model, its URL, Qwen3's renderer (the model is a local directory, not a name the renderer table knows). */
    const peerRun = (config: string, kind: string): ResolvedRun =>
      testRun(stack, join(fixtures, config), [`model_name=${peer.model}`, `base_url=${peer.baseUrl}`, 'renderer_name=qwen3'], kind);

    const runOnPeer = async (run: ResolvedRun): Promise<RunResult> => {
      const w = await createCookbookWorker({ temporalAddress: stack.temporalAddress, tinkerBaseUrl: peer.baseUrl, taskQueue: stack.taskQueue, tinkerApiKey: peer.apiKey });
      try {
        return await w.worker.runUntil(async () => {
          const handle = await startRun(stack.client, run, stack.taskQueue);
          let timer: NodeJS.Timeout | undefined;
          const stuck = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`${run.kind} on ${name} did not end in ${RUN_DEADLINE_MS / 60_000} min; its server's log: ${peer.logFile}\n${tail(peer.logFile)}`)), RUN_DEADLINE_MS);
          });
          try {
            return (await Promise.race([handle.result(), stuck])) as RunResult;
          } catch (err) {
            await handle.terminate('matrix test: run failed or stuck').catch(() => undefined);
            throw err;
          } finally {
            clearTimeout(timer);
          }
        });
      } finally {
        await w.close();
      }
    };

    it('SL (sl_small) completes: every step has a finite NLL, a final sampler checkpoint', async () => {
      const run = peerRun('sl_small.json', 'sl');
      const result = await runOnPeer(run);
      expect(result.status).toBe('completed');
      const rows = metricsOf(run.run.logPath);
      expect(rows.length).toBe(result.steps);
      expect(rows.map((r) => Number.isFinite(r.train_mean_nll))).toEqual(rows.map(() => true));
      expect(result.finalCheckpoint?.samplerPath).toMatch(/^tinker:\/\//);
      sl = { result, logPath: run.run.logPath };
    });

    it.runIf(supports.chat)('cookbook chat and serve answer from the SL run\'s sampler checkpoint', async () => {
      const samplerPath = sl?.result.finalCheckpoint?.samplerPath;
      expect(samplerPath, 'the SL test above left a sampler checkpoint').toBeTruthy();
      const env = { TINKER_BASE_URL: peer.baseUrl, TINKER_API_KEY: peer.apiKey };
      // --run: the run that saved the checkpoint, for a server whose weights_info refuses its own paths (SkyRL-tx).
      const run = ['--run', sl!.logPath];
      const chat = await cookbookWithInput(['chat', samplerPath!, ...run, '--renderer', 'qwen3', '--max-tokens', '6', '--seed', '1'], 'Hello there\n', env);
      expect(chat.code, `cookbook chat failed:\n${chat.err}`).toBe(0);

      const serve = await startServeOn(samplerPath!, run, env);
      try {
        const res = await fetch(`${serve.url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: samplerPath, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 6, seed: 1 }),
        });
        const body = await res.text();
        expect(res.status, body).toBe(200);
        const parsed = JSON.parse(body) as { choices: Array<{ message: { role: string }; finish_reason: string }>; usage: { completion_tokens: number } };
        expect(parsed.choices[0].message.role).toBe('assistant');
        expect(parsed.usage.completion_tokens).toBeGreaterThan(0);
      } finally {
        serve.child.kill('SIGTERM');
      }
    });

    it.runIf(supports.rl)('RL (rl_small) completes, every step on all its sampled episodes', async () => {
      const run = peerRun('rl_small.json', 'rl');
      const result = await runOnPeer(run);
      expect(result.status).toBe('completed');
      const all = metricsOf(run.run.logPath);
      // One row per step, then the closing row of token totals.
      expect(all.map((r) => r.step)).toEqual([...Array(result.steps + 1).keys()]);
      expect(all.slice(0, -1).map((r) => r['env/all/total_episodes'])).toEqual(all.slice(0, -1).map(() => 12)); // 3 groups × 4 samples
    });

    it.runIf(supports.dpo)('DPO (dpo_small) completes: every step has a finite DPO loss', async () => {
      const run = peerRun('dpo_small.json', 'dpo');
      const result = await runOnPeer(run);
      expect(result.status).toBe('completed');
      const rows = metricsOf(run.run.logPath);
      expect(rows.length).toBe(result.steps);
      expect(rows.map((r) => Number.isFinite(r.dpo_loss))).toEqual(rows.map(() => true));
    });

  });
}

function tail(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function cookbookWithInput(args: string[], input: string, env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [cookbookBin, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  child.stdin.end(input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, out, err })));
}

function startServeOn(path: string, extra: string[], env: Record<string, string>): Promise<{ child: ReturnType<typeof spawn>; url: string }> {
  const child = spawn(process.execPath, [cookbookBin, 'serve', path, ...extra, '--renderer', 'qwen3', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /OpenAI base URL (\S+)/.exec(out);
      if (m) resolve({ child, url: m[1] });
    });
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => reject(new Error(`cookbook serve exited (${code}) before serving:\n${out}\n${err}`)));
  });
}
