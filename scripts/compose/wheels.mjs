// The engine image installs PyTorch from PyTorch's CPU wheel index (engine/Dockerfile,
// TORCH_INDEX_URL). Where that index cannot be reached, the compose test gives the build a local
// package index instead: the wheels of engine/requirements.txt downloaded once from PyPI (cached
// per version of the requirements) and served as a PEP 503 "simple" index on 127.0.0.1, passed
// as the build args TORCH_INDEX_URL and PIP_INDEX_URL. The Dockerfile is the one users build.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { run } from './proc.mjs';

export const CPU_TORCH_INDEX = 'https://download.pytorch.org/whl/cpu';

/** True when `url` answers at all within a few seconds. */
export async function reachable(url) {
  try {
    const res = await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(10_000) });
    return res.status < 500;
  } catch {
    return false;
  }
}

/** Downloads (once) the wheels of `requirements` for CPython 3.11 on this platform. */
export async function ensureWheels(requirements, cacheDir, log) {
  const hash = createHash('sha256').update(readFileSync(requirements)).digest('hex').slice(0, 12);
  const dir = join(cacheDir, `wheels-${hash}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  // pip skips what an interrupted earlier download already left there; .complete marks the end.
  log(`downloading the engine's wheels from PyPI into ${dir} (once; PyTorch and its CUDA libraries are a few GB) …`);
  const python = process.env.DURABLE_COOKBOOK_PYTHON ?? 'python3';
  const r = await run(python, ['-m', 'pip', 'download', '--disable-pip-version-check', '--only-binary=:all:', '--python-version', '3.11', '--dest', dir, '-r', requirements], { timeoutMs: 1_800_000 });
  writeFileSync(join(dir, '.complete'), new Date().toISOString());
  log(`wheels downloaded in ${(r.ms / 1000).toFixed(0)} s`);
  return dir;
}

const normalize = (name) => name.toLowerCase().replace(/[-_.]+/g, '-');

/**
 * Serves `dir`'s wheels as http://127.0.0.1:<port>/simple/<project>/; resolves { url, close }.
 * The URL is a build arg, part of the build cache's key: a fixed port keeps it (and the cached
 * PyTorch layer) the same from run to run; a random one is taken only when that port is busy.
 */
export async function serveWheels(dir, port = Number(process.env.COMPOSE_TEST_WHEELS_PORT ?? 47163)) {
  try {
    return await listenWheels(dir, port);
  } catch (err) {
    if (err.code !== 'EADDRINUSE') throw err;
    return listenWheels(dir, 0);
  }
}

function listenWheels(dir, port) {
  const projects = new Map();
  for (const file of readdirSync(dir)) {
    if (!file.endsWith('.whl')) continue;
    const project = normalize(file.split('-')[0]);
    if (!projects.has(project)) projects.set(project, []);
    projects.get(project).push(file);
  }
  let served = 0;
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    let m;
    if (path === '/simple/' || path === '/simple') {
      res.setHeader('content-type', 'text/html');
      res.end(`<!DOCTYPE html><html><body>${[...projects.keys()].map((p) => `<a href="/simple/${p}/">${p}</a>`).join('\n')}</body></html>`);
    } else if ((m = /^\/simple\/([^/]+)\/?$/.exec(path))) {
      const files = projects.get(normalize(m[1]));
      if (!files) {
        res.statusCode = 404;
        res.end('not found');
        return;
      }
      res.setHeader('content-type', 'text/html');
      res.end(`<!DOCTYPE html><html><body>${files.map((f) => `<a href="/files/${encodeURIComponent(f)}">${f}</a>`).join('\n')}</body></html>`);
    } else if ((m = /^\/files\/([^/]+)$/.exec(path)) && m[1].endsWith('.whl') && existsSync(join(dir, m[1]))) {
      served++;
      res.setHeader('content-type', 'application/octet-stream');
      res.setHeader('content-length', String(statSync(join(dir, m[1])).size));
      createReadStream(join(dir, m[1])).pipe(res);
    } else {
      res.statusCode = 404;
      res.end('not found');
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      resolve({
        url: `http://127.0.0.1:${port}/simple/`,
        projects: projects.size,
        served: () => served,
        close: () => new Promise((r) => server.close(() => r(undefined))),
      });
    });
  });
}
