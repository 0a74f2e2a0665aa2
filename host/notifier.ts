import type { AuditEvent } from '../core/audit/events';
import { sanitizeAuditEvent } from '../core/audit/events';
import { describeError, firstLine } from '../core/temporal/describe-error';
import { maskString } from '../core/redaction/masking';
import { noticeFor, type NoticeContext } from '../core/reviewer/notification';
import { type Notice } from '../core/reviewer/notice';
import { ntfyMessage } from '../core/reviewer/ntfy';
import { endpointRequest, type NotifyEndpoint } from '../core/config/notify-endpoints';
import type { AuditSink } from './stores/audit-log/store';
import type { Delivery, NotificationOutbox } from './stores/outbox/store';

/** Attempts of one endpoint in flight at once: a hanging endpoint holds only its own. */
const PER_ENDPOINT = 4;
/** A lease outlasts an attempt's timeout by this much before another worker may take the row. */
const LEASE_MARGIN_MS = 2_000;
/** The longest wait between retries, however many attempts are configured. */
const MAX_BACKOFF_MS = 10 * 60_000;
/** Rows enqueued by another worker on the same data folder are seen at least this often. */
const POLL_MS = 30_000;
/** Delivered and failed rows are kept this long (a retried audit write finds them and adds nothing). */
const KEEP_MS = 7 * 86_400_000;

export interface NotifierOptions {
  readonly outbox: NotificationOutbox;
  readonly endpoints: readonly NotifyEndpoint[];
  readonly context: NoticeContext;
  readonly attempts: number;
  readonly backoffMs: number;
  readonly timeoutMs: number;
  /** Where a delivery that failed for good is recorded (`notification_failed`). */
  readonly audit: AuditSink;
  /** One line per problem (default: stderr). */
  readonly warn?: (line: string) => void;
  readonly now?: () => number;
}

/** What the audit activity hands written events to. */
export interface AuditNotifier {
  /** Never throws and never waits on an endpoint: it only records what is owed. */
  enqueue(events: readonly AuditEvent[]): Promise<void>;
}

/**
 * Notifications about job events (parked, expired, decided, notify_admin):
 * `enqueue` stores one row per event and endpoint in the outbox, a loop in
 * the worker delivers them with retries and backoff, and a delivery that
 * fails every attempt is audited. Nothing here runs inside a job's
 * activity beyond the outbox insert: an endpoint that is down or hangs
 * never holds a job up.
 */
export class Notifier implements AuditNotifier {
  private readonly warn: (line: string) => void;
  private readonly now: () => number;
  private readonly inFlight = new Map<string, Set<Promise<void>>>();
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private ticking = false;
  private again = false;

  constructor(private readonly options: NotifierOptions) {
    this.warn = options.warn ?? ((line) => process.stderr.write(`${line}\n`));
    this.now = options.now ?? Date.now;
  }

  async enqueue(events: readonly AuditEvent[]): Promise<void> {
    try {
      const notices = events.flatMap((e) => noticeFor(e, this.options.context) ?? []);
      if (notices.length === 0) return;
      await this.options.outbox.enqueue(
        notices,
        this.options.endpoints.map((e) => e.id),
      );
    } catch (err) {
      this.warn(`airlock: cannot queue notifications in ${this.options.outbox.where}: ${firstLine(describeError(err))}; the job goes on without them`);
      return;
    }
    this.wake();
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.options.outbox.prune(KEEP_MS, this.options.endpoints.map((e) => e.id)).then(
      () => this.wake(),
      (err: unknown) => {
        this.warn(`airlock: cannot prune ${this.options.outbox.where}: ${firstLine(describeError(err))}`);
        this.wake();
      },
    );
  }

