// The shipped example of an environment written against an OpenAI client (openai-client-env.ts):
// a two-turn arithmetic dialogue. The episode asks "What is x + y?", keeps the policy's answer in
// the conversation, asks it to multiply that by z, and scores each turn's last integer. Written the
// way a `verifiers` environment is: plain calls to `client.chat.completions.create`.
import { z } from 'zod';
import { ConfigurationError } from '../../errors.js';
import type { OpenAIChatMessage } from '../../renderers/openai-format.js';
import type { Renderer } from '../../renderers/types.js';
import { LegacyRandomState } from '../mt19937.js';
import { OpenAIClientEnv, type EpisodeOutcome, type PolicyClient } from '../openai-client-env.js';
import { BaseEnvGroupBuilder, type Env, type EnvGroupBuilder, type RLDataset } from '../types.js';
import { parseEnvArgs } from './args.js';

const lastInteger = (text: string | null): number | null => {
  const m = (text ?? '').replaceAll(',', '').match(/-?\d+/g);
  return m ? Number(m[m.length - 1]) : null;
};

/** One episode: two questions, the second building on the policy's own first answer. */
export async function arithmeticDialogue(client: PolicyClient, x: number, y: number, z: number): Promise<EpisodeOutcome> {
  const messages: OpenAIChatMessage[] = [
    { role: 'system', content: 'Answer with a number only.' },
    { role: 'user', content: `What is ${x} + ${y}?` },
  ];
  const first = (await client.chat.completions.create({ model: 'policy', messages })).choices[0].message;
  const sumRight = lastInteger(first.content) === x + y;
  messages.push({ role: 'assistant', content: first.content }, { role: 'user', content: `Multiply that by ${z}.` });
  const second = (await client.chat.completions.create({ model: 'policy', messages })).choices[0].message;
  const productRight = lastInteger(second.content) === (x + y) * z;
  return {
    reward: (Number(sumRight) + Number(productRight)) / 2,
    metrics: { sum_correct: Number(sumRight), product_correct: Number(productRight) },
    logs: { question: `(${x} + ${y}) * ${z}`, first: first.content ?? '', second: second.content ?? '' },
  };
}

export const OpenAIClientArithmeticArgsSchema = z.strictObject({
  batch_size: z.int().positive(),
  group_size: z.int().positive(),
  n_batches: z.int().positive().default(100),
});

class DialogueGroupBuilder extends BaseEnvGroupBuilder {
  constructor(
    readonly problem: [number, number, number],
    readonly renderer: Renderer,
    readonly groupSize: number,
  ) {
    super();
  }

  async makeEnvs(): Promise<Env[]> {
    const [x, y, z] = this.problem;
    return Array.from({ length: this.groupSize }, () => new OpenAIClientEnv(this.renderer, (client) => arithmeticDialogue(client, x, y, z)));
  }

  override loggingTags(): string[] {
    return ['openai_client_arithmetic'];
  }
}

class DialogueDataset implements RLDataset {
  constructor(
    readonly renderer: Renderer,
    readonly args: z.output<typeof OpenAIClientArithmeticArgsSchema>,
  ) {}

  get length(): number {
    return this.args.n_batches;
  }

  /** Batch i's problems come from RandomState(i): the same in every run and every retry. */
  getBatch(index: number): EnvGroupBuilder[] {
    const rng = new LegacyRandomState(index);
    return Array.from({ length: this.args.batch_size }, () => {
      const problem: [number, number, number] = [rng.randint(0, 50), rng.randint(0, 50), rng.randint(2, 10)];
      return new DialogueGroupBuilder(problem, this.renderer, this.args.group_size);
    });
  }
}

export function buildOpenAIClientArithmeticDatasets(args: Record<string, unknown>, renderer: Renderer): { train: RLDataset } {
  const a = parseEnvArgs(OpenAIClientArithmeticArgsSchema, args, 'openai_client_arithmetic');
  if (a.batch_size > 1000) throw new ConfigurationError('dataset.args.batch_size: at most 1000 problems per batch');
  return { train: new DialogueDataset(renderer, a) };
}
