/**
 * At most `limit` events per key within a sliding window. The page asks
 * nobody to sign in, so whoever reaches it can send decisions: each one the
 * job rejects is still verified, audited and kept in its history. This caps
 * what the page lets anyone add to a job that way.
 */
export class RateLimit {
  private readonly seen = new Map<string, number[]>();

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** How many keys it remembers (those with an event in the current window, as of the last `take`). */
  get keys(): number {
    return this.seen.size;
  }

  /** Counts one event for `key` and says whether it is within the limit (one over it is not counted). */
  take(key: string): boolean {
    const now = this.now();
    const since = now - this.windowMs;
    // Keys whose events have all aged out are dropped: the map holds at most the keys let through in one window.
    for (const [k, times] of this.seen) if ((times[times.length - 1] ?? 0) <= since) this.seen.delete(k);
    const times = (this.seen.get(key) ?? []).filter((t) => t > since);
    if (times.length >= this.limit) {
      this.seen.set(key, times);
      return false;
    }
    times.push(now);
    this.seen.set(key, times);
    return true;
  }
}

/** How many decisions the page forwards, per job and in all, per window. */
export interface DecisionLimits {
  readonly perJob: number;
  readonly overall: number;
  readonly windowMs: number;
}

/** Generous for people (a decision or two per request, a retry after a refusal); tight for a script. */
export const DEFAULT_DECISION_LIMITS: DecisionLimits = { perJob: 30, overall: 600, windowMs: 10 * 60_000 };
