// Batch arithmetic of the composite prompt dataset, as pure functions over counts: the workflow
// (which may not read files) uses them to know how many groups each step has.

/** Batches of one prompt dataset: ceil(n / groups per batch). */
export const promptDatasetLength = (prompts: number, groupsPerBatch: number) => Math.ceil(prompts / groupsPerBatch);

/** The composite's length: the shortest dataset's. */
export function compositeLength(promptCounts: readonly number[], groupsPerBatch: readonly number[]): number {
  return Math.min(...promptCounts.map((n, d) => promptDatasetLength(n, groupsPerBatch[d])));
}

/** The dataset index of each group of batch `step` (each dataset's batch concatenated in order). */
export function compositeBatchDatasets(promptCounts: readonly number[], groupsPerBatch: readonly number[], step: number): number[] {
  return promptCounts.flatMap((n, d) => {
    const start = step * groupsPerBatch[d];
    return Array.from({ length: Math.max(0, Math.min(groupsPerBatch[d], n - start)) }, () => d);
  });
}
