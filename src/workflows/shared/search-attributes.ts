// Typed search attributes that make runs filterable in the Temporal UI list. The dev server
// registers them at start (src/cli/services.ts, startTemporalServer); keep the two lists in step.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const KindKey = defineSearchAttributeKey('CookbookKind', SearchAttributeType.KEYWORD);
export const ModelKey = defineSearchAttributeKey('CookbookModel', SearchAttributeType.KEYWORD);
export const StepKey = defineSearchAttributeKey('CookbookStep', SearchAttributeType.INT);
export const StatusKey = defineSearchAttributeKey('CookbookStatus', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [KindKey, ModelKey, StepKey, StatusKey];
