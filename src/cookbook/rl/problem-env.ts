// ProblemEnv and ProblemGroupBuilder (spec §2.13): a single-turn question/answer env whose reward
// is `format_coef·(format − 1) + correct`.

import { modelInputFromInts } from '../model-input.js';
import { getTextContent } from '../renderers/content.js';
import type { Message, Renderer } from '../renderers/types.js';
import {
  BaseEnvGroupBuilder,
  type Action,
  type Env,
  type InitialObservation,
  type StepResult,
} from './types.js';

export interface ProblemEnvOptions {
  convoPrefix?: Message[] | null;
  formatCoef?: number;
  requireStopSequenceForFormat?: boolean;
}

export abstract class ProblemEnv implements Env {
  readonly convoPrefix: Message[];
  readonly formatCoef: number;
  readonly requireStopSequenceForFormat: boolean;

  constructor(
    readonly renderer: Renderer,
    opts: ProblemEnvOptions = {},
  ) {
    this.convoPrefix = opts.convoPrefix ?? [];
    this.formatCoef = opts.formatCoef ?? 0.1;
    this.requireStopSequenceForFormat = opts.requireStopSequenceForFormat ?? true;
  }

  abstract getQuestion(): string;
  abstract checkAnswer(content: string): boolean | Promise<boolean>;
  abstract checkFormat(content: string): boolean;
  abstract getReferenceAnswer(): string;

  get stopCondition(): string[] | number[] {
    return this.renderer.getStopSequences();
  }

  async initialObservation(): Promise<InitialObservation> {
    const convo: Message[] = [...this.convoPrefix, { role: 'user', content: this.getQuestion() }];
    return { ob: this.renderer.buildGenerationPrompt(convo), stopCondition: this.stopCondition };
  }

  async step(action: Action): Promise<StepResult> {
    const parsed = this.renderer.parseResponse(action);
    const content = getTextContent(parsed.message);
    // Strict mode accepts only a stop sequence; lenient mode any clean ending (EOS included).
    const wellFormed = this.requireStopSequenceForFormat ? parsed.termination === 'stop_sequence' : parsed.ok;
    const format = wellFormed && this.checkFormat(content) ? 1.0 : 0.0;
    const correct = (await this.checkAnswer(content)) ? 1.0 : 0.0;
    const reward = this.formatCoef * (format - 1) + correct;
    return {
      reward,
      episodeDone: true,
      nextObservation: modelInputFromInts([]),
      nextStopCondition: this.stopCondition,
      metrics: { format, correct },
    };
  }
}

/** `numEnvs` envs of one problem; group rewards 0; tagged with the dataset name. */
export class ProblemGroupBuilder extends BaseEnvGroupBuilder {
  constructor(
    readonly envThunk: () => Env,
    readonly numEnvs: number,
    readonly datasetName: string = 'problems',
  ) {
    super();
  }

  async makeEnvs(): Promise<Env[]> {
    return Array.from({ length: this.numEnvs }, () => this.envThunk());
  }

  override loggingTags(): string[] {
    return [this.datasetName];
  }
}
