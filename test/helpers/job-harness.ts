import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { OpenAI } from 'openai';
import type { z } from 'zod';
import { createActivities } from '../../activities';
import { type AuditSink } from '../../host/stores/audit-log/store';
import { JsonlAuditSink } from '../../host/stores/audit-log/jsonl';
import { createGrantSigner, createGrantVerifier, loadOrCreateGrantKeyPair } from '../../host/keys/grant-keys';
import { createSealer } from '../../host/keys/seal';
import { type ContentStore } from '../../host/stores/contents/store';
import { SqliteContentStore } from '../../host/stores/contents/sqlite';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { SqliteStandingApprovals } from '../../host/stores/standing-approvals/sqlite';
import { parseRulesDocument } from '../../host/config/rules-file';
import { Roots } from '../../host/fs/roots';
import type { ReviewerKeys } from '../../host/keys/reviewer-keys';
import { createServiceCapability } from '../../host/services/service-capability';
import { Services } from '../../host/services/services';
import { servicesConfigSchema, type ServicesConfigInput } from '../../core/config/tools/services';
import type { ToolHostDeps } from '../../host/tools/tool-host';
import { startReplayServer, type RecordedRequest, type ReplayServer } from '../../ops/dev/replay-server';
import { AirlockClient } from '../../client/airlock-client';
import type { AuditEvent, AuditEventType } from '../../core/audit/events';
import { parseConfig } from '../../core/config/config';
import { dataConverterFor } from '../../host/temporal/data-converter';
import { ensureCodecKeys } from '../../host/temporal/payload-codec';
import { AGENT_JOB_WORKFLOW, type AgentJobInput, type AgentJobResult } from '../../core/job/job-input';
import type { AgentJobStateView } from '../../core/job/job-view';
import type { rulesFileSchema } from '../../core/policy/rules';
import { buildSnapshot } from '../../core/policy/snapshot';
import { useUpstreamTools } from '../../core/tools/registry';
import type { UpstreamToolSpec } from '../../core/tools/upstream/upstream-spec';
import type { MachineTable } from '../../core/tools/machines';
import type { ReplayScript } from '../../core/model/replay-script';
import { TaskQueues, type QueueRole } from '../../core/temporal/task-queues';
import { spawnNode, type Spawned } from './processes';
import { stateQuery } from '../../workflows/messages';
import { availabilityOf } from '../../core/config/tools/tools-config';
import { availableToolNames } from '../../core/tools/registry';
import { createTestEnv, startWorkers, type RunningWorkers, type TestEnv } from './temporal-env';

export type RulesInput = z.input<typeof rulesFileSchema>;

const run = promisify(execFile);

class MemoryAuditSink implements AuditSink {
  readonly events: AuditEvent[] = [];
  readonly idempotent = false;
  async write(events: readonly AuditEvent[]): Promise<void> {
    this.events.push(...events);
  }
  async prune(): Promise<number> {
    return 0;
  }
}

export interface HarnessOptions {
  readonly rules?: RulesInput;
  /** The reviewers' keys signed decisions are verified with: a `Map` of Ed25519 keys, or a `ReviewerKeysFile` (passkeys too). */
  readonly reviewerKeys?: ReviewerKeys;
  /** Run a judge worker in this process against this OpenAI-compatible endpoint. */
  readonly judge?: { readonly baseUrl: string; readonly timeoutMs: number };
  /** The tools' roots as the agent side sees them (for `outside_roots`); default: the harness root. */
  readonly detectorRoots?: readonly string[];
  /** The tools config's machines, frozen into every job's snapshot (calls then go to `airlock-tools.<machine>`); default: one machine. */
  readonly machines?: MachineTable;
  /** The tools the agent worker's tools config can run; default: those of a machine without a tools config. */
  readonly availableTools?: readonly string[];
  /** Upstream MCP servers' tools the agent offers (listed by the test as a worker lists them); their names belong in `availableTools` too. */
  readonly upstreamTools?: readonly UpstreamToolSpec[];
  /** Run the tools worker in this process (default) or leave the queue to a spawned worker. */
  readonly toolsInProcess?: boolean;
  /** The in-process tools worker keeps deletes in its root for undo, this many days (the tools config's `undo`); unset: no undo. */
  readonly undoKeepDays?: number;
  /** Encrypt payloads with airlock's codec (workers and the CLI's client); the raw `env.client` stays without it. */
  readonly codec?: boolean;
  /** Characters of conversation the model is sent at most (AIRLOCK_MODEL_CONTEXT_CHARS). */
  readonly contextChars?: number;
  /** The agent worker's workflow cache (AIRLOCK_WORKFLOW_CACHE); default: the SDK's. */
  readonly workflowCache?: number;
  /** The agent workers' conversation store, which the test closes; default: a SQLite file in the harness folder. */
  readonly contents?: ContentStore;
  /** Write audit events to this JSON lines file with the product's sink (default: kept in memory). */
  readonly auditFile?: string;
  /** The `services:` section of the tools config: the in-process tools worker lends the service tools these. */
  readonly services?: ServicesConfigInput;
  /** The in-process tools worker's capabilities besides files (http, commands, services), built on its roots. */
  readonly capabilities?: (roots: Roots) => NonNullable<ToolHostDeps['capabilities']>;
}

