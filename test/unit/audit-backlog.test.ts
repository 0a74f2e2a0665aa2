import type { AuditEvent } from '../../core/audit/events';
import { AuditBacklog, auditBacklogSchema, MAX_UNWRITTEN_CHARS, MAX_UNWRITTEN_EVENTS } from '../../core/audit/backlog';

const event = (n: number, error = `event ${n}`): AuditEvent => ({
  type: 'runtime_error',
  jobId: 'job-1',
  at: new Date(n * 1000).toISOString(),
  policyVersion: 'v',
  data: { code: 'model_error', error },
});

test('failed events are kept in order, retried with backoff, and counted', () => {
  const backlog = new AuditBacklog();
  expect(backlog.health()).toBeUndefined();
  expect(backlog.retryIn(0)).toBeUndefined();
  backlog.failed([event(1), event(2)], 'ENOSPC', 0);
  expect(backlog.health()).toEqual({ unwritten: 2, dropped: 0, failures: 1, lastError: 'ENOSPC' });
  expect(backlog.due(29_999)).toBe(false);
  expect(backlog.due(30_000)).toBe(true);
  const retry = backlog.take();
  expect(retry.map((e) => e.at)).toEqual([event(1).at, event(2).at]);
  backlog.failed([...retry, event(3)], 'EROFS', 30_000);
  // The wait doubles after each failure in a row.
  expect(backlog.retryIn(30_000)).toBe(60_000);
  expect(backlog.health()).toEqual({ unwritten: 3, dropped: 0, failures: 2, lastError: 'EROFS' });
  backlog.take();
  backlog.succeeded();
  expect(backlog.health()).toEqual({ unwritten: 0, dropped: 0, failures: 2, lastError: 'EROFS' });
  backlog.failed([event(4)], 'ENOSPC', 100_000);
  expect(backlog.retryIn(100_000)).toBe(30_000);
});

test('the wait between retries never exceeds an hour', () => {
  const backlog = new AuditBacklog();
  for (let i = 0; i < 40; i++) backlog.failed(backlog.take(), 'ENOSPC', 0);
  backlog.failed([event(1)], 'ENOSPC', 0);
  expect(backlog.retryIn(0)).toBe(3_600_000);
});

test('beyond the bounds the oldest events are dropped and counted', () => {
  const backlog = new AuditBacklog();
  backlog.failed(
    Array.from({ length: MAX_UNWRITTEN_EVENTS + 5 }, (_, i) => event(i)),
    'ENOSPC',
    0,
  );
  expect(backlog.health()).toMatchObject({ unwritten: MAX_UNWRITTEN_EVENTS, dropped: 5 });
  expect(backlog.take()[0]?.at).toBe(event(5).at);

  const big = new AuditBacklog();
  const large = Array.from({ length: 200 }, (_, i) => event(i, 'y'.repeat(2000)));
  big.failed(large, 'ENOSPC', 0);
  const kept = big.take();
  expect(kept.reduce((n, e) => n + JSON.stringify(e).length, 0)).toBeLessThanOrEqual(MAX_UNWRITTEN_CHARS);
  expect(kept[kept.length - 1]?.at).toBe(event(199).at);
  expect(big.health()?.dropped).toBe(200 - kept.length);
});

test('carried across continue-as-new: what parses is kept, what does not is counted as dropped', () => {
  const backlog = new AuditBacklog();
  backlog.failed([event(1), event(2)], 'ENOSPC', 0);
  const carried = backlog.carried();
  expect(carried).toBeDefined();
  const wire = auditBacklogSchema.parse(JSON.parse(JSON.stringify({ ...carried, events: [...(carried?.events ?? []), { type: 'nope' }] })));
  const restored = AuditBacklog.restore(wire);
  expect(restored.health()).toEqual({ unwritten: 2, dropped: 1, failures: 1, lastError: 'ENOSPC' });
  // Restored events are due at once: the new run tries them with its first write.
  expect(restored.due(0)).toBe(true);
  expect(new AuditBacklog().carried()).toBeUndefined();
});
