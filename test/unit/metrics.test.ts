import type { MetricCounter, MetricGauge, MetricHistogram, MetricMeter, MetricTags } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { OpenAI } from 'openai';
import { writeAudit } from '../../activities/audit';
import { createJudgeActivities } from '../../activities/judge';
import { createAirlockMetrics, MetricNames } from '../../activities/metrics';
import { executionOutcome } from '../../activities/tool-gate';
import { startReplayServer } from '../../ops/dev/replay-server';
import type { AuditEvent, AuditRecord } from '../../core/audit/events';
import { judgeCallSummary } from '../../core/judge/judge';

/** A meter that keeps every sample, as the runtime's would export them. */
class RecordingMeter implements MetricMeter {
  readonly samples: Array<{ name: string; kind: 'counter' | 'histogram'; value: number; tags: MetricTags }> = [];
  readonly created: string[] = [];

  createCounter(name: string): MetricCounter {
    this.created.push(name);
    const counter: MetricCounter = {
      name,
      kind: 'counter',
      valueType: 'int',
      add: (value, tags = {}) => void this.samples.push({ name, kind: 'counter', value, tags }),
      withTags: () => counter,
    };
    return counter;
  }

  createHistogram(name: string): MetricHistogram {
    this.created.push(name);
    const histogram: MetricHistogram = {
      name,
      kind: 'histogram',
      valueType: 'int',
      record: (value, tags = {}) => void this.samples.push({ name, kind: 'histogram', value, tags }),
      withTags: () => histogram,
    };
    return histogram;
  }

  createGauge(): MetricGauge {
    throw new Error('airlock sets no gauges');
  }

  withTags(): MetricMeter {
    return this;
  }

  /** Sum of a counter's samples whose labels include these. */
  total(name: string, labels: MetricTags = {}): number {
    return this.samples
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.tags[k] === v))
      .reduce((sum, s) => sum + s.value, 0);
  }
}

function event(record: AuditRecord): AuditEvent {
  return { ...record, jobId: 'job-1', at: '2026-01-01T00:00:00.000Z', policyVersion: 'v1' };
}

const call = { callId: 'c1', toolName: 'fs_delete' };
const requested = event({
  type: 'approval_requested',
  data: { requestId: 'r1', ...call, ruleId: 'approve-deletes', ruleVersion: 1, fingerprint: 'f', requester: 'me', argsSummary: '{}', expiresAt: '2026-01-02T00:00:00.000Z' },
});
const decided = (decision: 'approve' | 'deny', ruleId?: string) =>
  event({
    type: 'approval_decided',
    data: { requestId: 'r1', toolName: 'fs_delete', ...(ruleId !== undefined ? { ruleId } : {}), decision, reviewer: 'alice', originalFingerprint: 'f', signed: false, via: 'update' },
  });
const expired = event({ type: 'approval_expired', data: { requestId: 'r2', toolName: 'fs_delete', ruleId: 'approve-deletes', fingerprint: 'f', reason: 'expired' } });
const evaluated = (decision: string, toolName = 'fs_delete') =>
  event({ type: 'policy_evaluation', data: { callId: 'c1', toolName, decision, outcome: 'run' } });

const first = new MockActivityEnvironment({ attempt: 1 });

/** Runs `work` inside an activity's context (first attempt unless told). */
async function inActivity<T>(work: () => T | Promise<T>, env = first): Promise<T> {
  return env.run<[], T, () => Promise<T>>(async () => work());
}

