import { z } from 'zod';

/** One tool call as the model proposed it; `arguments` is the raw JSON text. */
export const toolCallRequestSchema = z.object({
  id: z.string().min(1),
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
