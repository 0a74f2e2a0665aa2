/** Ends a reviewer's free text as a sentence, so the fixed text after it reads right. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?。！？]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

/** Fixed texts the model receives as synthetic tool results or injected messages. */
export const Texts = {
  /** A client-driven job's call that needs a person while another request of the same agent waits. */
  oneRequestAtATime: (waiting: string) =>
    `Not run: this call needs approval, and another request of this agent waits for a decision (${waiting}). Send the call again once that one is decided.`,
  nudge: 'No tool call was made. Continue with tool calls, or call `complete` with a summary once the goal is reached.',
  stopped: (ruleId: string) => `Not executed: the job was stopped by policy rule ${ruleId}.`,
  redirected: (ruleId: string) =>
    `Not executed: policy rule ${ruleId} asks you to re-plan before this call. Read the instructions that follow, then make new tool calls.`,
  heldForRedirect: 'Not executed: other calls in this batch must be re-planned first; propose this call again if it is still needed.',
  completeNotAccepted:
    'Not accepted: complete was proposed together with calls that were held for approval or re-planning. Call complete again, alone, once you are done.',
  duplicateComplete: 'Ignored: complete was already called in this batch.',
  completeAccepted: 'Accepted: the job is complete.',
  completeRejected: (ruleId: string, instruction: string | undefined) =>
    `Error: completion is not accepted yet (rule ${ruleId})${instruction === undefined ? '.' : `: ${instruction}`}`,
  withdrawn: (by: string, reason: string | null) => `Not executed: ${by} withdrew this request${reason === null ? '.' : `: ${sentence(reason)}`}`,
  deniedByReviewer: (reviewer: string, reason: string | null) =>
    `Not executed: ${reviewer} denied this call${reason === null ? '.' : `: ${sentence(reason)}`} Do not propose it again unchanged.`,
  expired: 'Not executed: the approval request expired before anyone decided.',
  revalidationFailed: (reason: string) => `Not executed: the approved call no longer holds: ${reason}`,
  /** The approved call has nothing left to do: not a failure, and not to be proposed again. */
  notNeeded: (reason: string) => `Not executed, and not needed any more: ${reason}. Nothing was changed; do not propose this call again unless the situation changes.`,
  /** The call's target is on no machine of the tools config, or on two: it cannot run anywhere. */
  noMachine: (reason: string) => `Not executed: ${reason}. Only what one configured machine owns can be acted on; make one call per machine.`,
  editDenied: (message: string) => `Not executed: the reviewer's edited call was denied by policy. ${message}`,
  /** A retry found the call's effect in place: the attempt that ran it died before recording its outcome. */
  reconciledRanBefore: (detail: string) =>
    `Done: this call's effect is in place (${detail}). The attempt that ran it was interrupted before it could report, so its output is not available; it will not run again.`,
  /** A retry found the effect absent and the target as approved: it ran now, once. */
  reconciledRanNow: '(An earlier attempt of this call was interrupted before its effect happened; the target was unchanged, so it ran now, once.)',
  /** A retry could tell neither: said as it is, never "not run". */
  outcomeUnknown: (detail: string) =>
    `Outcome unknown: an earlier attempt of this call was interrupted before it could report, and the target neither shows the call's effect nor is as it was before the call (${detail}). It may have run in part, or not at all; it will not run again. Check the target before relying on it.`,
  executeFailed: (message: string) => `Error: the call could not be run: ${message}`,
  prepareFailed: (message: string) => `Not executed: the target could not be observed for approval: ${message}`,
  revalidateFailed: (message: string) => `Not executed: the approved call could not be checked again: ${message}`,
  editNeedsOwnApproval: (ruleId: string) =>
    `Not executed: the reviewer's edit brings the call under rule ${ruleId}, which needs its own approval. Propose the edited call if it is still needed.`,
  edited: (fields: readonly string[]) => `(The reviewer edited ${fields.join(', ')} before approving.)`,
  /** The injected user message after a redirect: registered texts only, never model-written. */
  instructions: (instructions: readonly string[]) =>
    [
      'Policy instructions (registered rules) apply to your last tool calls, which were not executed:',
      ...instructions.map((text, i) => `${i + 1}. ${text}`),
      'Follow them, then make new tool calls.',
    ].join('\n'),
} as const;
