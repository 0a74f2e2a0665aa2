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
export const jobStatuses = ['running', 'awaiting_approval', 'completed', 'aborted', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof jobStatuses)[number];

/**
 * A job's status as `show` and `pending` report it: what the job itself
 * said, or what Temporal says of a job that could not say it (terminated
 * and timed-out jobs run no code, so their `AirlockStatus` stays as it was).
 */
export type ShownStatus = JobStatus | 'terminated' | 'timed_out';

/** Typed keys for upserting from workflow code. */
export const statusKey = defineSearchAttributeKey(AirlockSearchAttributes.status.name, SearchAttributeType.KEYWORD);
export const pendingToolsKey = defineSearchAttributeKey(
  AirlockSearchAttributes.pendingTools.name,
  SearchAttributeType.KEYWORD_LIST,
);
