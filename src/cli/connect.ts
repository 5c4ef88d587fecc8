// Where the CLI and the worker find Temporal and the engine. Temporal settings follow Temporal's
// standard client configuration (@temporalio/envconfig, the same TEMPORAL_* variables and
// temporal.toml profiles the Temporal CLI and SDKs read), with this precedence: command-line flags,
// then environment variables, then the profile in the config file, then the local stack's defaults.
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { loadClientConfigProfile, toClientOptions, type ClientConfigProfile, type ClientConfigTLS } from '@temporalio/envconfig';
import { parseWire } from '../backends/config.js';
import { ConfigError } from '../cookbook/config/overrides.js';
import { clientTracingInterceptors } from '../workers/tracing.js';

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233';
export const DEFAULT_NAMESPACE = 'default';
export const DEFAULT_ENGINE_PORT = 8100;
export const DEFAULT_ENGINE_URL = `http://127.0.0.1:${DEFAULT_ENGINE_PORT}`;

export interface GlobalFlags {
  address?: string;
  namespace?: string;
  /** Profile in temporal.toml (TEMPORAL_CONFIG_FILE or the user's default config file). */
  profile?: string;
  apiKey?: string;
  /** Paths of the mTLS client certificate and key, the CA that signed the server's cert. */
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsServerName?: string;
  engineUrl?: string;
  /** `json` | `proto`: the Tinker wire of this process and of the workers it starts (TINKER_WIRE). */
  wire?: string;
  taskQueue?: string;
}

/** Everything needed to open a Temporal connection, from a client or a worker. */
export interface TemporalTarget {
  address: string;
  namespace: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
  /** What was tried, in words, for error messages (never the API key itself). */
  description: string;
}

const CONNECTION_FLAGS = ['address', 'namespace', 'profile', 'apiKey', 'tlsCert', 'tlsKey', 'tlsCa', 'tlsServerName'] as const;

/** Names of the TEMPORAL_* variables envconfig reads, to say which ones were in play. */
const ENV_KEYS = /^TEMPORAL_(ADDRESS|NAMESPACE|API_KEY|TLS(_.*)?|PROFILE|CONFIG_FILE|GRPC_META_.*)$/;

/** Resolves flags > environment > config-file profile > defaults into connection settings. */
export function resolveTemporal(f: GlobalFlags, env: NodeJS.ProcessEnv = process.env): TemporalTarget {
  const envVars = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  let profile: ClientConfigProfile;
  let fromFile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ profile: f.profile, overrideEnvVars: envVars });
    fromFile = loadClientConfigProfile({ profile: f.profile, overrideEnvVars: envVars, disableEnv: true });
  } catch (err) {
    throw new ConfigError(`Temporal client config${configFileNote(env)}: ${(err as Error).message}`);
  }
  if (f.address) profile.address = f.address;
  if (f.namespace) profile.namespace = f.namespace;
  if (f.apiKey) profile.apiKey = f.apiKey;
  const tlsFlags: ClientConfigTLS = {
    ...(f.tlsCert ? { clientCert: { path: f.tlsCert } } : {}),
    ...(f.tlsKey ? { clientKey: { path: f.tlsKey } } : {}),
    ...(f.tlsCa ? { serverCACert: { path: f.tlsCa } } : {}),
    ...(f.tlsServerName ? { serverName: f.tlsServerName } : {}),
  };
  // A TLS flag turns TLS on even where TEMPORAL_TLS=false or the profile disables it.
  if (Object.keys(tlsFlags).length > 0) profile.tls = { ...profile.tls, ...tlsFlags, disabled: false };
  checkTls(profile.tls);

  let options: ReturnType<typeof toClientOptions>;
  try {
    options = toClientOptions(profile);
  } catch (err) {
    // envconfig reads the certificate files here: a wrong path is a config error, not a network one.
    throw new ConfigError(`Temporal TLS settings: ${(err as Error).message}`);
  }
  const { connectionOptions: c } = options;
  const target = {
    address: c.address ?? DEFAULT_TEMPORAL_ADDRESS,
    namespace: options.namespace ?? DEFAULT_NAMESPACE,
    tls: c.tls ?? undefined,
    apiKey: typeof c.apiKey === 'string' ? c.apiKey : undefined,
    metadata: c.metadata as Record<string, string> | undefined,
  };
  return { ...target, description: describe(profile, f, env, fromFile) };
}

