// The CLI and `cookbook worker` against a Temporal server that demands mutual TLS: the real dev
// server behind nginx (grpc_pass, ssl_verify_client on) with certificates made for the test.
// Connection settings arrive as flags, as TEMPORAL_* variables and as a temporal.toml profile.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, spawnService, type Service } from '../../src/cli/services.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { makeCerts, startTlsProxy, type TestCerts } from '../support/tls-proxy.js';

const bin = join(repoRoot, 'bin', 'cookbook.mjs');
const config = join(repoRoot, 'test', 'fixtures', 'sl_small.json');

// This file runs in its own process: drop any Temporal settings of the machine running the tests,
// and point the config file at nothing unless a test names one.
for (const k of Object.keys(process.env)) if (/^TEMPORAL_(?!CLI$)/.test(k)) delete process.env[k];

type Result = { code: number; out: string; err: string };

describe('Temporal behind mutual TLS', () => {
  let stack: TestStack;
  let certs: TestCerts;
  let proxy: Service & { address: string };
  let baseEnv: NodeJS.ProcessEnv;

  const cookbook = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, [bin, ...args], { cwd: stack.dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...baseEnv, ...env } });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.on('exit', (code) => resolve({ code: code ?? 1, out, err }));
    });

  beforeAll(async () => {
    stack = await startTestStack();
    certs = makeCerts(join(stack.dir, 'certs'));
    proxy = await startTlsProxy({ dir: stack.dir, upstreamPort: Number(stack.temporalAddress.split(':')[1]), certs });
    baseEnv = { ...process.env, TINKER_API_KEY: 'tml-test', TEMPORAL_CONFIG_FILE: join(stack.dir, 'no-temporal.toml') };
  });
  afterAll(async () => {
    await proxy?.stop();
    await stack?.stop();
  });

  it('flags: the right client cert and CA connect (server name checked as "localhost")', async () => {
    const r = await cookbook(['runs', '--address', proxy.address, '--tls-cert', certs.clientCert, '--tls-key', certs.clientKey, '--tls-ca', certs.ca, '--tls-server-name', 'localhost']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
  });

  it('no client cert, a cert from another CA, or plaintext: refused, and the error says what was tried', async () => {
    const tried = (...flags: string[]) => cookbook(['runs', '--address', proxy.address, ...flags]);
    const [noCert, stranger, plain, worker] = await Promise.all([
      tried('--tls-ca', certs.ca),
      tried('--tls-ca', certs.ca, '--tls-cert', certs.strangerCert, '--tls-key', certs.strangerKey),
      tried(),
      cookbook(['worker', '--address', proxy.address, '--tls-ca', certs.ca, '--engine-url', stack.engine.baseUrl]),
    ]);
    const head = `error: cannot reach Temporal at ${proxy.address} (namespace default, `;
    expect(noCert.code).toBe(1);
    expect(noCert.err).toContain(`${head}TLS (no client cert, server CA ${certs.ca}), settings from flags --address --tls-ca;`);
    expect(stranger.code).toBe(1);
    expect(stranger.err).toContain(`${head}mTLS (client cert ${certs.strangerCert}, server CA ${certs.ca})`);
    expect(plain.code).toBe(1);
    expect(plain.err).toContain(`${head}plaintext, no TLS, settings from flags --address`);
    for (const r of [noCert, stranger, worker]) expect(r.err).toMatch(/400.*; an HTTP 400 from a TLS front end usually means it wants a client certificate it trusts;/);
    for (const r of [noCert, stranger, plain, worker]) expect(r.err).toContain('check the address, TLS certificates and API key (see docs/multi-host.md)');
    expect(worker.code).toBe(1);
    expect(worker.err).toContain(`${head}TLS (no client cert, server CA ${certs.ca})`);
  });

  it('a `cookbook worker` configured by a temporal.toml profile runs a run started with TEMPORAL_* variables, then stops on SIGTERM', async () => {
    const toml = join(stack.dir, 'temporal.toml');
    writeFileSync(
      toml,
      `[profile.mtls]\naddress = "${proxy.address}"\n[profile.mtls.tls]\nclient_cert_path = "${certs.clientCert}"\nclient_key_path = "${certs.clientKey}"\nserver_ca_cert_path = "${certs.ca}"\n`,
    );
    const logFile = join(stack.dir, 'cookbook-worker.log');
    const worker = await spawnService({
      name: 'cookbook worker',
      command: process.execPath,
      args: [bin, 'worker', '--profile', 'mtls', '--task-queue', stack.taskQueue, '--engine-url', stack.engine.baseUrl, '--max-concurrent-activities', '4', '--max-concurrent-workflows', '8'],
      env: { ...baseEnv, TEMPORAL_CONFIG_FILE: toml },
      logFile,
      ready: async () => readFileSync(logFile, 'utf8').includes('worker started'),
    });
    try {
      const started = readFileSync(logFile, 'utf8');
      expect(started).toContain(`"temporalAddress":"${proxy.address}"`);
      expect(started).toContain(`mTLS (client cert ${certs.clientCert}, server CA ${certs.ca}), settings from flags --profile; env TEMPORAL_CONFIG_FILE; profile \\"mtls\\" in ${toml}`);

      const env = {
        TEMPORAL_ADDRESS: proxy.address,
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKey,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
      };
      const r = await cookbook(['train', 'sl', config, 'num_epochs=1', `log_path=${join(stack.dir, 'runs', 'sl-tls')}`, '--wait', '--id', 'sl-tls', '--task-queue', stack.taskQueue, '--engine-url', stack.engine.baseUrl], env);
      expect(r.err).not.toMatch(/error/i);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/completed after 5 steps/);
      // The only worker on this task queue is the one behind the proxy.
      const history = await stack.client.workflow.getHandle('sl-tls').fetchHistory();
      const identities = new Set(history.events?.flatMap((e) => [e.workflowTaskCompletedEventAttributes?.identity, e.activityTaskStartedEventAttributes?.identity]).filter(Boolean));
      expect([...identities]).toEqual([expect.stringMatching(new RegExp(`^${worker.proc.pid}@`))]);
    } finally {
      await worker.stop(15_000);
    }
    expect(worker.proc.exitCode).toBe(0);
    const log = readFileSync(logFile, 'utf8');
    expect(log).toContain('"signal":"SIGTERM"');
    expect(log).toContain('worker stopped');
  });
});
