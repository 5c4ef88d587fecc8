// The task queue that workers poll and runs start on unless told otherwise. Kept apart from
// worker.ts so that the CLI's light commands (status, watch, dev stop) name it without loading the
// worker, its bundler and the activities.
export const DEFAULT_TASK_QUEUE = 'cookbook';