test('audit events written by an activity count the decisions they record, by bounded labels', async () => {
  const meter = new RecordingMeter();
  const metrics = createAirlockMetrics(() => meter);
  const written: AuditEvent[] = [];
  const events = [
    requested,
    decided('approve', 'approve-deletes'),
    decided('deny', 'approve-deletes'),
    expired,
    ...['allow', 'deny', 'require_approval', 'redirect', 'stop', 'audit_only'].map((d) => evaluated(d)),
    evaluated('allow', 'fs_list'),
    // Values outside the known sets never become label values.
    evaluated('made_up'),
    evaluated('allow', 'rm_rf_everything'),
    decided('approve', 'rule with spaces'),
    // An event written by a build before decisions carried their rule.
    decided('deny'),
    event({ type: 'runtime_error', data: { code: 'model_error', error: 'boom' } }),
  ];
  const result = await inActivity(() => writeAudit({ audit: { write: async (e) => void written.push(...e), idempotent: false, prune: async () => 0 }, metrics }, events));
  expect(result).toEqual({ written: events.length });

  expect(meter.total(MetricNames.approvalsRequested, { rule: 'approve-deletes' })).toBe(1);
  expect(meter.total(MetricNames.approvalsDecided, { rule: 'approve-deletes', decision: 'approve' })).toBe(1);
  expect(meter.total(MetricNames.approvalsDecided, { rule: 'approve-deletes', decision: 'deny' })).toBe(1);
  expect(meter.total(MetricNames.approvalsDecided, { rule: 'other' })).toBe(2);
  expect(meter.total(MetricNames.approvalsExpired, { rule: 'approve-deletes' })).toBe(1);
  for (const action of ['deny', 'require_approval', 'redirect', 'stop', 'audit_only']) {
    expect(meter.total(MetricNames.policyDecisions, { action, tool: 'fs_delete' })).toBe(1);
  }
  expect(meter.total(MetricNames.policyDecisions, { action: 'allow' })).toBe(3);
  expect(meter.total(MetricNames.policyDecisions, { action: 'allow', tool: 'fs_list' })).toBe(1);
  expect(meter.total(MetricNames.policyDecisions, { action: 'allow', tool: 'other' })).toBe(1);
  expect(meter.total(MetricNames.policyDecisions, { action: 'other' })).toBe(1);
  expect(meter.total(MetricNames.auditWriteFailures)).toBe(0);
  // Every series of a metric has the same label names (Prometheus wants one schema per name), never a job id.
  const schemas = new Map<string, Set<string>>();
  for (const s of meter.samples) schemas.set(s.name, new Set([...(schemas.get(s.name) ?? []), Object.keys(s.tags).sort().join(',')]));
  expect(Object.fromEntries([...schemas].map(([name, set]) => [name, [...set]]))).toEqual({
    [MetricNames.approvalsRequested]: ['rule'],
    [MetricNames.approvalsDecided]: ['decision,rule'],
    [MetricNames.approvalsExpired]: ['rule'],
    [MetricNames.policyDecisions]: ['action,tool'],
  });
  expect(JSON.stringify(meter.samples)).not.toContain('job-1');
});

test('a retried activity counts nothing, as it writes nothing; a failed write is counted, its events once the job sends them again', async () => {
  const meter = new RecordingMeter();
  const metrics = createAirlockMetrics(() => meter);
  const broken = { write: async () => { throw new Error('disk full'); }, idempotent: false, prune: async () => 0 };

  const retry = new MockActivityEnvironment({ attempt: 2 });
  expect(await inActivity(() => writeAudit({ audit: broken, metrics }, [requested]), retry)).toEqual({ written: 0 });
  expect(meter.samples).toEqual([]);

  expect(await inActivity(() => writeAudit({ audit: broken, metrics }, [requested]))).toEqual({ written: 0, error: 'disk full' });
  expect(meter.total(MetricNames.auditWriteFailures)).toBe(1);
  expect(meter.total(MetricNames.approvalsRequested, { rule: 'approve-deletes' })).toBe(0);

  // The job keeps the events and sends them again; written now, they count once.
  expect(await inActivity(() => writeAudit({ audit: { write: async () => undefined, idempotent: false, prune: async () => 0 }, metrics }, [requested]))).toEqual({ written: 1 });
  expect(meter.total(MetricNames.approvalsRequested, { rule: 'approve-deletes' })).toBe(1);
  expect(meter.total(MetricNames.auditWriteFailures)).toBe(1);
});

