// How the CLI and worker resolve their Temporal connection: flags > TEMPORAL_* env > temporal.toml
// profile > local defaults, through Temporal's own envconfig loader. No server needed.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveTemporal } from '../../src/cli/connect.js';

const dir = mkdtempSync(join(tmpdir(), 'connect-test-'));
const pem = (name: string) => {
  const path = join(dir, name);
  writeFileSync(path, `-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`);
  return path;
};
const cert = pem('client.crt');
const key = pem('client.key');
const ca = pem('ca.crt');
const toml = join(dir, 'temporal.toml');
writeFileSync(
  toml,
  `[profile.default]
address = "default-profile:7233"

[profile.prod]
address = "prod.example:7233"
namespace = "prod-ns"
[profile.prod.tls]
client_cert_path = "${cert}"
client_key_path = "${key}"
server_ca_cert_path = "${ca}"
server_name = "temporal.prod"
`,
);
const noFile = { TEMPORAL_CONFIG_FILE: join(dir, 'absent.toml') };
const decode = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);

describe('resolveTemporal', () => {
  it('defaults to the local stack, plaintext', () => {
    const t = resolveTemporal({}, noFile);
    expect(t).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', tls: undefined, apiKey: undefined });
    expect(t.description).toMatch(/plaintext.*settings from env TEMPORAL_CONFIG_FILE/);
  });

  it('reads a profile: address, namespace and mTLS files', () => {
    const t = resolveTemporal({ profile: 'prod' }, { TEMPORAL_CONFIG_FILE: toml });
    expect(t.address).toBe('prod.example:7233');
    expect(t.namespace).toBe('prod-ns');
    const tls = t.tls as { serverNameOverride?: string; serverRootCACertificate?: Uint8Array; clientCertPair?: { crt: Uint8Array; key: Uint8Array } };
    expect(tls.serverNameOverride).toBe('temporal.prod');
    expect(decode(tls.clientCertPair?.crt)).toContain('client.crt');
    expect(decode(tls.clientCertPair?.key)).toContain('client.key');
    expect(decode(tls.serverRootCACertificate)).toContain('ca.crt');
    expect(t.description).toContain(`mTLS (client cert ${cert}, server CA ${ca}, server name temporal.prod)`);
    expect(t.description).toContain(`profile "prod" in ${toml}`);
  });

  it('TEMPORAL_PROFILE picks the profile; the "default" profile applies without one', () => {
    expect(resolveTemporal({}, { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_PROFILE: 'prod' }).address).toBe('prod.example:7233');
    expect(resolveTemporal({}, { TEMPORAL_CONFIG_FILE: toml }).address).toBe('default-profile:7233');
  });

  it('env beats the profile, flags beat both', () => {
    const env = { TEMPORAL_CONFIG_FILE: toml, TEMPORAL_ADDRESS: 'env:7233', TEMPORAL_TLS_SERVER_NAME: 'env-name' };
    const fromEnv = resolveTemporal({ profile: 'prod' }, env);
    expect(fromEnv.address).toBe('env:7233');
    expect(fromEnv.namespace).toBe('prod-ns');
    expect((fromEnv.tls as { serverNameOverride?: string }).serverNameOverride).toBe('env-name');
    const fromFlags = resolveTemporal({ profile: 'prod', address: 'flag:7233', namespace: 'flag-ns', tlsServerName: 'flag-name' }, env);
    expect(fromFlags).toMatchObject({ address: 'flag:7233', namespace: 'flag-ns' });
    expect((fromFlags.tls as { serverNameOverride?: string }).serverNameOverride).toBe('flag-name');
    expect(fromFlags.description).toContain('flags --address --namespace --profile --tls-server-name');
  });

  it('TLS flags turn TLS on even where the environment turns it off', () => {
    const t = resolveTemporal({ tlsCa: ca }, { ...noFile, TEMPORAL_TLS: 'false' });
    expect(decode((t.tls as { serverRootCACertificate?: Uint8Array }).serverRootCACertificate)).toContain('ca.crt');
    expect(t.description).toContain(`TLS (no client cert, server CA ${ca})`);
  });

  it('an API key (Temporal Cloud) turns TLS on with the system CAs and is never described', () => {
    const t = resolveTemporal({ address: 'ns.acct.tmprl.cloud:7233', namespace: 'ns.acct' }, { ...noFile, TEMPORAL_API_KEY: 'secret-key' });
    expect(t).toMatchObject({ tls: true, apiKey: 'secret-key' });
    expect(t.description).toContain('TLS (system CAs), API key');
    expect(t.description).not.toContain('secret-key');
    expect(resolveTemporal({ apiKey: 'flag-key' }, { ...noFile, TEMPORAL_API_KEY: 'env-key' }).apiKey).toBe('flag-key');
  });

  it('misconfiguration is a ConfigError that names the problem', () => {
    expect(() => resolveTemporal({ profile: 'nope' }, { TEMPORAL_CONFIG_FILE: toml })).toThrow(/Temporal client config in .*temporal\.toml: Profile 'nope' not found/);
    expect(() => resolveTemporal({ tlsCert: cert }, noFile)).toThrow(/client certificate needs its key/);
    expect(() => resolveTemporal({ tlsCa: join(dir, 'missing-ca.crt') }, noFile)).toThrow(/Temporal TLS settings: .*missing-ca\.crt/);
    try {
      resolveTemporal({ profile: 'nope' }, { TEMPORAL_CONFIG_FILE: toml });
    } catch (err) {
      expect((err as Error).name).toBe('ConfigError');
    }
  });
});