function checkTls(tls: ClientConfigTLS | undefined): void {
  if (!tls || tls.disabled) return;
  // envconfig silently drops a cert without its key (or the reverse); say so instead.
  if (!tls.clientCert !== !tls.clientKey) {
    throw new ConfigError(`a TLS client certificate needs its key and the other way round (got ${tls.clientCert ? 'a certificate but no key' : 'a key but no certificate'}; --tls-cert/--tls-key or TEMPORAL_TLS_CLIENT_CERT_PATH/_KEY_PATH)`);
  }
}

const sourceName = (s: ClientConfigTLS['clientCert']) => (s === undefined ? undefined : 'path' in s ? s.path : 'inline data');

function describe(p: ClientConfigProfile, f: GlobalFlags, env: NodeJS.ProcessEnv, fromFile: ClientConfigProfile): string {
  const tls = p.tls && !p.tls.disabled ? p.tls : undefined;
  const parts: string[] = [`namespace ${p.namespace ?? DEFAULT_NAMESPACE}`];
  if (tls) {
    const cert = sourceName(tls.clientCert);
    const bits = [cert ? `client cert ${cert}` : 'no client cert'];
    const ca = sourceName(tls.serverCACert);
    bits.push(ca ? `server CA ${ca}` : 'system CAs');
    if (tls.serverName) bits.push(`server name ${tls.serverName}`);
    parts.push(`${cert ? 'mTLS' : 'TLS'} (${bits.join(', ')})`);
  } else {
    parts.push(p.apiKey ? 'TLS (system CAs)' : 'plaintext, no TLS');
  }
  if (p.apiKey) parts.push('API key');
  const given = CONNECTION_FLAGS.filter((k) => f[k] !== undefined).map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  const envGiven = Object.keys(env).filter((k) => ENV_KEYS.test(k) && env[k] !== undefined);
  const sources = [
    given.length ? `flags ${given.sort().join(' ')}` : '',
    envGiven.length ? `env ${envGiven.sort().join(' ')}` : '',
    Object.keys(fromFile).length ? `profile "${f.profile ?? env.TEMPORAL_PROFILE ?? 'default'}"${configFileNote(env)}` : '',
  ].filter(Boolean);
  parts.push(`settings from ${sources.length ? sources.join('; ') : 'defaults'}`);
  return parts.join(', ');
}

const configFileNote = (env: NodeJS.ProcessEnv) => (env.TEMPORAL_CONFIG_FILE ? ` in ${env.TEMPORAL_CONFIG_FILE}` : ' in the default temporal.toml');

/** The advice that goes with a failed connection: local stack for the default, config otherwise. */
export function connectHint(t: TemporalTarget, why: string): string {
  const localDefault = t.address === DEFAULT_TEMPORAL_ADDRESS && !t.tls && !t.apiKey;
  if (localDefault) return 'start the local stack with `npx cookbook dev`, or point TEMPORAL_ADDRESS / --address at your cluster';
  // What a TLS front end (nginx, a load balancer) answers to a missing or untrusted client cert.
  const certHint = t.tls && /\b400\b/.test(why) ? 'an HTTP 400 from a TLS front end usually means it wants a client certificate it trusts; ' : '';
  return `${certHint}check the address, TLS certificates and API key (see docs/multi-host.md)`;
}

export const temporalAddress = (f: GlobalFlags) => resolveTemporal(f).address;
export const engineUrl = (f: GlobalFlags) => f.engineUrl ?? process.env.TINKER_BASE_URL ?? DEFAULT_ENGINE_URL;

/**
 * `--wire json|proto` sets TINKER_WIRE for this process: its own Tinker clients and the workers it
 * starts (they inherit the environment) read it. A worker already running keeps its own.
 */
