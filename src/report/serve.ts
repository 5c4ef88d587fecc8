// `cookbook report --serve`: the report over HTTP on 127.0.0.1, rendered afresh for each request
// so it follows a run in progress (the page refetches itself every few seconds).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { esc } from './html.js';
import { buildReportHtml, type ReportOptions } from './report.js';

export const DEFAULT_REFRESH_SECONDS = 5;

export interface ReportServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

export async function serveReport(logDirs: readonly string[], opts: ReportOptions & { port?: number; refreshSeconds?: number } = {}): Promise<ReportServer> {
  const live = { refreshSeconds: opts.refreshSeconds ?? DEFAULT_REFRESH_SECONDS };
  // Requests that arrive while a render runs share it: a slow render is not started once per tab.
  let inFlight: Promise<string> | null = null;
  const render = () => {
    inFlight ??= buildReportHtml(logDirs, { ...opts, live, allowEmpty: true }).finally(() => (inFlight = null));
    return inFlight;
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method !== 'GET' || (path !== '/' && path !== '/report.html')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the report is at /\n');
      return;
    }
    render().then(
      (html) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html),
      // A log file caught mid-write, or a log dir that went away: say so, the next refresh retries.
      (err: Error) => res.writeHead(500, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><meta http-equiv="refresh" content="${live.refreshSeconds}"><title>report error</title><pre>${esc(err.message)}</pre>`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${opts.port} is in use; choose another with --port`) : err),
    );
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    server,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Open tabs hold keep-alive connections that would keep close() waiting.
        server.closeAllConnections();
      }),
  };
}
