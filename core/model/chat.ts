/**
 * core/model/ — What airlock exchanges with the model: chat messages and
 * tool call requests as the model sends them, the budget that fits a
 * conversation into a model's context, and scripted conversations for the
 * local replay server.
 *
 * May import: nothing else in core/.
 */

import { z } from 'zod';

/** One tool call as the model proposed it; `arguments` is the raw JSON text. */
export const toolCallRequestSchema = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.string(),
});
export type ToolCallRequest = z.infer<typeof toolCallRequestSchema>;

/** The conversation as the workflow keeps it (provider-neutral, JSON-safe). */
export const chatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({
    role: z.literal('assistant'),
    content: z.string().nullable(),
    toolCalls: z.array(toolCallRequestSchema),
  }),
  z.object({ role: z.literal('tool'), toolCallId: z.string(), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof chatMessageSchema>;
export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

/**
 * Tool call ids as the rest of the job relies on them: present and unique
 * within the message. A repeated or empty id gets a suffix, in the stored
 * assistant message and in its results alike.
 */
export function withUniqueCallIds(calls: readonly ToolCallRequest[]): ToolCallRequest[] {
  const seen = new Set<string>();
  return calls.map((call, index) => {
    let id = call.id.trim() === '' ? `call_${index}` : call.id;
    while (seen.has(id)) id = `${id}_${index}`;
    seen.add(id);
    return id === call.id ? call : { ...call, id };
  });
}
