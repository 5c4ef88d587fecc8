// "Which shape is this?": a single-turn env whose observation is an image (a vision model's RL
// task). Batch i's pictures are drawn from numpy's legacy RandomState(i), so every run, and every
// replay of a step, sees the same problems; the reward is 1 for naming the shape.
import { z } from 'zod';
import { ConfigurationError } from '../../errors.js';
import { loadMessageImages } from '../../images/messages.js';
import type { Message, Renderer } from '../../renderers/types.js';
import { LegacyRandomState } from '../mt19937.js';
import { ProblemEnv, ProblemGroupBuilder } from '../problem-env.js';
import type { EnvGroupBuilder, InitialObservation, RLDataset } from '../types.js';
import { parseEnvArgs } from './args.js';
import { COLOURS, drawShape, SHAPES, type Colour, type ShapePicture } from './shape-images.js';

export const WHICH_SHAPE_QUESTION = `Which shape is this: ${SHAPES.join(', ')}? Answer with one word.`;

export class WhichShapeEnv extends ProblemEnv {
  constructor(
    readonly picture: ShapePicture,
    renderer: Renderer,
  ) {
    super(renderer);
  }

  getQuestion(): string {
    return WHICH_SHAPE_QUESTION;
  }

  override async initialObservation(): Promise<InitialObservation> {
    if (!this.renderer.takesImages) {
      throw new ConfigurationError(
        `which_shape shows the policy an image, and renderer ${this.renderer.name} renders text only: use a vision model (e.g. tiny-qwen3-vl)`,
      );
    }
    const image = await drawShape(this.picture);
    const convo: Message[] = [{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: this.getQuestion() }] }];
    return { ob: this.renderer.buildGenerationPrompt(await loadMessageImages(convo, 'which_shape')), stopCondition: this.stopCondition };
  }

  /** The first shape the reply names must be the one drawn. */
  checkAnswer(content: string): boolean {
    const named = content.toLowerCase().match(new RegExp(`\\b(${SHAPES.join('|')})s?\\b`));
    return named?.[1] === this.picture.shape;
  }

  checkFormat(content: string): boolean {
    return content.trim().split(/\s+/).length <= 3;
  }

  getReferenceAnswer(): string {
    return this.picture.shape;
  }
}

export const WhichShapeArgsSchema = z.strictObject({
  batch_size: z.int().positive().default(8),
  group_size: z.int().positive().default(4),
  n_batches: z.int().positive().default(100),
  /** Side of each picture in pixels (tiny-qwen3-vl: 64 px is 4 image tokens). */
  image_size: z.int().min(8).max(1024).default(64),
  /** Batches for the test set (drawn from seeds after the training ones); 0: none. */
  n_test_batches: z.int().nonnegative().default(1),
});
export type WhichShapeArgs = z.output<typeof WhichShapeArgsSchema>;

/** The pictures of batch `seed`: shape, colour, scale and offset drawn in that order per group. */
export function whichShapePictures(seed: number, batchSize: number, size: number): ShapePicture[] {
  const rng = new LegacyRandomState(seed);
  const colours = Object.keys(COLOURS) as Colour[];
  return Array.from({ length: batchSize }, () => ({
    shape: SHAPES[rng.randint(0, SHAPES.length)],
    colour: colours[rng.randint(0, colours.length)],
    size,
    scale: 0.5 + rng.randint(0, 5) / 10,
    dx: (rng.randint(0, 7) - 3) / 20,
    dy: (rng.randint(0, 7) - 3) / 20,
  }));
}

export class WhichShapeDataset implements RLDataset {
  constructor(
    readonly renderer: Renderer,
    readonly args: WhichShapeArgs,
    /** Seed of batch 0 (the test set starts after the training batches). */
    readonly firstSeed = 0,
    readonly nBatches = args.n_batches,
    readonly groupSize = args.group_size,
  ) {}

  get length(): number {
    return this.nBatches;
  }

  getBatch(index: number): EnvGroupBuilder[] {
    if (!Number.isInteger(index) || index < 0) throw new RangeError(`batch index ${index} is not a non-negative integer`);
    return whichShapePictures(this.firstSeed + index, this.args.batch_size, this.args.image_size).map(
      (picture) => new ProblemGroupBuilder(() => new WhichShapeEnv(picture, this.renderer), this.groupSize, 'which_shape'),
    );
  }
}

export function buildWhichShapeDatasets(args: Record<string, unknown>, renderer: Renderer): { train: RLDataset; test?: RLDataset } {
  const a = parseEnvArgs(WhichShapeArgsSchema, args, 'which_shape');
  if (!renderer.takesImages) {
    throw new ConfigurationError(
      `dataset.name: which_shape shows the policy images, and renderer ${renderer.name} renders text only: use a vision model (e.g. tiny-qwen3-vl)`,
    );
  }
  return {
    train: new WhichShapeDataset(renderer, a),
    test: a.n_test_batches ? new WhichShapeDataset(renderer, a, a.n_batches, a.n_test_batches, 1) : undefined,
  };
}