/**
 * Everything a job scenario needs, for real: a namespace on the dev server,
 * the replay model over HTTP, agent (and tools) workers built by the
 * product's factory, a temporary root folder and a nonce store on disk.
 */
export class JobHarness {
  private rules: RulesInput;
  private availableTools: readonly string[];
  private workers: RunningWorkers | undefined;
  /** Worker processes started by `spawnToolsWorker`. */
  private readonly spawned: Spawned[] = [];
  private readonly auditSink: AuditSink;
  /** What the audit sink warned about (the worker log's lines), with `auditFile`. */
  readonly auditWarnings: string[] = [];
  /** The agent workers' standing approvals: the data folder's file, as `airlock standing` (run by `cli`) reads it. */
  readonly standing: SqliteStandingApprovals;

  private constructor(
    readonly env: TestEnv,
    /** The CLI's typed client, on this namespace. */
    readonly airlock: AirlockClient,
    readonly replay: ReplayServer,
    readonly dir: string,
    readonly root: string,
    readonly nonces: SqliteNonceStore,
    readonly keys: { privateFile: string; publicFile: string },
    private readonly options: HarnessOptions,
    /** What the workers and the CLI's client encode payloads with. */
    readonly dataConverter: DataConverter,
    /** Where the agent workers keep conversations. */
    readonly contents: ContentStore,
  ) {
    this.rules = options.rules ?? { version: 1, rules: [] };
    this.availableTools =
      options.availableTools ??
      availableToolNames(availabilityOf(options.services === undefined ? undefined : { services: servicesConfigSchema.parse(options.services) }));
    this.standing = new SqliteStandingApprovals(join(dir, 'data', 'agent', 'standing-approvals.sqlite'));
    this.auditSink =
      options.auditFile === undefined ? new MemoryAuditSink() : new JsonlAuditSink(options.auditFile, { warn: (line) => this.auditWarnings.push(line) });
  }

  static async create(options: HarnessOptions = {}): Promise<JobHarness> {
    const env = await createTestEnv();
    const replay = await startReplayServer({ script: { turns: [] } });
    const dir = mkdtempSync(join(tmpdir(), 'airlock-job-'));
    const root = join(dir, 'root');
    mkdirSync(root);
    const keys = { privateFile: join(dir, 'keys', 'grant.pem'), publicFile: join(dir, 'keys', 'grant.pub.pem') };
    const nonces = new SqliteNonceStore(join(dir, 'tools', 'nonces.sqlite'));
    const codecKeys = join(dir, 'keys', 'codec.yaml');
    if (options.codec === true) ensureCodecKeys(codecKeys);
    const config = parseConfig({
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: env.namespace,
      AIRLOCK_DATA_DIR: join(dir, 'data'),
      ...(options.codec === true ? { AIRLOCK_CODEC_KEYS: codecKeys } : {}),
    });
    const airlock = await AirlockClient.connect(config);
    const contents = options.contents ?? new SqliteContentStore(join(dir, 'agent', 'contents.sqlite'));
    const harness = new JobHarness(env, airlock, replay, dir, root, nonces, keys, options, dataConverterFor(config), contents);
    const roles: QueueRole[] = ['agent'];
    if (options.toolsInProcess !== false) roles.push('tools');
    if (options.judge !== undefined) roles.push('judge');
    await harness.startWorkers(roles);
    return harness;
  }

