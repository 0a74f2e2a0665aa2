/**
 * The `type` of every ApplicationFailure airlock raises across Temporal.
 * Clients and workflows match on these, never on message text.
 */
export const FailureTypes = {
  /** A workflow, activity or update input failed its schema. */
  InvalidInput: 'AirlockInvalidInput',
  /** The model endpoint refused the request (4xx other than 429); retrying will not help. */
  ModelRequestRejected: 'AirlockModelRequestRejected',
  /** The model answered with something that is not a chat completion airlock can use. */
  ModelOutputInvalid: 'AirlockModelOutputInvalid',
  /** A decision did not match a pending request, or is not allowed. */
  DecisionRejected: 'AirlockDecisionRejected',
  /** `execute` was called without a valid grant for that exact call. */
  GrantInvalid: 'AirlockGrantInvalid',
  /** The grant was valid but its time ran out before the tools worker took it; a fresh grant may be issued. */
  GrantExpired: 'AirlockGrantExpired',
  /** The grant's nonce was already consumed: the call ran (or was attempted) before. */
  NonceConsumed: 'AirlockNonceConsumed',
  /** The tools worker's nonce store file was removed or replaced under it: restart the worker (a retry then reconciles). */
  NonceStoreUnusable: 'AirlockNonceStoreUnusable',
  /** The shared database could not be reached (down, restarting, refusing logins): retried; nothing was half-done. */
  StoreUnavailable: 'AirlockStoreUnavailable',
  /** Temporal gave up on this `execute` attempt before its effect started: nothing ran, the next attempt reconciles. */
  AttemptAbandoned: 'AirlockAttemptAbandoned',
  /** A policy snapshot or carried state without a valid seal of this agent worker: a client tried to bring its own. */
  StateRejected: 'AirlockStateRejected',
  /** A job's stored conversation is not in this agent worker's content store. */
  ConversationMissing: 'AirlockConversationMissing',
  /** The tools worker is not configured for this tool (a capability it needs is absent from its tools config). */
  ToolUnavailable: 'AirlockToolUnavailable',
  /** A tools call reached the tools worker of another machine (AIRLOCK_MACHINE) than the one that owns its target: it is not run. */
  WrongMachine: 'AirlockWrongMachine',
  /** The policy snapshot or rules file could not be loaded. */
  PolicyUnavailable: 'AirlockPolicyUnavailable',
  /** A client's call reached a run that was moving to a new one before it took the call: send it again with the same key. */
  CallNotTaken: 'AirlockCallNotTaken',
} as const;

export type FailureType = (typeof FailureTypes)[keyof typeof FailureTypes];
