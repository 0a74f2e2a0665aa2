import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
/**
 * airlock's custom search attributes. Plain data so both the workflow side
 * (typed keys) and the operator side (registration) share one definition.
 */
export const AirlockSearchAttributes = {
  status: { name: 'AirlockStatus', type: 'Keyword' },
  pendingTools: { name: 'AirlockPendingTools', type: 'KeywordList' },
} as const;

export type SearchAttributeKind = 'Keyword' | 'KeywordList' | 'Text' | 'Int' | 'Double' | 'Bool' | 'Datetime';

export const airlockSearchAttributeList: ReadonlyArray<{ name: string; type: SearchAttributeKind }> =
  Object.values(AirlockSearchAttributes);

/** Values of `AirlockStatus`, as seen in the Web UI and by `airlock pending`. */
export const jobStatuses = ['running', 'awaiting_approval', 'completed', 'aborted', 'failed'] as const;
export type JobStatus = (typeof jobStatuses)[number];

/** Typed keys for upserting from workflow code. */
export const statusKey = defineSearchAttributeKey(AirlockSearchAttributes.status.name, SearchAttributeType.KEYWORD);
export const pendingToolsKey = defineSearchAttributeKey(
  AirlockSearchAttributes.pendingTools.name,
  SearchAttributeType.KEYWORD_LIST,
);
