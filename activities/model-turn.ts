import { ApplicationFailure } from '@temporalio/activity';
import { APIConnectionError, APIError, type OpenAI } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { withUniqueCallIds, type AssistantMessage, type ChatMessage } from '../core/model/chat';
import { FailureTypes } from '../core/temporal/failure-types';
import { fitToBudget } from '../core/model/context-budget';
import { toolSpecs } from '../core/tools/json-schema';
import type { ContentStore } from '../host/stores/contents/store';
import { ConversationMissingError, ConversationReader } from '../host/stores/contents/conversations';
import type { AuditEvent } from '../core/audit/events';
import { writeAudit, type AuditDeps, type RecordAuditResult } from './audit';
import { activityContext } from './heartbeat';
import type { TurnPolicy, TurnPolicyInput, TurnPolicyResult } from './turn-policy';

export interface ModelTurnInput {
  /** The conversation stored by earlier turns; absent or null before the first. */
  readonly head?: string | null;
  /** Messages after the stored part (with no head: the whole conversation). */
  readonly messages: readonly ChatMessage[];
  /** Tools offered to the model this turn. */
  readonly toolNames: readonly string[];
  /** The job's policy input: the answer's calls come back decided (see `turn-policy.ts`). */
  readonly gate?: TurnPolicyInput;
  /** The job's buffered audit events, written once the model has answered. */
  readonly audit?: readonly AuditEvent[];
}

export interface ModelTurnResult {
  readonly message: AssistantMessage;
  /** The conversation stored with this turn's messages and the answer. */
  readonly head: string;
  /** The planner's answer for the calls, when the input asked for it. */
  readonly gate?: TurnPolicyResult;
  /** How writing the carried audit events went; only when the input carried some. */
  readonly audit?: RecordAuditResult;
}

export interface ModelDeps {
  readonly openai: OpenAI;
  readonly model: string;
  /** Where conversations live; history carries only their digests. */
  readonly contents: ContentStore;
  /** Characters of conversation the model is sent at most; older tool output is left out first. */
  readonly contextChars: number;
  /** Decides a turn's calls with the answer; absent: the workflow asks `evaluatePolicy`. */
  readonly gate?: TurnPolicy;
  /** Where carried audit events go; absent: they are reported unwritten and the job sends them again. */
  readonly auditDeps?: AuditDeps;
}

/** An answer this large cannot travel through Temporal (2 MB per payload): the job fails clearly instead. */
const MAX_ANSWER_CHARS = 1_500_000;

// What airlock needs from a chat completion; anything else the provider adds is ignored.
const completionSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.object({
                id: z.string(),
                type: z.literal('function'),
                function: z.object({ name: z.string(), arguments: z.string() }),
              }),
            )
            .nullish(),
        }),
      }),
    )
    .min(1),
});

function toProvider(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls.length > 0
          ? {
              tool_calls: message.toolCalls.map((c) => ({
                id: c.id,
                type: 'function' as const,
                function: { name: c.name, arguments: c.arguments },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

export function createModelActivities(deps: ModelDeps) {
  const conversations = new ConversationReader(deps.contents);
  // A conversation that is not in the store will not appear by retrying.
  const read = async (head: string | null) => {
    try {
      return await conversations.read(head);
    } catch (err) {
      if (!(err instanceof ConversationMissingError)) throw err;
      throw ApplicationFailure.create({ message: err.message, type: FailureTypes.ConversationMissing, nonRetryable: true, cause: err });
    }
  };
  return {
    /**
     * One model turn: the stored conversation and what came after it in,
     * one assistant message out; both are stored, the new head returned.
     */
    async modelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
      const head = input.head ?? null;
      const conversation = [...(await read(head)), ...input.messages];
      const tools = toolSpecs(input.toolNames).map((spec) => ({ type: 'function' as const, function: spec }));
      let raw: unknown;
      try {
        raw = await deps.openai.chat.completions.create({
          model: deps.model,
          messages: fitToBudget(conversation, deps.contextChars).map(toProvider),
          ...(tools.length > 0 ? { tools, tool_choice: 'auto' as const } : {}),
        });
      } catch (err) {
        if (err instanceof APIError && !(err instanceof APIConnectionError)) {
          const status: number = typeof err.status === 'number' ? err.status : 0;
          // 408, 409 and 429 are worth retrying; other client errors are not.
          if (status >= 400 && status < 500 && ![408, 409, 429].includes(status)) {
            throw ApplicationFailure.create({
              message: `model endpoint refused the request (HTTP ${status}): ${err.message}`,
              type: FailureTypes.ModelRequestRejected,
              nonRetryable: true,
              cause: err,
            });
          }
        }
        throw err;
      }
      const parsed = completionSchema.safeParse(raw);
      if (!parsed.success) {
        throw ApplicationFailure.create({
          message: `model returned an unusable completion: ${parsed.error.issues[0]?.message ?? 'invalid shape'}`,
          type: FailureTypes.ModelOutputInvalid,
        });
      }
      const [choice] = parsed.data.choices;
      const answer: AssistantMessage = {
        role: 'assistant',
        content: choice?.message.content ?? null,
        // Unique ids before it is stored: the results that follow answer these ids.
        toolCalls: withUniqueCallIds((choice?.message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }))),
      };
      const chars = (answer.content?.length ?? 0) + answer.toolCalls.reduce((n, c) => n + c.arguments.length, 0);
      if (chars > MAX_ANSWER_CHARS) {
        throw ApplicationFailure.create({
          message: `the model answered with ${chars} characters in one message, more than a job can carry (${MAX_ANSWER_CHARS}); ask for smaller steps`,
          type: FailureTypes.ModelOutputInvalid,
          nonRetryable: true,
        });
      }
      const jobId = activityContext()?.info.workflowExecution?.workflowId;
      const stored = await conversations.store({ v: 1, prev: head, messages: [...input.messages, answer] }, jobId);
      const gate = input.gate === undefined || deps.gate === undefined ? undefined : await deps.gate(input.gate, answer);
      // Written after the answer, not before: a turn that fails leaves them with the job, which sends them again.
      const audit = input.audit === undefined ? undefined : await carriedAudit(deps, input.audit);
      return { message: answer, head: stored, ...(gate !== undefined ? { gate } : {}), ...(audit !== undefined ? { audit } : {}) };
    },
  };
}

/**
 * Every attempt writes: an attempt that failed before this point wrote
 * nothing, and one that died after it leaves twins under the same event
 * ids, which the database keeps once and the JSONL reader shows once.
 */
async function carriedAudit(deps: ModelDeps, events: readonly AuditEvent[]): Promise<RecordAuditResult> {
  if (deps.auditDeps === undefined) return { written: 0, error: 'this worker writes no audit from model turns' };
  return writeAudit(deps.auditDeps, events, { everyAttempt: true });
}

export type ModelActivities = ReturnType<typeof createModelActivities>;
