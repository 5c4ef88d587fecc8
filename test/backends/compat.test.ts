// Keeps docs/tinker-compat.md true: every "supported" row names a method that exists on the
// implementation and that the real-engine integration suite calls.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TinkerBackend } from '../../src/backends/tinker-backend.js';
import { TinkerSamplingSession } from '../../src/backends/sampling-session.js';
import { TinkerTrainingSession } from '../../src/backends/training-session.js';

const read = (rel: string) => readFileSync(fileURLToPath(new URL(rel, import.meta.url)), 'utf8');
const table = read('../../docs/tinker-compat.md');
// The real-engine suites: the client's calls, and provenance (sampling with recorded stability info).
const integration = read('./engine.integration.test.ts') + read('./provenance-engine.integration.test.ts');
const conformance = read('../../engine/tests/test_conformance_sdk.py');

interface Row {
  sdk: string;
  status: string;
  ours: string;
}
const rows: Row[] = table
  .split('\n')
  .filter((l) => l.startsWith('| `'))
  .map((l) => {
    const [sdk, status, ours] = l.split('|').slice(1, 4).map((c) => c.trim());
    return { sdk, status, ours };
  });

const impls: Record<string, object> = {
  TinkerBackend: TinkerBackend.prototype,
  TrainingSession: TinkerTrainingSession.prototype,
  SamplingSession: TinkerSamplingSession.prototype,
};

/** SDK methods the reference cookbook calls; the table must have a row for each. */
const COOKBOOK_SDK_METHODS = [
  'ServiceClient.create_lora_training_client',
  'ServiceClient.create_training_client_from_state',
  'ServiceClient.create_training_client_from_state_with_optimizer',
  'ServiceClient.create_sampling_client',
  'ServiceClient.get_server_capabilities',
  'TrainingClient.forward',
  'TrainingClient.forward_backward',
  'TrainingClient.forward_backward_custom',
  'TrainingClient.optim_step',
  'TrainingClient.save_state',
  'TrainingClient.load_state',
  'TrainingClient.load_state_with_optimizer',
  'TrainingClient.save_weights_for_sampler',
  'TrainingClient.save_weights_and_get_sampling_client',
  'TrainingClient.get_info',
  'TrainingClient.get_tokenizer',
  'SamplingClient.sample',
  'SamplingClient.compute_logprobs',
  'RestClient.list_checkpoints',
  'RestClient.delete_checkpoint',
  'RestClient.get_training_run',
];

describe('docs/tinker-compat.md', () => {
  it('has a row for every SDK method the cookbook uses, each with a known status', () => {
    const names = rows.map((r) => r.sdk.replace(/`/g, ''));
    for (const m of COOKBOOK_SDK_METHODS) expect(names, m).toContain(m);
    for (const r of rows) expect(['supported', 'not supported'], r.sdk).toContain(r.status);
    expect(rows.filter((r) => r.status === 'supported').length).toBeGreaterThan(20);
  });

  it('names the SDK versions the engine conformance suite runs, and only those', () => {
    const covered = /^Versions covered: (.*)$/m.exec(table);
    expect(covered, 'no "Versions covered:" line').not.toBeNull();
    const documented = [...covered![1].matchAll(/\*\*(\d+\.\d+\.\d+)\*\*/g)].map((m) => m[1]);
    const suite = /parametrize\("version", \[([^\]]*)\]\)/.exec(conformance);
    expect(suite, 'no version parametrization in test_conformance_sdk.py').not.toBeNull();
    const tested = [...suite![1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
    expect(documented.sort()).toEqual(tested.sort());
  });

  // A row for one option of an SDK method (`Class.method(option=…)`) names, first in parentheses,
  // the client's spelling of it, which the real-engine suite must use.
  for (const row of rows.filter((r) => r.status === 'supported' && /\(\w+=/.test(r.sdk))) {
    it(`${row.sdk}: its client option is exercised against the real engine`, () => {
      const option = /\(`([^`]+)`/.exec(row.ours);
      expect(option, `no option in parentheses in "${row.ours}"`).not.toBeNull();
      expect(integration.includes(option![1]), `${option![1]} is not used by engine.integration.test.ts`).toBe(true);
    });
  }

  for (const row of rows.filter((r) => r.status === 'supported')) {
    it(`${row.sdk} → ${row.ours.split(' ')[0]} exists and is exercised against the real engine`, () => {
      const m = /`(\w+)\.(\w+)`/.exec(row.ours);
      expect(m, `no Class.method in "${row.ours}"`).not.toBeNull();
      const [, cls, method] = m!;
      const proto = impls[cls];
      expect(proto, `unknown class ${cls}`).toBeDefined();
      expect(typeof (proto as Record<string, unknown>)[method], `${cls}.${method}`).toBe('function');
      expect(integration.includes(`.${method}(`), `${method} is not called by engine.integration.test.ts`).toBe(true);
    });
  }
});