  private async startWorkers(roles: readonly QueueRole[]): Promise<void> {
    // As an agent worker does once it listed them: its model sees their schemas.
    if (this.options.upstreamTools !== undefined) useUpstreamTools(this.options.upstreamTools);
    const { privateKey, publicKey } = loadOrCreateGrantKeyPair(this.keys.privateFile, this.keys.publicFile);
    const openai = new OpenAI({ baseURL: this.replay.baseUrl, apiKey: 'test', maxRetries: 0 });
    const activities = createActivities({
      agent: {
        openai,
        model: 'replay',
        contents: this.contents,
        contextChars: this.options.contextChars ?? 400_000,
        loadSnapshot: async () =>
          buildSnapshot(parseRulesDocument(this.rules, 'test rules'), 'test rules', {
            roots: this.options.detectorRoots ?? [this.root],
            judgeModel: 'judge',
            judgeTimeoutMs: this.options.judge?.timeoutMs ?? 3000,
            availableTools: this.availableTools,
            ...(this.options.upstreamTools !== undefined ? { upstreamTools: this.options.upstreamTools } : {}),
            ...(this.options.machines !== undefined ? { machines: this.options.machines } : {}),
          }),
        signer: createGrantSigner(privateKey),
        sealer: createSealer(privateKey),
        grantTtlMs: 10 * 60_000,
        audit: this.auditSink,
        reviewerKeys: this.options.reviewerKeys ?? new Map(),
        standing: this.standing,
      },
      tools: roles.includes('tools') ? await this.toolsDeps(createGrantVerifier(publicKey)) : undefined,
      judge:
        this.options.judge === undefined
          ? undefined
          : {
              openai: new OpenAI({ baseURL: this.options.judge.baseUrl, apiKey: 'test', maxRetries: 0 }),
              model: 'judge',
              timeoutMs: this.options.judge.timeoutMs,
            },
    });
    this.workers = await startWorkers(this.env, roles, activities, {
      dataConverter: this.dataConverter,
      ...(this.options.workflowCache !== undefined ? { workflowCache: this.options.workflowCache } : {}),
    });
  }

  private async toolsDeps(verifier: ReturnType<typeof createGrantVerifier>) {
    const roots = await Roots.create([this.root]);
    const services = this.options.services === undefined ? undefined : createServiceCapability(Services.fromConfig(servicesConfigSchema.parse(this.options.services)));
    const capabilities = { ...this.options.capabilities?.(roots), ...(services === undefined ? {} : { services }) };
    const undo = this.options.undoKeepDays === undefined ? {} : { undo: { roots: roots.real, keepDays: this.options.undoKeepDays } };
    return { roots, nonces: this.nonces, journalDir: join(this.dir, 'tools', 'journals'), verifier, capabilities, ...undo };
  }

  /** Stops every worker: jobs stay parked on the server with nothing polling their queues. */
  async stopWorkers(): Promise<void> {
    await this.workers?.stop();
    this.workers = undefined;
  }

  /** Starts the workers again after `stopWorkers`. */
  async resumeWorkers(): Promise<void> {
    const roles: QueueRole[] = ['agent'];
    if (this.options.toolsInProcess !== false) roles.push('tools');
    if (this.options.judge !== undefined) roles.push('judge');
    await this.startWorkers(roles);
  }

  /** Jobs the in-process agent worker holds in its workflow cache now. */
  cachedWorkflows(): number {
    const agent = this.workers?.workers.find((w) => w.options.taskQueue === TaskQueues.agent);
    return agent?.getStatus().numCachedWorkflows ?? 0;
  }

  /** Tools offered to jobs started from now on, as a changed tools config would; running jobs keep their snapshot. */
  setAvailableTools(names: readonly string[]): void {
    this.availableTools = names;
  }

  /** Rules for jobs started from now on; running jobs keep their snapshot. */
  setRules(rules: RulesInput): void {
    this.rules = rules;
  }

  async start(options: {
    script: ReplayScript;
    goal?: string;
    jobId?: string;
    input?: Partial<AgentJobInput>;
  }): Promise<{ jobId: string; handle: WorkflowHandleWithFirstExecutionRunId }> {
    this.replay.setScript(options.script);
    const jobId = options.jobId ?? `job-${Math.random().toString(36).slice(2, 10)}`;
    const input: AgentJobInput = { schemaVersion: 1, goal: options.goal ?? 'test goal', requester: 'tester', ...options.input };
    const handle = await this.airlock.client.workflow.start(AGENT_JOB_WORKFLOW, {
      taskQueue: TaskQueues.agent,
      workflowId: jobId,
      args: [input],
    });
    return { jobId, handle };
  }

  state(jobId: string): Promise<AgentJobStateView> {
    return this.airlock.client.workflow.getHandle(jobId).query(stateQuery);
  }

