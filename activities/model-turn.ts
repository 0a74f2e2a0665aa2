import { ApplicationFailure } from '@temporalio/activity';
import { APIConnectionError, APIError, type OpenAI } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';
import type { AssistantMessage, ChatMessage } from '../core/chat';
import { FailureTypes } from '../core/failure-types';
import { toolSpecs } from '../core/tools/json-schema';

export interface ModelTurnInput {
  readonly messages: readonly ChatMessage[];
  /** Tools offered to the model this turn. */
  readonly toolNames: readonly string[];
}

export interface ModelTurnResult {
  readonly message: AssistantMessage;
}

export interface ModelDeps {
  readonly openai: OpenAI;
  readonly model: string;
}

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
  return {
    /** One model turn: the conversation so far in, one assistant message out. */
    async modelTurn(input: ModelTurnInput): Promise<ModelTurnResult> {
      const tools = toolSpecs(input.toolNames).map((spec) => ({ type: 'function' as const, function: spec }));
      let raw: unknown;
      try {
        raw = await deps.openai.chat.completions.create({
          model: deps.model,
          messages: input.messages.map(toProvider),
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
      const message = parsed.data.choices[0]!.message;
      return {
        message: {
          role: 'assistant',
          content: message.content ?? null,
          toolCalls: (message.tool_calls ?? []).map((c) => ({
            id: c.id,
            name: c.function.name,
            arguments: c.function.arguments,
          })),
        },
      };
    },
  };
}

export type ModelActivities = ReturnType<typeof createModelActivities>;