  /** Stops the loop; attempts in flight are cut short and tried again by the next start. */
  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    this.stopping.abort();
    await Promise.all([...this.inFlight.values()].flatMap((set) => [...set]));
    while (this.ticking) await new Promise((resolve) => setTimeout(resolve, 10));
    await this.options.outbox.close();
  }

  private wake(): void {
    if (!this.started) return;
    // A round under way (it awaits the outbox) would set its own timer after this one: it goes again when done instead.
    if (this.ticking) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), 0);
  }

  private async tick(): Promise<void> {
    if (!this.started) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    try {
      for (const endpoint of this.options.endpoints) {
        const running = this.inFlight.get(endpoint.id) ?? new Set<Promise<void>>();
        this.inFlight.set(endpoint.id, running);
        const leaseMs = this.options.timeoutMs + LEASE_MARGIN_MS;
        for (const delivery of await this.options.outbox.claim(endpoint.id, leaseMs, PER_ENDPOINT - running.size)) {
          const attempt: Promise<void> = this.attempt(endpoint, delivery).finally(() => {
            running.delete(attempt);
            this.wake();
          });
          running.add(attempt);
        }
      }
      await this.schedule();
    } catch (err) {
      this.warn(`airlock: cannot read ${this.options.outbox.where}: ${firstLine(describeError(err))}; trying again in ${POLL_MS / 1000}s`);
      clearTimeout(this.timer);
      this.timer = setTimeout(() => void this.tick(), POLL_MS);
      this.timer.unref();
    } finally {
      this.ticking = false;
    }
    if (this.again) {
      this.again = false;
      this.wake();
    }
  }

  private async schedule(): Promise<void> {
    if (!this.started) return;
    // An endpoint with every slot taken is woken when an attempt ends, not by its due rows (that would spin).
    const open = this.options.endpoints.filter((e) => (this.inFlight.get(e.id)?.size ?? 0) < PER_ENDPOINT);
    const due = await this.options.outbox.nextDueIn(open.map((e) => e.id));
    const wait = due === undefined ? POLL_MS : Math.min(POLL_MS, Math.max(0, due));
    if (!this.started) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), wait);
    // The loop never keeps a process alive on its own: workers do.
    this.timer.unref();
  }

  private async attempt(endpoint: NotifyEndpoint, delivery: Delivery): Promise<void> {
    const error = await this.post(endpoint, delivery.notice);
    const { outbox } = this.options;
    try {
      if (error === undefined) {
        await outbox.delivered(delivery);
      } else if (this.stopping.signal.aborted) {
        await outbox.released(delivery);
      } else if (delivery.attempts < this.options.attempts) {
        const wait = Math.min(this.options.backoffMs * 2 ** (delivery.attempts - 1), MAX_BACKOFF_MS);
        await outbox.retryIn(delivery, wait, error);
      } else {
        await outbox.failed(delivery, error);
        await this.gaveUp(endpoint, delivery, error);
      }
    } catch (err) {
      // The lease runs out and the row is tried again.
      this.warn(`airlock: cannot update ${outbox.where}: ${firstLine(describeError(err))}`);
    }
  }

  /** One POST; the error as one masked line, or undefined when the endpoint answered 2xx. */
  private async post(endpoint: NotifyEndpoint, notice: Notice): Promise<string | undefined> {
    const { url, authorization } = endpointRequest(endpoint);
    const body = endpoint.kind === 'ntfy' ? ntfyMessage(notice, endpoint.topic) : notice;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'airlock',
          ...(authorization !== undefined ? { authorization } : {}),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), this.stopping.signal]),
        redirect: 'error',
      });
      await response.body?.cancel().catch(() => undefined);
      return response.ok ? undefined : `HTTP ${response.status}${response.statusText !== '' ? ` ${response.statusText}` : ''}`;
    } catch (err) {
      return maskString(firstLine(fetchError(err, this.options.timeoutMs)));
    }
  }

  private async gaveUp(endpoint: NotifyEndpoint, delivery: Delivery, error: string): Promise<void> {
    const { notice } = delivery;
    this.warn(`airlock: notification ${notice.event} of job ${notice.jobId} to ${endpoint.shown} failed after ${delivery.attempts} attempt(s): ${error}`);
    const event: AuditEvent = {
      type: 'notification_failed',
      jobId: notice.jobId,
      at: new Date(this.now()).toISOString(),
      policyVersion: undefined,
      data: {
        event: notice.event,
        eventId: notice.eventId,
        requestId: notice.requestId ?? undefined,
        endpoint: endpoint.shown,
        attempts: delivery.attempts,
        error,
      },
    };
    try {
      await this.options.audit.write([sanitizeAuditEvent(event)]);
    } catch (err) {
      this.warn(`airlock: cannot audit the failed notification: ${firstLine(describeError(err))}`);
    }
  }
}

/** fetch's own message is "fetch failed"; the cause says what happened. */
function fetchError(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  const cause = err instanceof Error ? (err.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause !== undefined && typeof cause.code === 'string') return `${cause.code}${typeof cause.message === 'string' ? `: ${cause.message}` : ''}`;
  return describeError(err);
}
