/**
 * A durable, append-only record in the tools worker's data folder for the
 * one call being executed (keyed by its grant's nonce by the gate): a
 * multi-step tool (a bulk move) writes each step before and after it acts,
 * so a retry after a crash resumes or reports exactly what happened.
 */
export interface JournalCapability {
  /** Entries recorded for this call so far, oldest first. */
  read(): Promise<ReadonlyArray<Readonly<Record<string, unknown>>>>;
  /** Appends one entry durably (fsync'ed) before returning. */
  append(entry: Readonly<Record<string, unknown>>): Promise<void>;
}
