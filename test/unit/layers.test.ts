// The house's layers point one way: scripts/, bench/, test/ and engine/offline/ may use src/, never
// the reverse. What the product needs at run time (its installers, the engine launcher, the reaper)
// lives under src/ so that a user's `cookbook` never reaches into developer tooling.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..', '..');
const src = join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : /\.(ts|mts|mjs|js)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

/** Every module specifier a file imports (static, dynamic, re-export) and every repo path it spawns. */
function references(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)].map((m) => m[1]);
  const joined = [...text.matchAll(/join\(\s*repoRoot\s*,\s*['"]([^'"]+)['"]/g)].map((m) => `${m[1]}/`);
  return [...specifiers.filter((s) => s.startsWith('.')).map((s) => relative(root, resolve(file, '..', s))), ...joined];
}

describe('layers', () => {
  it('nothing under src/ imports or spawns scripts/, bench/, test/ or engine/offline/', () => {
    const outward = sourceFiles(src).flatMap((file) =>
      references(file)
        .filter((target) => /^(scripts|bench|test|engine\/offline)\//.test(target))
        .map((target) => `${relative(root, file)} → ${target}`),
    );
    expect(outward).toEqual([]);
  });

  it('the check sees a reference out of src/ (it can fail)', () => {
    const probe = join(src, 'cli', 'services.ts');
    expect(references(probe)).toContain('src/stack/engine-env.mjs');
    expect(references(probe).some((r) => r.startsWith('src/stack'))).toBe(true);
  });
});
