import { Context } from '@temporalio/activity';

/** How often a working tools activity heartbeats; the SDK throttles what reaches the server to its timeout's 80 %. */
const HEARTBEAT_EVERY_MS = 2_000;

/** The running activity's context; undefined when the function is called directly (tests, scripts). */
export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** Which attempt of its activity this is: 1 outside Temporal. */
export function currentAttempt(): number {
  return activityContext()?.info.attempt ?? 1;
}

/**
 * Heartbeats while `work` runs, so a tools worker that dies is noticed
 * after the activity's heartbeat timeout (seconds), not its start-to-close
 * timeout (minutes). `details` is shown in the Web UI and handed to the
 * next attempt; it is read again at every beat.
 */
export async function withHeartbeat<T>(details: () => unknown, work: () => Promise<T>): Promise<T> {
  const context = activityContext();
  if (context === undefined) return work();
  const beat = () => {
    try {
      context.heartbeat(details());
    } catch {
      // A beat that cannot be sent (a store closing at shutdown) is a missed beat, never a crashed worker.
    }
  };
  beat();
  const timer = setInterval(beat, HEARTBEAT_EVERY_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** Temporal gave up on this attempt (its heartbeat timed out, or the job was cancelled): start no side effect now. */
export function attemptAbandoned(): boolean {
  return activityContext()?.cancellationSignal.aborted === true;
}