  async waitFor(
    jobId: string,
    predicate: (view: AgentJobStateView) => boolean,
    what = 'condition',
    timeoutMs = 60_000,
  ): Promise<AgentJobStateView> {
    const deadline = Date.now() + timeoutMs;
    let last: AgentJobStateView | undefined;
    for (;;) {
      try {
        last = await this.state(jobId);
        if (predicate(last)) return last;
      } catch {
        // The first workflow task may not have run yet.
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} on ${jobId}: ${JSON.stringify(last)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  waitForPending(jobId: string, count = 1): Promise<AgentJobStateView> {
    return this.waitFor(jobId, (s) => s.status === 'awaiting_approval' && s.pending.length === count, `${count} pending request(s)`);
  }

  async result(jobId: string): Promise<AgentJobResult> {
    return (await this.airlock.client.workflow.getHandle(jobId).result()) as AgentJobResult;
  }

  /** Model requests of one job, identified by its id in the system prompt. */
  requestsOf(jobId: string): RecordedRequest[] {
    return this.replay.requests.filter((r) => JSON.stringify(r.messages[0] ?? {}).includes(`job ${jobId}`));
  }

  /** The messages the model received last for this job. */
  lastMessages(jobId: string): Array<Record<string, unknown>> {
    const requests = this.requestsOf(jobId);
    return [...(requests[requests.length - 1]?.messages ?? [])];
  }

  /** Every tool result the model has seen for this job, by call id. */
  toolResults(jobId: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const m of this.lastMessages(jobId)) {
      if (m.role === 'tool') out.set(String(m.tool_call_id), String(m.content));
    }
    return out;
  }

  /** Audit events of one job, of one type (typed by it) or all. */
  audit<T extends AuditEventType>(jobId: string, type: T): Array<Extract<AuditEvent, { type: T }>>;
  audit(jobId: string): AuditEvent[];
  audit(jobId: string, type?: AuditEventType): AuditEvent[] {
    const events =
      this.auditSink instanceof MemoryAuditSink
        ? this.auditSink.events
        : readFileSync(this.options.auditFile ?? '', 'utf8')
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => JSON.parse(line) as AuditEvent);
    return events.filter((e) => e.jobId === jobId && (type === undefined || e.type === type));
  }

  /** Environment for spawned airlock processes (CLI, workers) pointed at this namespace. */
  processEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: this.env.address,
      TEMPORAL_NAMESPACE: this.env.namespace,
      AIRLOCK_DATA_DIR: join(this.dir, 'data'),
      ...(this.options.codec === true ? { AIRLOCK_CODEC_KEYS: join(this.dir, 'keys', 'codec.yaml') } : {}),
      ...extra,
    };
  }

  /**
   * A real tools worker process (`dist/`) on this namespace's roots and
   * grant key, its state in the harness folder unless `extra` says
   * otherwise; `close` kills any still running.
   */
  spawnToolsWorker(extra: Record<string, string> = {}): Spawned {
    const worker = spawnNode(
      'dist/workers/airlock-tools.js',
      [],
      this.processEnv({
        // A tools config names its own roots.
        ...(extra.AIRLOCK_TOOLS_CONFIG === undefined ? { AIRLOCK_ROOTS: this.root } : {}),
        AIRLOCK_DATA_DIR: this.dir,
        AIRLOCK_GRANT_PUBLIC_KEY: this.keys.publicFile,
        ...extra,
      }),
    );
    this.spawned.push(worker);
    return worker;
  }

  /** Runs the real CLI (`dist/`, built by `npm test`) against this namespace. */
  async cli(args: string[], extraEnv: Record<string, string> = {}): Promise<{ stdout: string; stderr: string; code: number }> {
    try {
      const { stdout, stderr } = await run(process.execPath, [join(__dirname, '..', '..', 'bin', 'airlock.js'), ...args], {
        env: this.processEnv(extraEnv),
      });
      return { stdout, stderr, code: 0 };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number };
      return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : 1 };
    }
  }

  /** Ends jobs a test left running, so the next test starts clean. */
  async terminateRunning(): Promise<void> {
    for await (const info of this.env.client.workflow.list({ query: 'ExecutionStatus = "Running"' })) {
      await this.env.client.workflow.getHandle(info.workflowId).terminate('test cleanup').catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    for (const worker of this.spawned) worker.child.kill('SIGKILL');
    await this.terminateRunning().catch(() => undefined);
    await this.workers?.stop();
    await this.replay.close();
    await this.airlock.close();
    await this.nonces.close();
    await this.standing.close();
    if (this.options.contents === undefined) await this.contents.close();
    await this.env.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
