
/**
 * The signature counter each passkey last presented. An authenticator that
 * counts raises it with every assertion; one seen going back (or standing
 * still) is a copy of the credential being used beside the original, and
 * its decisions are refused. Authenticators that do not count (synced
 * passkeys send 0) are not tracked. Shared by every agent worker: a data
 * folder's SQLite file, or the shared database.
 */
export interface PasskeyCounters {
  /** What was last accepted for this credential: its counter and which assertion (a digest) brought it; undefined when none. */
  last(credentialId: string): Promise<{ readonly counter: number; readonly assertion: string } | undefined>;
  /**
   * Accepts this assertion's counter when it is above the last one (or it
   * is the very assertion accepted last, seen again by a retry): one
   * compare-and-set, so of two presenting the same counter at once one
   * wins. False: another assertion got there first.
   */
  advance(credentialId: string, counter: number, assertion: string): Promise<boolean>;
  close(): Promise<void>;
}
