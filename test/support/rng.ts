// The seeded PRNG shared with the data generators, so that a failing trial can be re-run from its seed.
export { rng } from '../../scripts/lib/rng.mjs';
