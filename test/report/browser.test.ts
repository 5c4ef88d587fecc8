// The report in a real browser: Debian's Chromium, headless. The written page (no script) must
// render its SVG charts from disk with no network; the served page's live script must run and
// refresh without a JS error. Chromium is installed when missing; a failed install fails here.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { runColor } from '../../src/report/charts.js';
import { writeReport } from '../../src/report/report.js';
import { serveReport } from '../../src/report/serve.js';
import { colourCount, decodePng, inkRatio, pixelsNear } from './png.js';
import { rlRun, RL_KEYS, SL_KEYS, slRun, tempDir } from './fixture.js';

function ensureChromium(): string {
  const found = spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' });
  if (found.status === 0) return found.stdout.trim();
  const apt = (...args: string[]) => spawnSync('apt-get', args, { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  let install = apt('install', '-y', '--no-install-recommends', 'chromium');
  if (install.status !== 0) {
    // A fresh image has no package lists yet.
    apt('update');
    install = apt('install', '-y', '--no-install-recommends', 'chromium');
  }
  if (install.status !== 0) throw new Error(`could not install chromium with apt-get (exit ${install.status}): ${(install.stderr || install.error?.message || '').slice(-2000)}`);
  return 'chromium';
}

interface ChromeRun {
  stdout: string;
  /** Chromium's own log, with the page's console messages and uncaught errors (`--enable-logging`). */
  log: string;
}

/** Async, not spawnSync: the served page needs this process's event loop to answer it. */
function chromium(bin: string, args: string[]): Promise<ChromeRun> {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['--headless', '--disable-gpu', '--no-sandbox', '--hide-scrollbars', '--enable-logging=stderr', '--v=0', ...args]);
    let stdout = '', log = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (log += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 60_000);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, log });
      else reject(new Error(`chromium exited ${code}: ${log.slice(-2000)}`));
    });
  });
}

const consoleErrors = (log: string) => log.split('\n').filter((l) => /CONSOLE|Uncaught|ERR_FILE_NOT_FOUND|net::ERR/.test(l));

describe('the report in headless Chromium', () => {
  let bin: string;
  let page: string;
  beforeAll(async () => {
    bin = ensureChromium();
    const sl = slRun(tempDir(), 'sl-a');
    const rl = await rlRun(tempDir(), 'rl-b');
    page = await writeReport([sl, rl]);
  }, 600_000);

  it('renders every chart from the file with no network access and no console output', async () => {
    const { stdout: dom, log } = await chromium(bin, ['--dump-dom', pathToFileURL(page).href]);
    expect(consoleErrors(log)).toEqual([]);
    const keys = new Set([...SL_KEYS, ...RL_KEYS]);
    const figures = dom.match(/<figure class="chart"[\s\S]*?<\/figure>/g) ?? [];
    expect(figures).toHaveLength(keys.size);
    for (const f of figures) expect(f).toMatch(/<svg[\s\S]*<path[^>]* d="M[^"]+"/);
    expect(dom).toMatch(/<details id="ro-1-0" class="iteration"/);
  });

  it('the screenshot shows the page: large, mostly drawn, many colours', async () => {
    const shot = join(tempDir(), 'report.png');
    await chromium(bin, [`--screenshot=${shot}`, '--window-size=1200,2000', pathToFileURL(page).href]);
    const png = readFileSync(shot);
    const img = decodePng(png);
    expect([img.width, img.height]).toEqual([1200, 2000]);
    expect(png.length).toBeGreaterThan(50_000);
    // Charts, tables and text on a white page: some ink, not a solid block, many colours.
    const ink = inkRatio(img);
    expect(ink).toBeGreaterThan(0.01);
    expect(ink).toBeLessThan(0.5);
    expect(colourCount(img)).toBeGreaterThan(100);
    // Both runs' curves are drawn, each in its colour (legend swatches alone are a few hundred pixels; the page has ~2000 of each).
    for (const colour of [runColor(0), runColor(1)]) expect(pixelsNear(img, colour), colour).toBeGreaterThan(1000);
  });

  it('the served page refreshes itself in place without JS errors', async () => {
    const server = await serveReport([dirname(page)], { refreshSeconds: 1 });
    try {
      // Virtual time runs the page's timers quickly; each refresh fetches and swaps the content.
      const { stdout: dom, log } = await chromium(bin, ['--virtual-time-budget=4000', '--dump-dom', server.url]);
      expect(consoleErrors(log)).toEqual([]);
      const refreshes = Number(/<html[^>]*data-refreshes="(\d+)"/.exec(dom)?.[1] ?? 0);
      expect(refreshes).toBeGreaterThanOrEqual(1);
      expect(dom.match(/<figure class="chart"/g)?.length).toBe(SL_KEYS.length);
    } finally {
      await server.close();
    }
  });
});