export function applyWireFlag(wire: string | undefined): void {
  if (wire === undefined) return;
  try {
    parseWire(wire, '--wire');
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  process.env.TINKER_WIRE = wire.trim().toLowerCase();
}
export const namespace = (f: GlobalFlags) => resolveTemporal(f).namespace;

export async function connectClient(f: GlobalFlags): Promise<Client> {
  const t = resolveTemporal(f);
  try {
    const connection = await Connection.connect({ address: t.address, tls: t.tls, apiKey: t.apiKey, metadata: t.metadata, connectTimeout: '5s' });
    // With OTEL_EXPORTER_OTLP_ENDPOINT set, workflow starts and signals are traced (workers/tracing.ts).
    const workflow = await clientTracingInterceptors();
    return new Client({ connection, namespace: t.namespace, ...(workflow.length ? { interceptors: { workflow } } : {}) });
  } catch (err) {
    throw new Error(`cannot reach Temporal at ${t.address} (${t.description}): ${causeChain(err)}; ${connectHint(t, causeChain(err))}`);
  }
}

/** The SDK wraps the gRPC error ("Failed to connect to Temporal server"); the cause says why. */
export function causeChain(err: unknown): string {
  const messages: string[] = [];
  for (let e = err; e instanceof Error && messages.length < 4; e = e.cause) {
    if (e.message && !messages.includes(e.message)) messages.push(e.message);
  }
  return messages.join(': ') || String(err);
}

/** parseArgs specs of the flags every command that talks to Temporal takes. */
export const CONNECTION_OPTIONS = {
  address: { type: 'string' },
  namespace: { type: 'string' },
  profile: { type: 'string' },
  'api-key': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-ca': { type: 'string' },
  'tls-server-name': { type: 'string' },
  'engine-url': { type: 'string' },
  wire: { type: 'string' },
  'task-queue': { type: 'string' },
} as const;

type ConnectionValues = { [K in keyof typeof CONNECTION_OPTIONS]?: string };

export function globalFlags(v: ConnectionValues): GlobalFlags {
  return {
    address: v.address,
    namespace: v.namespace,
    profile: v.profile,
    apiKey: v['api-key'],
    tlsCert: v['tls-cert'],
    tlsKey: v['tls-key'],
    tlsCa: v['tls-ca'],
    tlsServerName: v['tls-server-name'],
    engineUrl: v['engine-url'],
    wire: v.wire,
    taskQueue: v['task-queue'],
  };
}

export const CONNECTION_USAGE = `connection options (flags > env > temporal.toml profile > local defaults; see docs/multi-host.md):
  --address <host:port>      TEMPORAL_ADDRESS            (default ${DEFAULT_TEMPORAL_ADDRESS})
  --namespace <ns>           TEMPORAL_NAMESPACE          (default ${DEFAULT_NAMESPACE})
  --profile <name>           TEMPORAL_PROFILE            profile in TEMPORAL_CONFIG_FILE or ~/.config/temporalio/temporal.toml
  --api-key <key>            TEMPORAL_API_KEY            (Temporal Cloud; turns TLS on)
  --tls-cert <file>          TEMPORAL_TLS_CLIENT_CERT_PATH   mTLS client certificate (PEM)
  --tls-key <file>           TEMPORAL_TLS_CLIENT_KEY_PATH    its private key
  --tls-ca <file>            TEMPORAL_TLS_SERVER_CA_CERT_PATH  CA of the server's certificate (default: system CAs)
  --tls-server-name <name>   TEMPORAL_TLS_SERVER_NAME    name to verify in the server's certificate
  --engine-url <url>         TINKER_BASE_URL             (default ${DEFAULT_ENGINE_URL})
  --wire json|proto          TINKER_WIRE                 Tinker wire for training requests (default: protobuf,
                                                         JSON once a server refuses it; docs/tinker-client.md)
  --task-queue <name>        COOKBOOK_TASK_QUEUE (worker) (default cookbook)`;
