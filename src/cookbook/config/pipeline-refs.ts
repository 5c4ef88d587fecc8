// Links between pipeline stages that are not a plain chain (RLHF: SFT from base, a reward model from
// base, RL from the SFT stage with the reward model's weights). Plain data and pure functions, so
// both the config resolver and the (deterministic) pipeline workflow use them.
//
//   init_from: "previous" (default) | "base" | <index of an earlier stage>
//   "@stage:<i>/sampler" | "@stage:<i>/state" as any string value of a stage's config: the sampler
//   weights / training state path of stage i's final checkpoint, filled in when the stage starts.

export type InitFrom = 'previous' | 'base' | number;

const STAGE_REF = /^@stage:(\d+)\/(sampler|state)$/;

export interface StageRef {
  stage: number;
  what: 'sampler' | 'state';
}

export function parseStageRef(value: string): StageRef | null {
  const m = STAGE_REF.exec(value);
  return m ? { stage: Number(m[1]), what: m[2] as StageRef['what'] } : null;
}

/** Every string of `value` that looks like a stage reference (or starts with "@stage"), with its dotted path. */
export function findStageRefs(value: unknown, path: string[] = []): Array<{ path: string[]; text: string; ref: StageRef | null }> {
  if (typeof value === 'string') return value.startsWith('@stage') ? [{ path, text: value, ref: parseStageRef(value) }] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => findStageRefs(v, [...path, String(i)]));
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => findStageRefs(v, [...path, k]));
  return [];
}

/** `value` with every stage reference replaced by `pathOf(ref)` (a copy; the input is unchanged). */
export function substituteStageRefs<T>(value: T, pathOf: (ref: StageRef) => string): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const ref = parseStageRef(v);
      return ref ? pathOf(ref) : v;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** The index of the stage whose final weights stage `index` starts from; null: the base model. */
export function initSource(index: number, initFrom: InitFrom | undefined): number | null {
  if (initFrom === 'base' || index === 0) return null;
  if (initFrom === undefined || initFrom === 'previous') return index - 1;
  return initFrom;
}
