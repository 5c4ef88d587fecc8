// A worker's shared sampling sessions: one per weights, reopened after a failure, the least
// recently used dropped past the bound.
import { describe, expect, it } from 'vitest';
import { SamplingSessions } from '../../src/activities/sampling-sessions.js';
import type { SamplingSession } from '../../src/backends/types.js';

const fakeSession = (id: string) => ({ id }) as unknown as SamplingSession;
const idOf = async (s: SamplingSession) => (s as unknown as { id: string }).id;

describe('SamplingSessions', () => {
  it('concurrent and later users of the same weights share one session', async () => {
    const sessions = new SamplingSessions();
    let opened = 0;
    const open = async () => fakeSession(`s${++opened}`);
    const seen = await Promise.all([1, 2, 3].map(() => sessions.use('a', open, idOf)));
    expect(seen).toEqual(['s1', 's1', 's1']);
    expect(await sessions.use('b', open, idOf)).toBe('s2');
    expect(await sessions.use('a', open, idOf)).toBe('s1');
  });

  it('a failure drops the session, so the retry opens a new one; a failed open is not kept', async () => {
    const sessions = new SamplingSessions();
    let opened = 0;
    const open = async () => fakeSession(`s${++opened}`);
    await expect(sessions.use('a', open, async () => Promise.reject(new Error('unknown sampling session')))).rejects.toThrow('unknown sampling session');
    expect(await sessions.use('a', open, idOf)).toBe('s2');
    const failing = async (): Promise<SamplingSession> => Promise.reject(new Error('engine down'));
    await expect(sessions.use('c', failing, async () => 1)).rejects.toThrow('engine down');
    expect(await sessions.use('c', open, idOf)).toBe('s3');
  });

  it('keeps the most recently used sessions up to its bound', async () => {
    const sessions = new SamplingSessions(2);
    let opened = 0;
    const open = async () => fakeSession(`s${++opened}`);
    const id = (key: string) => sessions.use(key, open, idOf);
    expect([await id('a'), await id('b'), await id('a'), await id('c')]).toEqual(['s1', 's2', 's1', 's3']);
    expect(await id('a')).toBe('s1'); // used more recently than b
    expect(await id('b')).toBe('s4'); // dropped when c came in
  });
});
