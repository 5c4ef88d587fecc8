// A TLS-terminating gRPC proxy in front of the Temporal dev server, so tests can exercise mutual TLS
// against a real server: Debian's nginx (installed with apt-get when missing) with grpc_pass and
// ssl_verify_client on, run as this test's own process from a temp config, and certificates made
// with openssl (a CA, a server cert for 127.0.0.1/localhost, a client cert).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { portOpen } from '../../src/cli/ports.js';
import { spawnService, type Service } from '../../src/cli/services.js';
import { onFreePort } from './free-port.js';

export interface TestCerts {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** A client cert from a CA the proxy does not trust. */
  strangerCert: string;
  strangerKey: string;
}

function findNginx(): string | undefined {
  const onPath = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  if (onPath.status === 0 && onPath.stdout.trim()) return onPath.stdout.trim();
  return ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p));
}

/** nginx from PATH, else `apt-get install nginx-light` (then `nginx`); throws with apt's output on failure. */
export function ensureNginx(): string {
  const found = findNginx();
  if (found) return found;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const tries: string[] = [];
  const install = (pkg: string) => {
    const r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], { encoding: 'utf8', env });
    tries.push(`apt-get install ${pkg}: exit ${r.status ?? r.error?.message}\n${(r.stderr ?? '').slice(-1500)}`);
    return r.status === 0 && findNginx();
  };
  // The package lists may be stale or absent on a fresh machine: update once before giving up.
  const ok = install('nginx-light') || install('nginx') || (spawnSync('apt-get', ['update'], { env }).status === 0 && (install('nginx-light') || install('nginx')));
  if (!ok) throw new Error(`nginx is needed for the TLS proxy and could not be installed:\n${tries.join('\n')}`);
  return ok;
}

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });

function issue(dir: string, name: string, caName: string, subject: string, ext: string): void {
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.crt`, '-CAkey', `${caName}.key`, '-CAcreateserial', '-days', '2', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.crt`], dir);
}

function makeCa(dir: string, name: string): void {
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
}

export function makeCerts(dir: string): TestCerts {
  mkdirSync(dir, { recursive: true });
  makeCa(dir, 'ca');
  makeCa(dir, 'stranger-ca');
  issue(dir, 'server', 'ca', '/CN=localhost', 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n');
  const clientExt = 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n';
  issue(dir, 'client', 'ca', '/CN=cookbook-worker', clientExt);
  issue(dir, 'stranger', 'stranger-ca', '/CN=stranger', clientExt);
  const p = (f: string) => join(dir, f);
  return {
    ca: p('ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    strangerCert: p('stranger.crt'),
    strangerKey: p('stranger.key'),
  };
}

interface TlsProxyOpts {
  dir: string;
  upstreamPort: number;
  certs: TestCerts;
}

/** nginx on 127.0.0.1:<free port> that demands a client cert signed by `certs.ca` and forwards gRPC. */
export async function startTlsProxy(opts: TlsProxyOpts): Promise<Service & { address: string }> {
  return (await onFreePort({ ...opts, nginx: ensureNginx() }, startTlsProxyOn)).service;
}

async function startTlsProxyOn(opts: TlsProxyOpts & { nginx: string; port: number }): Promise<Service & { address: string }> {
  const { nginx, port } = opts;
  const dir = join(opts.dir, 'nginx');
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  const { certs } = opts;
  // One foreground process (no master, no daemon) so that the test owns it and stops it by pid;
  // every path nginx writes is inside the temp dir. Temporal long-polls for ~70 s, beyond nginx's
  // 60 s default read timeout, and a worker's connection carries many requests.
  const conf = `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:${port} ssl http2;
    ssl_certificate ${certs.serverCert};
    ssl_certificate_key ${certs.serverKey};
    ssl_client_certificate ${certs.ca};
    ssl_verify_client on;
    client_max_body_size 0;
    grpc_read_timeout 300s;
    grpc_send_timeout 300s;
    location / {
      grpc_pass grpc://127.0.0.1:${opts.upstreamPort};
    }
  }
}
`;
  const confFile = join(dir, 'nginx.conf');
  writeFileSync(confFile, conf);
  const service = await spawnService({
    name: 'nginx',
    command: nginx,
    args: ['-p', dir, '-e', join(dir, 'error.log'), '-c', confFile],
    logFile: join(dir, 'stdout.log'),
    ports: [port],
    ready: () => portOpen(port),
    readyTimeoutMs: 15_000,
  });
  return Object.assign(service, { address: `127.0.0.1:${port}` });
}
