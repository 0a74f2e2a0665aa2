import { z } from 'zod';
import { chatMessageSchema, type ChatMessage } from '../model/chat';
import { judgeContextLine, MAX_JUDGE_CONTEXT_TURNS } from '../judge/judge';

/**
 * A job's conversation as the workflow keeps it: the stored part is one
 * digest (`head`, a chain of segments in the agent side's content store),
 * and only messages added since the last model turn are held inline. So
 * history and continue-as-new carry a constant amount per turn, whatever
 * the conversation's length.
 */
export const conversationStateSchema = z.strictObject({
  /** The stored conversation; null before the first model turn (or while replaying a build before the store). */
  head: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
  /** Messages in the conversation, stored and pending. */
  length: z.number().int(),
  /** Messages since the last model turn, in order; the next turn stores them. */
  pending: z.array(chatMessageSchema),
  /** Short, masked lines of the last few stored messages, for the judge's context. */
  recent: z.array(z.string()),
});
export type ConversationState = z.infer<typeof conversationStateSchema>;

/** The judge's context: the last few messages, stored or pending, as masked lines. */
export function judgeContext(state: ConversationState): string[] {
  return [...state.recent, ...state.pending.flatMap((m) => judgeContextLine(m) ?? [])].slice(-MAX_JUDGE_CONTEXT_TURNS);
}

/**
 * After a model turn: the pending messages and the answer are stored under
 * `head`. A turn recorded by a build before the store returned no head: the
 * answer then stays pending with the rest, as that build kept it.
 */
export function afterModelTurn(state: ConversationState, answer: ChatMessage, head: string | undefined): ConversationState {
  if (head === undefined) return { ...state, length: state.length + 1, pending: [...state.pending, answer] };
  return { head, length: state.length + 1, pending: [], recent: judgeContext({ ...state, pending: [...state.pending, answer] }) };
}

/** A stored piece of a conversation: the messages added by one model turn, after the ones before it. */
export const segmentSchema = z.strictObject({
  v: z.literal(1),
  prev: z.string().nullable(),
  messages: z.array(chatMessageSchema),
});
export type Segment = z.infer<typeof segmentSchema>;
