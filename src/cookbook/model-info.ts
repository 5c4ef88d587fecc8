// The served models (reference tinker_cookbook/model_info.py + hyperparam_utils.py, 0.6.1): each
// model's family, size, recommended renderers (first = default), hidden size (for the LR formula)
// and LoRA parameters per rank by component. The parity suite (test/parity) checks every row, the
// LR hint and the LoRA counts against the installed reference.

import { ConfigurationError } from './errors.js';

export type Modality = 'vl' | 'audio';

export interface ModelAttributes {
  /** `org/name`, as the service lists it. */
  name: string;
  organization: string;
  versionStr: string;
  sizeStr: string;
  isChat: boolean;
  recommendedRenderers: readonly string[];
  isVl: boolean;
  isAudioIn: boolean;
  hiddenSize: number;
  /** LoRA parameters at rank 1 when MLP, attention and the unembedding are adapted. */
  loraPerRank: { mlp: number; attn: number; unembed: number };
}

function row(
  name: string,
  versionStr: string,
  sizeStr: string,
  isChat: boolean,
  recommendedRenderers: string[],
  hiddenSize: number,
  [mlp, attn, unembed]: [number, number, number],
  modalities: Modality[],
): ModelAttributes {
  return {
    name,
    organization: name.slice(0, name.indexOf('/')),
    versionStr,
    sizeStr,
    isChat,
    recommendedRenderers,
    isVl: modalities.includes('vl'),
    isAudioIn: modalities.includes('audio'),
    hiddenSize,
    loraPerRank: { mlp, attn, unembed },
  };
}

