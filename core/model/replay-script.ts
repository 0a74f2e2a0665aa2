import { z } from 'zod';

/**
 * A scripted conversation for the local OpenAI-compatible replay server.
 * Turn N answers a request that already holds N assistant messages.
 */
export const replayToolCallSchema = z.strictObject({
  /** Defaults to `call_<turn>_<index>`; set it to rehearse repeated or odd ids. */
  id: z.string().optional(),
  name: z.string().min(1),
  /** An object is sent as JSON; a string is sent verbatim (to rehearse malformed arguments). */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
});

export const replayTurnSchema = z
  .strictObject({
    content: z.string().optional(),
    tool_calls: z.array(replayToolCallSchema).optional(),
  })
  .refine((t) => t.content !== undefined || (t.tool_calls !== undefined && t.tool_calls.length > 0), {
    message: 'a turn needs content or at least one tool call',
  });

export const replayScriptSchema = z.strictObject({
  turns: z.array(replayTurnSchema),
});

export type ReplayScript = z.infer<typeof replayScriptSchema>;
export type ReplayTurn = z.infer<typeof replayTurnSchema>;

/** What the server answers once the script has no turn left. */
export const REPLAY_EXHAUSTED_CONTENT = 'The replay script has no more turns.';

/** One line per problem, each naming where in the script it is. */
export function formatZodIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path
        .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`))
        .join('');
      return `${where === '' ? '(root)' : where}: ${issue.message}`;
    })
    .join('; ');
}
