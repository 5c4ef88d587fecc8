// bench/capture: what `cookbook serve --capture` costs a request. Two `cookbook serve` processes on
// one engine and the same model, one without capture and one capturing into a store daemon, take
// the same chat requests (a system prompt, a user turn, tools declared, --max-tokens sampled at
// temperature 0) in rounds of --concurrency requests each, both sides' rounds in flight together, so
// that both see the same engine load. Prints, per side, ms per request (mean, median, p90) and requests per second, then
// the overhead per request (ms and ratio on / off), the CPU time per request of each server and of
// the store daemon (from /proc: steadier than wall time on a loaded machine, where the engine's
// latency varies by more than capture costs), what the capturing server reported at shutdown
// (rows stored, dropped, failed, and the time recording took per exchange: capture's own work on the
// serving path, which the end-to-end figures bury under the engine's variance on a loaded machine)
// and the rows the store holds.
// --aa runs the same with capture off on both sides: the noise floor of the comparison.
//   npm run bench:capture [-- --requests 128 --concurrency 8 --max-tokens 16] [-- --aa]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CaptureStoreClient, ensureCaptureStore } from '../../src/capture/store/client.js';
import { readDaemonInfo } from '../../src/capture/store/daemon.js';
import { procStat } from '../../src/cli/procfs.js';
import { startEngine } from '../../test/support/engine.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '128' },
    concurrency: { type: 'string', default: '8' },
    'max-tokens': { type: 'string', default: '16' },
    aa: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const CONCURRENCY = Number(values.concurrency);
const MAX_TOKENS = Number(values['max-tokens']);
const MODEL = 'tiny-qwen3';
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'cookbook.mjs');
const RUN_ID = `bench-capture-${Date.now()}`;

interface Served {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

function serve(engineUrl: string, args: string[]): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', MODEL, ...args], { env: { ...process.env, TINKER_BASE_URL: engineUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /OpenAI base URL (\S+)/.exec(out);
      // With capture, serving starts once the line naming the store is out too.
      if (m && (!args.includes('--capture') || /capturing every exchange/.test(out))) resolve({ child, url: m[1], stderr: () => err });
    });
    child.on('exit', (code) => reject(new Error(`cookbook serve exited (${code}) before serving:\n${out}\n${err}`)));
  });
}

async function stop(s: Served): Promise<string> {
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
  return s.stderr();
}

const body = (i: number) =>
  JSON.stringify({
    model: MODEL,
    messages: [
      { role: 'system', content: 'You are a weather agent.' },
      { role: 'user', content: `Weather in city number ${i}?` },
    ],
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
    max_tokens: MAX_TOKENS,
    temperature: 0,
  });

async function request(url: string, i: number): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-cookbook-session': `bench-${i}` }, body: body(i) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}: ${await res.text()}`);
  await res.json();
  return performance.now() - t0;
}

const round = (url: string, first: number) => Promise.all(Array.from({ length: CONCURRENCY }, (_, k) => request(url, first + k)));

const TICK_MS = 10; // USER_HZ: 100 on Linux
/** CPU time (user + system) a process used so far, in ms; NaN where /proc cannot say. */
function cpuMs(pid: number | undefined): number {
  const f = pid === undefined ? undefined : procStat(pid);
  return f ? (Number(f[11]) + Number(f[12])) * TICK_MS : NaN;
}

function summary(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { mean: ms.reduce((a, b) => a + b, 0) / ms.length, median: at(0.5), p90: at(0.9) };
}

const dir = mkdtempSync(join(tmpdir(), 'bench-capture-'));
const engine = await startEngine();
let off: Served | undefined;
let on: Served | undefined;
try {
  const store = new CaptureStoreClient(await ensureCaptureStore(dir, { idleShutdownMinutes: 5 }));
  [off, on] = await Promise.all([serve(engine.baseUrl, []), serve(engine.baseUrl, values.aa ? [] : ['--capture', store.baseUrl, '--capture-run', RUN_ID])]);
  if (values.aa) console.log('--aa: capture off on both sides (the "on" side is a second plain server)');
  // Warm both (first requests open the sampling session and compile the engine's paths).
  await Promise.all([round(off.url, 0), round(on.url, 0)]);
  const times = { off: [] as number[], on: [] as number[] };
  const daemonPid = readDaemonInfo(dir)?.pid;
  const cpu0 = { off: cpuMs(off.child.pid), on: cpuMs(on.child.pid), daemon: cpuMs(daemonPid) };
  const wall = { off: 0, on: 0 };
  for (let i = 0; i < REQUESTS; i += CONCURRENCY) {
    // Both sides' rounds in flight together, so that every request of either meets the same engine
    // load; which side sends first alternates, so that neither always queues behind the other.
    const order = (i / CONCURRENCY) % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
    const t0 = performance.now();
    const done = order.map((side) =>
      round(side === 'off' ? off!.url : on!.url, i).then((ms) => {
        times[side].push(...ms);
        wall[side] += performance.now() - t0;
      }),
    );
    await Promise.all(done);
  }
  // CPU is counted once the capturing server's last rows are in the store (the exporter sends each second).
  const sent = times.on.length + CONCURRENCY;
  for (const deadline = Date.now() + 30_000; !values.aa && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if ((await store.allRows({ run_id: RUN_ID })).length >= sent) break;
  }
  const cpu = { off: cpuMs(off.child.pid) - cpu0.off, on: cpuMs(on.child.pid) - cpu0.on, daemon: cpuMs(daemonPid) - cpu0.daemon };
  const report = await stop(on);
  on = undefined;
  const rows = (await store.allRows({ run_id: RUN_ID })).length;
  const [a, b] = [summary(times.off), summary(times.on)];
  const fmt = (n: number) => n.toFixed(1);
  console.log(`${times.off.length} chat requests per side (${CONCURRENCY} at a time, ${MAX_TOKENS} tokens each, tools declared) on ${MODEL}, both sides at once`);
  console.log(`capture off: ${fmt(a.mean)} ms mean, ${fmt(a.median)} median, ${fmt(a.p90)} p90; ${fmt((times.off.length / wall.off) * 1000)} requests/s`);
  console.log(`capture on:  ${fmt(b.mean)} ms mean, ${fmt(b.median)} median, ${fmt(b.p90)} p90; ${fmt((times.on.length / wall.on) * 1000)} requests/s`);
  console.log(`overhead per request: ${fmt(b.mean - a.mean)} ms mean (ratio ${(b.mean / a.mean).toFixed(3)}), ${fmt(b.median - a.median)} ms median (ratio ${(b.median / a.median).toFixed(3)})`);
  const per = (ms: number) => fmt(ms / times.off.length);
  console.log(`CPU per request: server without capture ${per(cpu.off)} ms, with capture ${per(cpu.on)} ms, store daemon ${per(cpu.daemon)} ms: capture costs ${per(cpu.on - cpu.off + cpu.daemon)} ms of CPU per request`);
  console.log(`capturing server at shutdown: ${/capture: .*/.exec(report)?.[0] ?? '(no capture line)'}`);
  console.log(`store rows for ${RUN_ID}: ${rows} (requests sent to the capturing server: ${times.on.length + CONCURRENCY}, warm-up included)`);
} finally {
  if (off) await stop(off);
  if (on) await stop(on);
  await engine.stop();
  const daemon = readDaemonInfo(dir);
  if (daemon) process.kill(daemon.pid, 'SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