export const SERVED_MODELS: readonly ModelAttributes[] = [
  row('meta-llama/Llama-3.1-8B-Instruct', '3.1', '8B', true, ['llama3'], 4096, [1_769_472, 851_968, 132_352], []),
  row('meta-llama/Llama-3.2-1B', '3.2', '1B', false, ['role_colon'], 2048, [491_520, 212_992, 130_304], []),
  row('meta-llama/Llama-3.2-3B', '3.2', '3B', false, ['role_colon'], 3072, [946_176, 573_440, 131_328], []),
  row('meta-llama/Llama-3.1-8B', '3.1', '8B', false, ['role_colon'], 4096, [1_769_472, 851_968, 132_352], []),
  row('meta-llama/Llama-3.1-70B', '3.1', '70B', false, ['role_colon'], 8192, [8_847_360, 4_096_000, 136_448], []),
  row('meta-llama/Llama-3.3-70B-Instruct', '3.3', '70B', true, ['llama3'], 8192, [8_847_360, 4_096_000, 136_448], []),
  row('Qwen/Qwen3-VL-30B-A3B-Instruct', '3', '30B-A3B', true, ['qwen3_vl_instruct'], 2048, [14_450_688, 835_584, 153_984], ['vl']),
  row('Qwen/Qwen3-VL-235B-A22B-Instruct', '3', '235B-A22B', true, ['qwen3_vl_instruct'], 4096, [56_598_528, 3_176_448, 156_032], ['vl']),
  row('Qwen/Qwen3-8B-Base', '3', '8B', false, ['role_colon'], 4096, [1_769_472, 958_464, 156_032], []),
  row('Qwen/Qwen3-30B-A3B-Base', '3', '30B-A3B', false, ['role_colon'], 2048, [14_450_688, 835_584, 153_984], []),
  row('Qwen/Qwen3-8B', '3', '8B', true, ['qwen3', 'qwen3_disable_thinking'], 4096, [1_769_472, 958_464, 156_032], []),
  row('Qwen/Qwen3-32B', '3', '32B', true, ['qwen3', 'qwen3_disable_thinking'], 5120, [5_898_240, 2_490_368, 157_056], []),
  row('Qwen/Qwen3-30B-A3B', '3', '30B-A3B', true, ['qwen3', 'qwen3_disable_thinking'], 2048, [14_450_688, 835_584, 153_984], []),
  row('Qwen/Qwen3-4B-Instruct-2507', '3', '4B', true, ['qwen3_instruct'], 2560, [1_327_104, 737_280, 154_496], []),
  row('Qwen/Qwen3-30B-A3B-Instruct-2507', '3', '30B-A3B', true, ['qwen3_instruct'], 2048, [14_450_688, 835_584, 153_984], []),
  row('Qwen/Qwen3-235B-A22B-Instruct-2507', '3', '235B-A22B', true, ['qwen3_instruct'], 4096, [56_598_528, 3_176_448, 156_032], []),
  row('Qwen/Qwen3.5-4B', '3.5', '4B', true, ['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], 2560, [1_130_496, 897_024, 250_880], ['vl']),
  row('Qwen/Qwen3.5-9B', '3.5', '9B', true, ['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], 4096, [1_572_864, 1_130_496, 252_416], ['vl']),
  row('Qwen/Qwen3.5-9B-Base', '3.5', '9B', false, ['role_colon'], 4096, [1_572_864, 1_130_496, 252_416], ['vl']),
  row('Qwen/Qwen3.5-27B', '3.5', '27B', true, ['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], 5120, [4_325_376, 2_965_504, 253_440], ['vl']),
  row('Qwen/Qwen3.5-35B-A3B', '3.5', '35B-A3B', true, ['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], 2048, [16_281_600, 1_013_760, 250_368], ['vl']),
  row('Qwen/Qwen3.5-35B-A3B-Base', '3.5', '35B-A3B', false, ['role_colon'], 2048, [16_281_600, 1_013_760, 250_368], ['vl']),
  row('Qwen/Qwen3.5-397B-A17B', '3.5', '397B-A17B', true, ['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], 4096, [96_030_720, 2_841_600, 252_416], ['vl']),
  row('Qwen/Qwen3.6-27B', '3.6', '27B', true, ['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], 5120, [4_325_376, 2_965_504, 253_440], ['vl']),
  row('Qwen/Qwen3.6-35B-A3B', '3.6', '35B-A3B', true, ['qwen3_5', 'qwen3_5_disable_thinking', 'qwen3_5_preserve_thinking'], 2048, [16_281_600, 1_013_760, 250_368], ['vl']),
  row('Qwen/Qwen3.8-27B', '3.8', '27B', true, ['qwen3_8_xhigh_reasoning', 'qwen3_8_disable_thinking', 'qwen3_8_medium_reasoning', 'qwen3_8_low_reasoning'], 5120, [4_325_376, 2_965_504, 253_440], ['vl']),
  row('deepseek-ai/DeepSeek-V3.1', '3', '671B-A37B', true, ['deepseekv3', 'deepseekv3_thinking'], 7168, [94_307_328, 2_440_000, 136_448], []),
  row('deepseek-ai/DeepSeek-V3.1-Base', '3', '671B-A37B', false, ['role_colon'], 7168, [94_307_328, 2_440_000, 136_448], []),
  row('deepseek-ai/DeepSeek-V4.1-Flash', '4.1', '552B-A16B', true, ['deepseekv4_1', 'deepseekv4_1_low_reasoning', 'deepseekv4_1_max_reasoning', 'deepseekv4_1_disable_thinking', 'deepseekv4_1_preserve_thinking'], 5120, [107_673_600, 1_013_760, 134_400], []),
  row('deepseek-ai/DeepSeek-V4.1-Flash-1017', '4.1', '552B-A16B', true, ['deepseekv4_1', 'deepseekv4_1_low_reasoning', 'deepseekv4_1_max_reasoning', 'deepseekv4_1_disable_thinking', 'deepseekv4_1_preserve_thinking'], 5120, [107_673_600, 1_013_760, 134_400], []),
  row('openai/gpt-oss-20b', '1', '21B-A3.6B', true, ['gpt_oss_no_sysprompt', 'gpt_oss_medium_reasoning'], 2880, [6_842_880, 497_664, 203_968], []),
  row('openai/gpt-oss-120b', '1', '117B-A5.1B', true, ['gpt_oss_no_sysprompt', 'gpt_oss_medium_reasoning'], 2880, [40_124_160, 746_496, 203_968], []),
  row('moonshotai/Kimi-K2-Thinking', 'K2', '1T-A32B', true, ['kimi_k2'], 7168, [144_583_680, 1_940_288, 171_008], []),
  row('moonshotai/Kimi-K2.5', 'K2.5', '1T-A32B', true, ['kimi_k25', 'kimi_k25_disable_thinking'], 7168, [144_583_680, 1_940_288, 171_008], ['vl']),
  row('moonshotai/Kimi-K2.6', 'K2.6', '1T-A32B', true, ['kimi_k26', 'kimi_k26_disable_thinking', 'kimi_k26_preserve_thinking'], 7168, [144_583_680, 1_940_288, 171_008], ['vl']),
  row('moonshotai/Kimi-K3.1-Pro', 'K3.1', '2.8T-A104B', true, ['kimi_k31_pro_max_reasoning', 'kimi_k31_pro_high_reasoning', 'kimi_k31_pro_low_reasoning', 'kimi_k31_pro_disable_thinking', 'kimi_k31_pro_no_reasoning_effort'], 7168, [766_457_856, 8_040_960, 171_008], ['vl']),
  row('zai-org/GLM-5.3', '5.3', '744B-A40B', true, ['glm5_3_max_reasoning', 'glm5_3_low_reasoning', 'glm5_3_high_reasoning'], 6144, [121_356_288, 2_920_320, 161_024], []),
  row('zai-org/GLM-5.3-Flash', '5.3', '320B-A18B', true, ['glm5_3_max_reasoning', 'glm5_3_low_reasoning', 'glm5_3_high_reasoning'], 4096, [75_755_520, 2_009_088, 158_976], []),
  row('nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16', '3', '30B-A3B', true, ['nemotron3', 'nemotron3_disable_thinking', 'nemotron3_preserve_thinking'], 2688, [11_346_176, 584_832, 133_760], []),
  row('nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16', '3', '120B-A12B', true, ['nemotron3', 'nemotron3_disable_thinking', 'nemotron3_preserve_thinking', 'nemotron3_low_thinking'], 4096, [111_349_760, 1_675_264, 135_168], []),
  row('nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16', '3', '550B-A55B', true, ['nemotron3_ultra', 'nemotron3_ultra_disable_thinking', 'nemotron3_ultra_medium_thinking', 'nemotron3_ultra_preserve_thinking'], 8192, [254_529_536, 4_134_912, 139_264], []),
  row('nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16', '3.5', '30B-A3B', true, ['nemotron3_ultra', 'nemotron3_ultra_disable_thinking', 'nemotron3_ultra_preserve_thinking'], 2688, [11_346_176, 584_832, 133_760], []),
  row('nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16', '3.5', '120B-A12B', true, ['nemotron3_ultra', 'nemotron3_ultra_disable_thinking', 'nemotron3_ultra_medium_thinking', 'nemotron3_ultra_preserve_thinking'], 4096, [111_349_760, 1_675_264, 135_168], ['vl']),
  row('thinkingmachines/Inkling', '1', '975B-A41B', true, ['tml_v0'], 6144, [154_705_920, 3_424_256, 207_168], ['vl', 'audio']),
  row('thinkingmachines/Inkling-Small', '1', '276B-A12B', true, ['tml_v0'], 4096, [64_503_808, 1_311_744, 205_120], ['vl', 'audio']),
  row('thinkingmachines/Inkling-2-Small', '2', '594B-A17B', true, ['tml_v0'], 4608, [128_065_536, 2_347_008, 205_632], ['vl']),
];

const BY_NAME = new Map(SERVED_MODELS.map((m) => [m.name, m]));

// The local engine's seeded tiny models use real tokenizers and stand in for these served models.
const LOCAL_MODELS: Record<string, string> = {
  'tiny-qwen3': 'Qwen/Qwen3-8B',
  // Qwen3-VL's architecture and Qwen3's vocabulary (Qwen3-VL tokenizes as Qwen3 does).
  'tiny-qwen3-vl': 'Qwen/Qwen3-VL-30B-A3B-Instruct',
  'tiny-llama3': 'meta-llama/Llama-3.1-8B-Instruct',
};

/** Tinker's variant suffix (`:peft:262144`) is not part of the model's identity. */
export const baseModelName = (modelName: string): string => modelName.split(':')[0];

/** The served model whose renderers, tokenizer and LR hint a local engine's built-in model borrows, if it is one. */
export const standsInFor = (modelName: string): string | undefined => LOCAL_MODELS[baseModelName(modelName)];

/**
 * Attributes of a served model (or of the served model a local tiny model stands in for).
 * Unknown `Inkling*` ids share Inkling's renderer, as in the reference.
 */
export function getModelAttributes(modelName: string): ModelAttributes {
  const name = baseModelName(modelName);
  const local = LOCAL_MODELS[name];
  if (local) return { ...BY_NAME.get(local)!, name };
  if (!name.includes('/')) {
    throw new ConfigurationError(
      `model_name must look like "org/model" (or be ${Object.keys(LOCAL_MODELS).join(' / ')}): ${modelName}`,
    );
  }
  const known = BY_NAME.get(name);
  if (known) return known;
  if (name.startsWith('thinkingmachines/Inkling')) {
    const version = name.slice(name.indexOf('/') + 1);
    return {
      ...BY_NAME.get('thinkingmachines/Inkling')!,
      name,
      versionStr: version,
      sizeStr: version,
    };
  }
  const org = name.slice(0, name.indexOf('/'));
  const sameOrg = SERVED_MODELS.filter((m) => m.organization === org).map((m) => m.name);
  throw new ConfigurationError(
    sameOrg.length
      ? `Unknown model ${modelName}; served models of ${org}: ${sameOrg.join(', ')}`
      : `Unknown model ${modelName} (organization "${org}" is not served; see \`cookbook models\`)`,
  );
}

// LR exponents the reference has calibrated; other families raise "not yet calibrated".
const LR_EXPONENT: Array<[RegExp, number]> = [
  [/llama/i, 0.781],
  [/qwen/i, 0.0775],
];

/**
 * The reference's `get_lr`: 5e-5 (×10 for LoRA) scaled by (2000 / hidden_size)^exponent, with an
 * exponent calibrated per family (Llama, Qwen). Other served models have none: they throw,
 * asking for an explicit learning rate, as the reference does.
 */
export function getLr(modelName: string, isLora = true): number {
  const attrs = getModelAttributes(modelName);
  const name = attrs.name;
  const exponent = LR_EXPONENT.find(([re]) => re.test(LOCAL_MODELS[name] ?? name))?.[1];
  if (exponent === undefined) {
    throw new ConfigurationError(
      `Learning rate formula for ${name} is not yet calibrated. Please specify a learning rate manually.`,
    );
  }
  const base = isLora ? 5e-5 * 10 : 5e-5;
  return base * (2000 / attrs.hiddenSize) ** exponent;
}

export interface LoraTargets {
  trainMlp?: boolean;
  trainAttn?: boolean;
  trainUnembed?: boolean;
}

/** Trainable LoRA parameters (the reference's `get_lora_param_count`, MoE experts sharing the outer factor). */
export function getLoraParamCount(modelName: string, loraRank = 32, targets: LoraTargets = {}): number {
  const { trainMlp = true, trainAttn = true, trainUnembed = true } = targets;
  if (!(trainMlp || trainAttn || trainUnembed)) {
    throw new ConfigurationError('At least one of train_mlp, train_attn or train_unembed must be true');
  }
  // Keyed by the served name only: a model the table merely infers (an unknown Inkling id) has no count.
  const known = BY_NAME.get(baseModelName(modelName));
  if (!known) {
    throw new ConfigurationError(`No LoRA parameter count known for ${modelName} (served models: \`cookbook models\`)`);
  }
  const { loraPerRank } = known;
  const perRank =
    (trainMlp ? loraPerRank.mlp : 0) + (trainAttn ? loraPerRank.attn : 0) + (trainUnembed ? loraPerRank.unembed : 0);
  return perRank * loraRank;
}
