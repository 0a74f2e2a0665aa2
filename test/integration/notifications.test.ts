import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AirlockClient } from '../../client/airlock-client';
import { startReplayServer, type ReplayServer } from '../../ops/dev/replay-server';
import type { AuditEvent } from '../../core/audit/events';
import { parseConfig } from '../../core/config/config';
import { AGENT_JOB_WORKFLOW, type AgentJobResult } from '../../core/job/job-input';
import type { Notice } from '../../core/reviewer/notice';
import { TaskQueues } from '../../core/temporal/task-queues';
import { repoRoot, spawnNode, type Spawned } from '../helpers/processes';
import { createTestEnv, type TestEnv } from '../helpers/temporal-env';
import { utcMinute } from '../../core/reviewer/approval-card';

/**
 * Notifications end to end: a real worker process (every queue) configured
 * through its environment, jobs on the dev server, and a local HTTP server
 * standing in for the endpoints: one that works, ntfy, one that fails once,
 * one that is down, one that hangs.
 */

const run = promisify(execFile);

interface Received {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
  status: number | 'hanging';
}

/** Secrets placed in the call's path and content, the rule's instruction and the reviewer's reason. */
const SECRETS = ['hunter2hunter2', 'ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'ghp_ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210', 'opensesame123', 'AKIAIOSFODNN7EXAMPLE'];

const script = {
  turns: [
    {
      tool_calls: [
        {
          name: 'fs_write',
          arguments: { path: 'password=hunter2hunter2.txt', content: 'db: ghp_abcdefghijklmnopqrstuvwxyz0123456789 and AKIAIOSFODNN7EXAMPLE' },
        },
      ],
    },
    { tool_calls: [{ name: 'complete', arguments: { summary: 'wrote it' } }] },
  ],
};

function rules(ttl: string): string {
  return JSON.stringify({
    version: 1,
    rules: [
      {
        id: 'approve-writes',
        version: 2,
        name: 'Writes need approval',
        scope: { tools: ['fs_write'] },
        action: 'request_approval',
        instruction: 'Ask ops first (their token: ghp_ZYXWVUTSRQPONMLKJIHGFEDCBA9876543210)',
        approval: { ttl },
      },
      { id: 'tell-admin', version: 1, name: 'Admin hears of writes', scope: { tools: ['fs_write'] }, action: 'notify_admin' },
    ],
  });
}

/** The endpoints' side: every request kept; /flaky fails each event's first delivery, /down always, /hang never answers. */
class Endpoints {
  readonly received: Received[] = [];
  private readonly hanging: ServerResponse[] = [];
  private readonly seenByFlaky = new Set<string>();
  /** While set, /once-hang holds every request open; then it answers 200. */
  holdOnce = true;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<Endpoints> {
    const handlers: Array<(req: IncomingMessage, res: ServerResponse) => void> = [];
    const server = createServer((req, res) => handlers[0]?.(req, res));
    const self = new Endpoints(server);
    handlers.push((req, res) => self.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  get base(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    let data = '';
    req.on('data', (chunk: Buffer) => (data += chunk.toString('utf8')));
    req.on('end', () => {
      const entry: Received = { path: req.url ?? '', headers: req.headers, body: JSON.parse(data) as Record<string, unknown>, status: 200 };
      this.received.push(entry);
      const eventId = typeof entry.body.eventId === 'string' ? entry.body.eventId : '';
      let status = 200;
      if (entry.path === '/down') status = 503;
      if (entry.path === '/flaky' && !this.seenByFlaky.has(eventId)) {
        this.seenByFlaky.add(eventId);
        status = 500;
      }
      if (entry.path === '/hang' || (entry.path === '/once-hang' && this.holdOnce)) {
        entry.status = 'hanging';
        this.hanging.push(res);
        res.on('close', () => {
          if (entry.status === 'hanging') entry.status = 0;
        });
        return;
      }
      entry.status = status;
      res.writeHead(status).end();
    });
  }

  at(path: string, event?: string, jobId?: string): Received[] {
    return this.received.filter((r) => r.path === path && (event === undefined || r.body.event === event) && (jobId === undefined || r.body.jobId === jobId));
  }

  async until<T>(what: string, find: () => T | undefined, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received: ${JSON.stringify(this.received.map((r) => [r.path, r.body.event ?? r.body.title, r.status]))}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let env: TestEnv;
let replay: ReplayServer;
let endpoints: Endpoints;
let dir: string;
let airlock: AirlockClient;
let worker: Spawned | undefined;

function workerEnv(notify: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: env.address,
    TEMPORAL_NAMESPACE: env.namespace,
    AIRLOCK_DATA_DIR: join(dir, 'data'),
    AIRLOCK_ROOTS: join(dir, 'root'),
    AIRLOCK_RULES_FILE: join(dir, 'rules.yaml'),
    OPENAI_BASE_URL: replay.baseUrl,
    OPENAI_API_KEY: 'test',
    AIRLOCK_WEB_UI_URL: 'http://ui.example:8080/',
    ...notify,
  };
}

async function startWorker(notify: Record<string, string>): Promise<Spawned> {
  const spawned = spawnNode('dist/workers/all.js', [], workerEnv(notify));
  await spawned.waitFor(/workers polling/);
  return spawned;
}

async function stopWorker(): Promise<void> {
  if (worker === undefined) return;
  worker.child.kill('SIGKILL');
  await worker.exited();
  worker = undefined;
}

async function startJob(jobId: string): Promise<void> {
  await airlock.client.workflow.start(AGENT_JOB_WORKFLOW, {
    taskQueue: TaskQueues.agent,
    workflowId: jobId,
    args: [{ schemaVersion: 1, goal: 'write the notes', requester: 'tester' }],
  });
}

function audit(jobId: string): AuditEvent[] {
  const file = join(dir, 'data', 'audit', 'audit.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) => e.jobId === jobId);
}

async function cli(args: string[]): Promise<{ stdout: string; code: number }> {
  try {
    const { stdout } = await run(process.execPath, [join(repoRoot, 'bin', 'airlock.js'), ...args], { env: workerEnv({}) });
    return { stdout, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: `${e.stdout ?? ''}${e.stderr ?? ''}`, code: typeof e.code === 'number' ? e.code : 1 };
  }
}

/** The approve command a notice gives, run as it is written (`npx airlock` is this checkout's CLI), with a reviewer. */
async function runNoticeCommand(command: string, extra: string[]): Promise<{ stdout: string; code: number }> {
  const words = command.split(' ');
  expect(words.slice(0, 2)).toEqual(['npx', 'airlock']);
  return cli([...words.slice(2), ...extra]);
}

beforeAll(async () => {
  env = await createTestEnv();
  replay = await startReplayServer({ script });
  endpoints = await Endpoints.start();
  dir = mkdtempSync(join(tmpdir(), 'airlock-notify-'));
  mkdirSync(join(dir, 'root'));
  writeFileSync(join(dir, 'rules.yaml'), rules('24h'));
  airlock = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace, AIRLOCK_DATA_DIR: join(dir, 'data') }));
  const base = endpoints.base;
  worker = await startWorker({
    AIRLOCK_NOTIFY_URLS: [
      `generic:${base}/generic`,
      `ntfy:http://alice:s3cret-pass@127.0.0.1:${base.split(':')[2]}/ntfy/airlock-test`,
      `generic:${base}/flaky`,
      `generic:${base}/down`,
      `generic:${base}/hang`,
    ].join(','),
    AIRLOCK_NOTIFY_ATTEMPTS: '3',
    AIRLOCK_NOTIFY_BACKOFF: '100ms',
    // The hanging endpoint holds its attempts for the whole test.
    AIRLOCK_NOTIFY_TIMEOUT: '10m',
    AIRLOCK_APPROVAL_PAGE_URL: 'https://airlock.example/approve',
  });
}, 120_000);

afterAll(async () => {
  await stopWorker();
  for await (const info of env.client.workflow.list({ query: 'ExecutionStatus = "Running"' })) {
    await env.client.workflow.getHandle(info.workflowId).terminate('test cleanup').catch(() => undefined);
  }
  await airlock.close();
  await endpoints.close();
  await replay.close();
  await env.close();
  rmSync(dir, { recursive: true, force: true });
});

const notice = (r: Received) => r.body as unknown as Notice;

test('a parked job notifies once per endpoint, in the generic and the ntfy form, masked; retried on 500, audited when down, never waited for', async () => {
  const jobId = 'notify-park';
  await startJob(jobId);
  const generic = notice(await endpoints.until('the generic notice', () => endpoints.at('/generic', 'approval_requested', jobId)[0]));
  const requested = audit(jobId).find((e) => e.type === 'approval_requested');
  if (requested?.type !== 'approval_requested') throw new Error('no approval_requested in the audit log');
  const requestId = requested.data.requestId;

  expect(generic).toEqual({
    schemaVersion: 1,
    eventId: expect.stringMatching(/^[0-9a-f]{32}$/),
    event: 'approval_requested',
    at: requested.at,
    jobId,
    requestId,
    tool: 'fs_write',
    target: `${join(dir, 'root')}/password=***`,
    args: `{"path":"${join(dir, 'root')}/password=***","content":"db: *** and ***","mode":"create"}`,
    rule: { id: 'approve-writes', version: 2 },
    reason: 'Writes need approval — Ask ops first (their token: ***)',
    requester: 'tester',
    expiresAt: requested.data.expiresAt,
    decision: null,
    links: {
      job: `http://ui.example:8080/namespaces/${env.namespace}/workflows/${jobId}`,
      approval: `https://airlock.example/approve/jobs/${jobId}/requests/${requestId}`,
    },
    commands: {
      approve: `npx airlock approve ${jobId} --request ${requestId}`,
      deny: `npx airlock deny ${jobId} --request ${requestId} --reason TEXT`,
    },
    // The same card `pending`, `show` and the Web UI render.
    card: expect.objectContaining({
      schemaVersion: 1,
      jobId,
      requestId,
      operation: expect.objectContaining({ tool: 'fs_write', target: `${join(dir, 'root')}/password=***` }),
      rule: { id: 'approve-writes', version: 2, reason: 'Writes need approval — Ask ops first (their token: ***)' },
      editNote: 'this call only; editing creates a new fingerprint',
      requester: 'tester',
      expiresAt: requested.data.expiresAt,
      expires: expect.stringMatching(/^expires in /),
      commands: { approve: `npx airlock approve ${jobId} --request ${requestId}`, deny: `npx airlock deny ${jobId} --request ${requestId} --reason TEXT`, edit: null },
    }),
    title: `Approval needed: fs_write on ${join(dir, 'root')}/password=***`,
    text: expect.stringContaining(`approve: npx airlock approve ${jobId} --request ${requestId}`),
  });
  expect(generic.text).toContain('rule approve-writes v2: Writes need approval — Ask ops first (their token: ***)');
  expect(generic.text).toContain(`(${utcMinute(requested.data.expiresAt)})`);
  expect(generic.text).toContain('this call only; editing creates a new fingerprint');

  const ntfyRequests = await endpoints.until('the ntfy message', () => {
    const found = endpoints.at('/ntfy/').filter((r) => r.body.title === generic.title);
    return found.length > 0 ? found : undefined;
  });
  expect(ntfyRequests).toHaveLength(1);
  const ntfy = ntfyRequests[0]!;
  // Published as JSON to the server's root, the topic in the body; the URL's credentials as Basic auth.
  expect(ntfy.headers.authorization).toBe(`Basic ${Buffer.from('alice:s3cret-pass').toString('base64')}`);
  expect(ntfy.headers['content-type']).toBe('application/json');
  expect(ntfy.body).toEqual({
    topic: 'airlock-test',
    title: generic.title,
    message: generic.text,
    priority: 4,
    tags: ['airlock', 'hourglass_flowing_sand', 'approval_requested'],
    click: generic.links.approval,
    actions: [
      { action: 'view', label: 'Open job', url: generic.links.job, clear: false },
      { action: 'view', label: 'Decide', url: generic.links.approval, clear: true },
    ],
    sequence_id: expect.stringMatching(/^airlock-[0-9a-f]{32}$/),
  });

  // The hanging endpoint holds its attempt open; the job is decided and completes regardless.
  await endpoints.until('the hanging attempt', () => endpoints.at('/hang', 'approval_requested', jobId).find((r) => r.status === 'hanging'));
  const approved = await runNoticeCommand(generic.commands!.approve, ['--reviewer', 'alice', '--reason', 'fine, PASSWORD=opensesame123']);
  expect(approved.code).toBe(0);
  const result = (await env.client.workflow.getHandle(jobId).result()) as AgentJobResult;
  expect(result).toMatchObject({ status: 'completed' });
  expect(endpoints.at('/hang', 'approval_requested', jobId)[0]?.status).toBe('hanging');

  const decided = notice(await endpoints.until('the decision notice', () => endpoints.at('/generic', 'approval_decided', jobId)[0]));
  expect(decided).toMatchObject({
    event: 'approval_decided',
    requestId,
    tool: 'fs_write',
    target: generic.target,
    rule: { id: 'approve-writes', version: null },
    decision: { outcome: 'approved', reviewer: 'alice', reason: 'fine, PASSWORD=***' },
    commands: null,
    links: { job: generic.links.job, approval: null },
  });
  const admin = notice(await endpoints.until('the notify_admin notice', () => endpoints.at('/generic', 'admin_notification', jobId)[0]));
  expect(admin).toMatchObject({ event: 'admin_notification', tool: 'fs_write', rule: { id: 'tell-admin', version: 1 }, reason: 'Admin hears of writes', args: generic.args });

  // The failing endpoint's first answer was 500: the same notice came again and was taken.
  const flaky = await endpoints.until('the retried notice', () => {
    const seen = endpoints.at('/flaky', 'approval_requested', jobId);
    return seen.length >= 2 ? seen : undefined;
  });
  expect(flaky.map((r) => r.status)).toEqual([500, 200]);
  expect(flaky[1]!.body).toEqual(flaky[0]!.body);

  // The endpoint that is down: three attempts per event, then one audit event each.
  const failed = await endpoints.until('the audited failures', () => {
    const events = audit(jobId).filter((e) => e.type === 'notification_failed');
    return events.length >= 5 ? events : undefined;
  });
  expect(failed.map((e) => e.type === 'notification_failed' && e.data.event).sort()).toEqual(['admin_notification', 'approval_decided', 'approval_requested', 'call_executed', 'job_ended']);
  expect(failed.find((e) => e.type === 'notification_failed' && e.data.event === 'approval_requested')?.data).toEqual({
    event: 'approval_requested',
    eventId: generic.eventId,
    requestId,
    endpoint: `generic:${endpoints.base}/down`,
    attempts: 3,
    error: 'HTTP 503 Service Unavailable',
  });
  expect(endpoints.at('/down', 'approval_requested', jobId)).toHaveLength(3);
  expect(audit(jobId).filter((e) => e.type === 'notification_failed' && !e.data.endpoint.endsWith('/down'))).toEqual([]);

  // One notification per event and endpoint that answered 2xx.
  for (const event of ['approval_requested', 'approval_decided', 'admin_notification', 'call_executed', 'job_ended']) {
    expect(endpoints.at('/generic', event, jobId)).toHaveLength(1);
  }
  // The closing notices: the approved write ran; the job's end leads with its facts, the model's summary labelled.
  expect(notice(endpoints.at('/generic', 'call_executed', jobId)[0]!)).toMatchObject({ requestId, tool: 'fs_write', target: generic.target, outcome: 'ran' });
  expect(notice(endpoints.at('/generic', 'job_ended', jobId)[0]!).text).toMatch(/^Job \S+ completed; 1 of 1 approved call ran\. The model says: “/);
  await endpoints.until('five ntfy messages', () => (endpoints.at('/ntfy/').length >= 5 ? true : undefined));
  const published = endpoints.at('/ntfy/');
  expect(published).toHaveLength(5);
  // The request's notices share one sequence id (the phone replaces "Approval needed"); the job's end and the admin's note have none.
  const sequences = new Map(published.map((r) => [String(r.body.tags), r.body.sequence_id]));
  const sequence = ntfy.body.sequence_id;
  expect([...sequences.entries()].filter(([, id]) => id === sequence).map(([tags]) => tags.split(',').at(-1)).sort()).toEqual(['approval_decided', 'approval_requested', 'call_executed']);

  // Nothing secret reached any endpoint, and the ntfy credentials are not in the audit log.
  const sent = JSON.stringify(endpoints.received.map((r) => r.body));
  for (const secret of SECRETS) expect(sent).not.toContain(secret);
  expect(readFileSync(join(dir, 'data', 'audit', 'audit.jsonl'), 'utf8')).not.toContain('s3cret-pass');
});

test('an expired request is notified, and the job goes on', async () => {
  writeFileSync(join(dir, 'rules.yaml'), rules('1s'));
  const jobId = 'notify-expire';
  await startJob(jobId);
  const expired = notice(await endpoints.until('the expiry notice', () => endpoints.at('/generic', 'approval_expired', jobId)[0]));
  const requested = notice(endpoints.at('/generic', 'approval_requested', jobId)[0]!);
  expect(expired).toMatchObject({
    event: 'approval_expired',
    jobId,
    requestId: requested.requestId,
    tool: 'fs_write',
    target: requested.target,
    rule: { id: 'approve-writes', version: null },
    commands: null,
    decision: null,
    title: `Approval expired: fs_write on ${requested.target}`,
  });
  expect(endpoints.at('/generic', 'approval_expired', jobId)).toHaveLength(1);
  expect(((await env.client.workflow.getHandle(jobId).result()) as AgentJobResult).status).toBe('completed');
});

test('a worker killed while a notification is on its way delivers it after the restart', async () => {
  await stopWorker();
  writeFileSync(join(dir, 'rules.yaml'), rules('24h'));
  const notify = { AIRLOCK_NOTIFY_URLS: `generic:${endpoints.base}/once-hang`, AIRLOCK_NOTIFY_TIMEOUT: '2s', AIRLOCK_NOTIFY_BACKOFF: '100ms' };
  worker = await startWorker(notify);
  const jobId = 'notify-restart';
  await startJob(jobId);
  const first = await endpoints.until('the held attempt', () => endpoints.at('/once-hang', 'approval_requested', jobId).find((r) => r.status === 'hanging'));
  await stopWorker();
  expect(endpoints.at('/once-hang', 'approval_requested', jobId).every((r) => r.status !== 200)).toBe(true);

  endpoints.holdOnce = false;
  worker = await startWorker(notify);
  const delivered = await endpoints.until('the delivery after the restart', () => endpoints.at('/once-hang', 'approval_requested', jobId).find((r) => r.status === 200));
  expect(delivered.body).toEqual(first.body);
  // Delivered once: the new worker does not send it again.
  await endpoints.until('the admin notice after the restart', () => endpoints.at('/once-hang', 'admin_notification', jobId).find((r) => r.status === 200));
  expect(endpoints.at('/once-hang', 'approval_requested', jobId).filter((r) => r.status === 200)).toHaveLength(1);
});