test('a failing meter never breaks the activity that counts', async () => {
  const metrics = createAirlockMetrics(() => {
    throw new Error('no runtime');
  });
  expect(await inActivity(() => writeAudit({ audit: { write: async () => undefined, idempotent: false, prune: async () => 0 }, metrics }, [requested]))).toEqual({ written: 1 });
  expect(() => metrics.executed('fs_delete', 'ok')).not.toThrow();
  expect(() => metrics.judged('ok', 12)).not.toThrow();
});

test('an execute result is counted by how it ended', () => {
  const ran = { ok: true, output: 'done', replayed: false } as const;
  expect(executionOutcome(ran, undefined)).toBe('ok');
  expect(executionOutcome({ ...ran, ok: false }, undefined)).toBe('failed');
  expect(executionOutcome({ ...ran, replayed: true }, undefined)).toBe('replayed');
  expect(executionOutcome({ refused: 'the target changed', ok: false, output: '', replayed: false }, undefined)).toBe('refused');
  // Settled by this attempt: the reconciliation's result; reported again later: replayed.
  expect(executionOutcome({ ...ran, replayed: true, reconciled: 'ran_before' }, 'ran_before')).toBe('ran_before');
  expect(executionOutcome({ ...ran, reconciled: 'ran_now' }, 'ran_now')).toBe('ran_now');
  expect(executionOutcome({ ok: false, output: '?', replayed: true, reconciled: 'unknown' }, 'unknown')).toBe('unknown');
  expect(executionOutcome({ ...ran, replayed: true, reconciled: 'ran_before' }, undefined)).toBe('replayed');

  const meter = new RecordingMeter();
  const metrics = createAirlockMetrics(() => meter);
  metrics.executed('fs_write', 'ran_now');
  metrics.reconciled('fs_write', 'ran_now');
  metrics.executed('no_such_tool', 'ok');
  expect(meter.total(MetricNames.executions, { tool: 'fs_write', outcome: 'ran_now' })).toBe(1);
  expect(meter.total(MetricNames.reconciliations, { tool: 'fs_write', result: 'ran_now' })).toBe(1);
  expect(meter.total(MetricNames.executions, { tool: 'other', outcome: 'ok' })).toBe(1);
});

test('the judge records the latency of each model call by status; a cached answer is not a model call', async () => {
  const answer = JSON.stringify({ version: 1, decisions: [{ rule_id: 'r1', result: 'match', confidence: 0.9 }] });
  const server = await startReplayServer({ script: { turns: [{ content: answer }] } });
  try {
    const meter = new RecordingMeter();
    const judge = createJudgeActivities({
      openai: new OpenAI({ baseURL: server.baseUrl, apiKey: 'test', maxRetries: 0 }),
      model: 'judge',
      timeoutMs: 10_000,
      metrics: createAirlockMetrics(() => meter),
    });
    const input = { rules: [{ id: 'r1', condition: 'deletes a backup' }], call: judgeCallSummary('fs_delete', 'delete', { path: 'a.tar' }), recentTurns: [], cacheKey: 'k' };
    const live = await inActivity(() => judge.judgeRules(input));
    expect(live).toMatchObject({ outcome: { status: 'ok' }, cached: false });
    expect(await inActivity(() => judge.judgeRules(input))).toMatchObject({ cached: true });
    server.setScript({ turns: [{ content: 'not json' }] });
    expect(await inActivity(() => judge.judgeRules({ ...input, cacheKey: 'other' }))).toMatchObject({ outcome: { status: 'invalid' } });

    const recorded = meter.samples.filter((s) => s.name === MetricNames.judgeLatency);
    expect(recorded.map((s) => [s.kind, s.tags])).toEqual([
      ['histogram', { status: 'ok' }],
      ['histogram', { status: 'invalid' }],
    ]);
    expect(recorded[0]?.value).toBe(live.latencyMs);
    expect(meter.created.filter((n) => n === MetricNames.judgeLatency)).toHaveLength(1);
  } finally {
    await server.close();
  }
});
