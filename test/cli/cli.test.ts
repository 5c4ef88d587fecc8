// The `cookbook` CLI end to end, as a user runs it (no TTY), against the real stack.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUSY_QUERY_TIMEOUT_MS, QUERY_TIMEOUT_MS } from '../../src/cli/liveness.js';
import { humanCount } from '../../src/cli/models.js';
import { runStatus, SET_ANSWER_TIMEOUT_MS } from '../../src/cli/runs.js';
import type { ServedModel } from '../../src/cli/served-models.js';
import type { Service } from '../../src/cli/services.js';
import { cookbookLive, cookbookOn as cookbook } from '../support/cli.js';
import { startTestStack, waitUntil, workerProcess, type TestStack } from '../support/stack.js';

const root = join(import.meta.dirname, '..', '..');
const config = join(root, 'test', 'fixtures', 'sl_small.json');

describe('cookbook CLI', () => {
  let stack: TestStack;
  let worker: Service;
  beforeAll(async () => {
    stack = await startTestStack();
    worker = await workerProcess(stack);
  });
  afterAll(async () => {
    await worker?.stop();
    await stack?.stop();
  });

  it('train --wait prints a summary, the workflow id, plain progress lines and final metrics', async () => {
    const r = await cookbook(stack, ['train', 'sl', config, 'num_epochs=1', 'run_name=cli', '--wait', '--id', 'sl-cli-wait']);
    expect(r.err).not.toMatch(/error/i); // warnings (e.g. about the renderer) may appear
    expect(r.code).toBe(0);
    // A summary, not the whole config: that is the run's config.json.
    expect(r.out).toMatch(/^sl: supervised fine-tune of tiny-qwen3 on \S+\n {2}steps {2}5 \(5 batches × 1 epoch\)\n {2}lr {5}[\d.e-]+ \(linear schedule\)\nstarted sl-cli-wait\n/);
    expect(r.out).not.toContain('"model_name"');
    expect(r.out).toContain(`config   ${join(stack.dir, 'runs', 'sl-cli-wait', 'config.json')}`);
    expect(JSON.parse(readFileSync(join(stack.dir, 'runs', 'sl-cli-wait', 'config.json'), 'utf8'))).toMatchObject({ model_name: 'tiny-qwen3', num_epochs: 1 });
    expect(r.out).toMatch(/step 5\/5 · \[#+\] · 100%/);
    expect(r.out).toMatch(/completed after 5 steps/);
    expect(r.out).toMatch(/train_mean_nll\s+\d+\.\d+\n/);

    const runs = await cookbook(stack, ['runs']);
    expect(runs.out).toMatch(/^sl-cli-wait\s+sl\s+tiny-qwen3\s+5\s+completed$/m);
    const status = await cookbook(stack, ['status', 'sl-cli-wait']);
    expect(status.out).toContain('sl-cli-wait: COMPLETED');
    expect(status.out).toMatch(/final checkpoint tinker:\/\//);
  });

  it('set, pause, resume, status and stop drive a running run', async () => {
    const started = await cookbook(stack, ['train', 'sl', config, 'num_epochs=30', '--id', 'sl-cli-ctl', '--verbose']);
    expect(started.code).toBe(0);
    expect(started.out).toContain('"model_name": "tiny-qwen3"'); // --verbose: the whole resolved config
    expect(started.out).toContain('"num_epochs": 30');
    await waitUntil('the run has stepped', async () => (await cookbook(stack, ['status', 'sl-cli-ctl'])).out.match(/step [1-9]\d*\//) !== null);

    const set = await cookbook(stack, ['set', 'sl-cli-ctl', 'lr_multiplier=0.5', 'eval_every=0']);
    expect(set.out).toMatch(/hot settings now \{"lr_multiplier":0.5,"eval_every":0,"save_every":4\}, from step \d+/);
    const badSet = await cookbook(stack, ['set', 'sl-cli-ctl', 'lr_multiplier=-2']);
    expect(badSet.code).not.toBe(0);
    expect(badSet.err).toContain('lr_multiplier must be > 0');

    expect((await cookbook(stack, ['pause', 'sl-cli-ctl'])).out).toContain('paused');
    await waitUntil('paused', async () => (await cookbook(stack, ['status', 'sl-cli-ctl'])).out.includes('status paused'));
    expect((await cookbook(stack, ['resume', 'sl-cli-ctl'])).out).toContain('resumed');
    expect((await cookbook(stack, ['stop', 'sl-cli-ctl'])).out).toContain('stop requested');

    const watched = await cookbook(stack, ['watch', 'sl-cli-ctl']);
    expect(watched.code).toBe(0);
    expect(watched.out).toMatch(/stopped after \d+ steps/);
  });

  it('--wait says once which activity keeps failing and why, and follows the run when the cause is gone', async () => {
    const blocker = join(stack.dir, 'a-file');
    writeFileSync(blocker, 'where the run wants a folder');
    const train = cookbookLive(stack, ['train', 'sl', config, 'num_epochs=1', `log_path=${join(blocker, 'run')}`, '--wait', '--id', 'sl-cli-blocked']);
    try {
      await train.until(/last failure: .*ENOTDIR/);
      rmSync(blocker);
      const r = await train.done;
      expect(r.code).toBe(0);
      expect(r.out.match(/waiting: initRun attempt \d+/g)).toHaveLength(1);
      // Node's message already names the code: it is said once.
      expect(r.out).toMatch(/last failure: could not write \S+: ENOTDIR: not a directory/);
      expect(r.out).not.toMatch(/ENOTDIR: ENOTDIR/);
      expect(r.out).toMatch(/completed after 5 steps/);
    } finally {
      train.kill();
    }
  });

  it('without a worker, status answers at once and says so; watch says so once and goes on when a worker starts', async () => {
    const id = 'sl-cli-noworker';
    expect((await cookbook(stack, ['train', 'sl', config, 'num_epochs=30', '--id', id])).code).toBe(0);
    await waitUntil('the run has stepped', async () => /step [1-9]\d*\//.test((await cookbook(stack, ['status', id])).out));
    const RUNNING = 2; // PendingActivityState STARTED: killed now, the activity is left on the dead worker
    const pending = async () => (await stack.client.workflow.getHandle(id).describe()).raw.pendingActivities ?? [];
    // An activity that ends between the look and the kill can leave none pending: the next one is
    // scheduled by a workflow task that the killed worker never finished. Then a worker runs again.
    for (let attempt = 1; ; attempt++) {
      await waitUntil('a running activity', async () => (await pending()).some((a) => Number(a.state) === RUNNING), 60_000, 20);
      await worker.kill();
      if ((await pending()).length > 0 || attempt === 3) break;
      worker = await workerProcess(stack, `worker-${attempt}`);
    }

    const started = Date.now();
    const status = await runStatus(stack.client, id);
    // It did not wait out the query a busy worker gets: bounded by that wait, not by a guess at how
    // fast a loaded machine answers a few RPCs and the first short query.
    expect(Date.now() - started).toBeLessThan(BUSY_QUERY_TIMEOUT_MS);
    const noWorker = new RegExp(`no worker is polling task queue ${stack.taskQueue} since \\S+ \\(\\d+ s ago\\): start one with \`npx cookbook worker --task-queue ${stack.taskQueue}\``);
    expect(status).toMatch(noWorker);
    // What Temporal knows without a worker: search attributes, memo, pending activities.
    expect(status).toMatch(/kind sl · model tiny-qwen3 · status \w+ · step \d+ \(as last recorded\)/);
    expect(status).toContain(`log dir ${join(stack.dir, 'runs', id)}`);
    expect(status).toMatch(/waiting: \w+ attempt \d+ · (running|scheduled) \(last worker \d+@/);
    // As the user runs it: the process start comes on top, never the busy worker's queries.
    const cliStarted = Date.now();
    const cli = await cookbook(stack, ['status', id]);
    expect(cli.out).toMatch(noWorker);
    expect(Date.now() - cliStarted).toBeLessThan(QUERY_TIMEOUT_MS + BUSY_QUERY_TIMEOUT_MS);

    // `set` needs no worker either: the change is kept in the run's history (a signal), not lost or waited on.
    const setStarted = Date.now();
    const set = await cookbook(stack, ['set', id, 'lr_multiplier=0.25']);
    expect(set.code, set.err).toBe(0);
    expect(Date.now() - setStarted).toBeLessThan(SET_ANSWER_TIMEOUT_MS); // not the wait for an update's answer
    expect(set.out).toMatch(noWorker);
    expect(set.out).toContain(`recorded {"lr_multiplier":0.25} in the run's history`);
    const history = await stack.client.workflow.getHandle(id).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'set')).toHaveLength(1);

    const watch = cookbookLive(stack, ['watch', id]);
    try {
      await watch.until(/no worker is polling task queue .*; waiting/);
      worker = await workerProcess(stack, 'worker-again');
      await watch.until(new RegExp(`a worker answers for ${id} again: following it\n(.*\n)*step \\d+/\\d+`));
      // The worker applied the recorded change.
      await waitUntil('the recorded set applied', async () => /hot settings \{"lr_multiplier":0.25,/.test(await runStatus(stack.client, id)), 60_000);
      expect((await cookbook(stack, ['stop', id])).out).toContain('stop requested');
      const r = await watch.done;
      expect(r.code).toBe(0);
      expect(r.out.match(/no worker is polling/g)).toHaveLength(1);
      expect(r.out).toMatch(/stopped after \d+ steps/);
    } finally {
      watch.kill();
    }
  });

  it("models lists what the engine serves, with the shapes the engine reports", async () => {
    const caps = (await (await fetch(`${stack.engine.baseUrl}/api/v1/get_server_capabilities`, { headers: { 'X-API-Key': 'tml-test' } })).json()) as { supported_models: ServedModel[] };
    const qwen = caps.supported_models.find((m) => m.model_name === 'tiny-qwen3')!;
    // The seeded tiny model itself, not the Qwen3-8B whose tokenizer and renderers it borrows.
    expect([qwen.num_hidden_layers, qwen.hidden_size]).toEqual([2, 64]);
    const r = await cookbook(stack, ['models']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`served by ${stack.engine.baseUrl}:`);
    const row = (name: string) => r.out.split('\n').find((l) => l.startsWith(`${name} `)) ?? '';
    for (const m of caps.supported_models) {
      expect(row(m.model_name)).toMatch(new RegExp(`^${m.model_name}\\s+${humanCount(m.num_parameters!)}\\s+${m.num_hidden_layers}\\s+${m.hidden_size}\\s+${m.vocab_size!.toLocaleString('en-US')}\\s+${m.max_context_length!.toLocaleString('en-US')}\\s+shipped`));
    }
    expect(r.out).toContain('tiny-qwen3 → Qwen/Qwen3-8B');
    expect(r.out).not.toContain('Qwen/Qwen3-32B'); // the hosted catalogue only with --catalogue
    expect((await cookbook(stack, ['models', '--catalogue'])).out).toMatch(/^Qwen\/Qwen3-32B +32B +yes/m);

    const one = await cookbook(stack, ['models', 'tiny-qwen3']);
    expect(one.code, one.err).toBe(0);
    expect(one.out).toMatch(/^layers +2$/m);
    expect(one.out).toMatch(/^hidden size +64$/m);
    expect(one.out).toMatch(new RegExp(`^parameters +${qwen.num_parameters!.toLocaleString('en-US')} \\(`, 'm'));
    expect(one.out).toMatch(/^stands in for +Qwen\/Qwen3-8B /m);
    expect(one.out).not.toMatch(/8B$|4096/m);
  });

  it('errors name the problem and exit non-zero', async () => {
    const badKey = await cookbook(stack, ['train', 'sl', config, 'learning_rat=1']);
    expect(badKey.code).toBe(2);
    expect(badKey.err).toContain('command-line override learning_rat=1: learning_rat: unknown config key; did you mean learning_rate?');
    const badModel = await cookbook(stack, ['train', 'sl', config, 'model_name=no-such-model']);
    expect(badModel.code).toBe(2);
    expect(badModel.err).toMatch(/model_name: no-such-model is not served by .* \(served: .*tiny-qwen3/);
    const unknownRun = await cookbook(stack, ['status', 'sl-does-not-exist']);
    expect(unknownRun.code).toBe(1);
    expect(unknownRun.err).toContain('no run with workflow id "sl-does-not-exist"');
  });
});
