import { z } from 'zod';

/**
 * A job driven by a client instead of the model (`driver: 'client'`, the
 * MCP gateway): each call the client submits is keyed by the client's own
 * key, goes through the same gate, and is answered, or parked for a
 * reviewer and answered later. What became of each call is kept (bounded)
 * and carried across continue-as-new, so a client asking again after a
 * restart of anything gets the same answer.
 */

/** A client's key for one call: its retries carry the same key, and get the same answer. */
export const clientCallKeySchema = z
  .string()
  .min(8, 'callKey must be 8 to 100 characters')
  .max(100, 'callKey must be 8 to 100 characters')
  .regex(/^[A-Za-z0-9._:-]+$/, 'callKey may hold letters, digits, ".", "_", ":" and "-"');

/** Arguments a client may send with one call (a write's content included). */
export const MAX_CLIENT_ARGS_CHARS = 1_100_000;

export const submitCallInputSchema = z.strictObject({
  callKey: clientCallKeySchema,
  toolName: z.string().min(1).max(64),
  args: z.record(z.string(), z.unknown()),
});
export type SubmitCallInput = z.infer<typeof submitCallInputSchema>;

export const clientCallSchema = z.discriminatedUnion('status', [
  /** Waiting for a reviewer: the request that decides it. */
  z.strictObject({
    status: z.literal('parked'),
    callKey: z.string(),
    toolName: z.string(),
    /** sha256 of the call's arguments as the client sent them (canonical JSON): a retry with the same ones attaches. */
    argsDigest: z.string(),
    requestId: z.string(),
    ruleId: z.string(),
    at: z.number(),
  }),
  /** Answered: the tool's output, or why it did not run (`isError`). */
  z.strictObject({ status: z.literal('answered'), callKey: z.string(), toolName: z.string(), text: z.string(), isError: z.boolean(), requestId: z.string().optional(), at: z.number() }),
]);
export type ClientCall = z.infer<typeof clientCallSchema>;

/** Answered calls kept for clients that ask again; parked ones are always kept. */
export const KEPT_ANSWERED_CALLS = 500;
/** Characters of an answer kept once answered (a client reads the rest from its first answer). */
export const KEPT_ANSWER_CHARS = 100_000;

/** The calls with `call` set (a call's newer state replaces its older one), answered ones beyond the bound dropped oldest first. */
export function withClientCall(calls: readonly ClientCall[], call: ClientCall): ClientCall[] {
  const kept: ClientCall = call.status === 'answered' && call.text.length > KEPT_ANSWER_CHARS ? { ...call, text: `${call.text.slice(0, KEPT_ANSWER_CHARS)}… (${call.text.length - KEPT_ANSWER_CHARS} more characters)` } : call;
  const others = calls.filter((c) => c.callKey !== call.callKey);
  const answered = others.filter((c) => c.status === 'answered');
  const drop = new Set(answered.slice(0, Math.max(0, answered.length + (kept.status === 'answered' ? 1 : 0) - KEPT_ANSWERED_CALLS)).map((c) => c.callKey));
  return [...others.filter((c) => !drop.has(c.callKey)), kept];
}

/** A call as its client sees it: what to show and, while it waits, which request a reviewer decides. */
export type ClientCallView =
  | { readonly callKey: string; readonly status: 'parked'; readonly toolName: string; readonly requestId: string; readonly ruleId: string }
  | { readonly callKey: string; readonly status: 'answered'; readonly toolName: string; readonly text: string; readonly isError: boolean; readonly requestId?: string };

export function clientCallView(call: ClientCall): ClientCallView {
  if (call.status === 'parked') return { callKey: call.callKey, status: 'parked', toolName: call.toolName, requestId: call.requestId, ruleId: call.ruleId };
  return { callKey: call.callKey, status: 'answered', toolName: call.toolName, text: call.text, isError: call.isError, ...(call.requestId !== undefined ? { requestId: call.requestId } : {}) };
}
