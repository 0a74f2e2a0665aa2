import { display } from '../../core/redaction/display-text';
import type { ActivityInProgress, AirlockClient } from '../airlock-client';

/** An activity under way, as people ask "what is it doing?": waiting for a worker, retrying, or running. */
export function inProgressLine(a: ActivityInProgress): string {
  const since = a.since !== null ? ` since ${a.since}` : '';
  const failure = a.lastFailure !== null ? `; last failure: ${a.lastFailure}` : '';
  // "a tools worker on nas": with several machines, the one whose worker is missing.
  const worker = a.machine !== null ? `${a.queue} worker on ${a.machine}` : `${a.queue} worker`;
  if (a.state === 'waiting' && a.attempt <= 1) return display`  waiting for a ${worker} to take ${a.activity}${since}`;
  if (a.state === 'waiting') return display`  ${a.activity}: attempt ${String(a.attempt)} waits for a ${worker} (retrying)${failure}`;
  const attempt = a.attempt > 1 ? `, attempt ${a.attempt}` : '';
  return display`  ${a.activity} running on a ${worker}${since}${attempt}${failure}`;
}

/** How long an activity may wait for a worker before a watcher says so: longer than a busy worker takes to pick it up. */
const NOTICE_AFTER_MS = 5_000;

/**
 * While a job is followed, says when one of its activities waits for a
 * worker nobody runs (a tools worker on a machine that is off, say): a
 * history shows nothing until the activity ends, so it asks Temporal
 * every few seconds, and says each wait once. Ends when `signal` aborts.
 */
export async function watchWaits(client: Pick<AirlockClient, 'status'>, jobId: string, say: (line: string) => void, signal: AbortSignal, now = Date.now): Promise<void> {
  const said = new Set<string>();
  while (!signal.aborted) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, NOTICE_AFTER_MS);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
    if (signal.aborted) return;
    const info = await client.status(jobId).catch(() => undefined);
    for (const a of info?.inProgress ?? []) {
      if (a.state !== 'waiting' || a.since === null || now() - Date.parse(a.since) < NOTICE_AFTER_MS) continue;
      const key = `${a.activity}@${a.since}@${a.attempt}`;
      if (said.has(key)) continue;
      said.add(key);
      say(inProgressLine(a));
    }
  }
}
