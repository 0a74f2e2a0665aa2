import { mkdirSync } from 'node:fs';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { dataConverterFor } from '../host/temporal/data-converter';
import { createActivities, type Activities } from '../activities';
import type { AirlockMetrics } from '../activities/metrics';
import { type AuditSink } from '../host/stores/audit-log/store';
import { JsonlAuditSink } from '../host/stores/audit-log/jsonl';
import { PostgresAuditLog } from '../host/stores/audit-log/postgres';
import { createGrantSigner, createGrantVerifier, loadGrantPublicKey, loadOrCreateGrantKeyPair } from '../host/keys/grant-keys';
import { createSealer } from '../host/keys/seal';
import type { NonceStore } from '../host/stores/nonces/store';
import { PostgresNonceStore } from '../host/stores/nonces/postgres';
import { SqliteNonceStore } from '../host/stores/nonces/sqlite';
import { type Database } from '../host/stores/database/postgres';
import { openCheckedDatabase } from '../host/stores/database/open';
import { PostgresPasskeyInvites } from '../host/stores/passkey-invites/postgres';
import type { RetentionTask } from '../host/retention';
import { ReviewerKeysFile } from '../host/keys/reviewer-keys';
import { checkRuleMachines, loadPolicySnapshotFrom } from '../host/config/rules-file';
import { requireStateOutsideRoots } from '../host/config/state-outside-roots';
import { connectionOptionsOf, temporalTarget } from '../host/temporal/target';
import { Roots } from '../host/fs/roots';
import { purgeExpiredHolds } from '../host/tools/holding';
import { type UndoSettings } from '../host/tools/undo-settings';
import type { ToolHostDeps } from '../host/tools/tool-host';
import { checkModelEndpoint, type AirlockConfig } from '../core/config/config';
import type { QueueRole } from '../core/temporal/task-queues';
import { type ContentStore } from '../host/stores/contents/store';
import { SqliteContentStore } from '../host/stores/contents/sqlite';
import { PostgresContentStore } from '../host/stores/contents/postgres';
import { createModelClient } from '../host/model-client';
import { statePaths } from '../host/config/paths';
import { SqliteNotificationOutbox } from '../host/stores/outbox/sqlite';
import { PostgresNotificationOutbox } from '../host/stores/outbox/postgres';
import { Notifier } from '../host/notifier';
import { loadToolsSetup, machineSetup, snapshotSettingsOf, ToolsConfigError, undoSettingsOf, withUpstreamTools } from '../host/config/tools-config-file';
import { trustSummary, UpstreamServers } from '../host/mcp-upstream/upstream-servers';
import { useUpstreamTools } from '../core/tools/registry';
import { packageVersion } from '../host/package-version';
import { CommandAllowlist } from '../host/commands/command-allowlist';
import { pruneJournals } from '../host/tools/move-journal';
import { SealedStatesNonceStore } from '../host/stores/nonces/sealed-states';
import { SqlitePasskeyCounters } from '../host/stores/passkey-counters/sqlite';
import { PostgresPasskeyCounters } from '../host/stores/passkey-counters/postgres';
import { SqliteStandingApprovals } from '../host/stores/standing-approvals/sqlite';
import { PostgresStandingApprovals } from '../host/stores/standing-approvals/postgres';
import { AesGcmCodec, loadCodecKeys } from '../host/temporal/payload-codec';
import { codecOn } from '../host/temporal/locality';
import { commandEntries } from '../core/config/tools/commands';
import { createServiceCapability } from '../host/services/service-capability';
import { Services } from '../host/services/services';
import type { MachineSection } from '../core/config/tools/tools-config';
import { httpCapabilityFor } from '../host/net/http-capability';
import { commandCapabilityFor } from '../host/commands/command-capability';

let aliasNoted = false;

/**
 * The shared database when one is configured, its schema checked: a worker
 * refuses, at start, a schema it does not know (one line naming both
 * versions and the command to run). Without one, state stays in the data
 * folder's SQLite files.
 */
export async function openDatabase(config: AirlockConfig): Promise<Database | undefined> {
  const settings = config.database;
  if (settings === undefined) return undefined;
  if (settings.setting === 'AIRLOCK_CONTENT_DB' && !aliasNoted) {
    aliasNoted = true;
    process.stderr.write('airlock: AIRLOCK_CONTENT_DB is the earlier name of AIRLOCK_DATABASE_URL; the database now holds all shared state (rename the variable)\n');
  }
  return openCheckedDatabase(settings, { applicationName: 'airlock-worker' });
}

/** The conversation store: the shared database when configured, else the data folder's SQLite file. */
function openContentStore(db: Database | undefined, sqliteFile: string): ContentStore {
  return db === undefined ? new SqliteContentStore(sqliteFile) : PostgresContentStore.on(db);
}

/** The nonce/outcome store: the shared database when configured (every tools worker on every machine), else the data folder's SQLite file. */
async function openNonceStore(db: Database | undefined, sqliteFile: string, config?: AirlockConfig): Promise<NonceStore> {
  const store = await openPlainNonceStore(db, sqliteFile);
  // With payload keys, what a call recorded of its targets is stored encrypted too.
  if (config === undefined || !codecOn(config)) return store;
  return new SealedStatesNonceStore(store, new AesGcmCodec(loadCodecKeys(statePaths(config).codecKeys)));
}

async function openPlainNonceStore(db: Database | undefined, sqliteFile: string): Promise<NonceStore> {
  if (db !== undefined) return PostgresNonceStore.open(db);
  const nonces = new SqliteNonceStore(sqliteFile);
  if (nonces.origin.kind === 'replaced_lost') {
    // Said once, loudly: retried calls are now reconciled against the file system (see `execute`).
    process.stderr.write(
      `airlock: the nonce store ${sqliteFile} was missing although store ${nonces.origin.lostId} existed there; started a new store ${nonces.id}. ` +
        'Retried calls will be reconciled against the file system; restore the old file from a backup (with the worker stopped) if you have one\n',
    );
  }
  return nonces;
}

/** What the tools config lends the tools besides the files in the roots; what it does not list stays absent. */
function lentCapabilities(config: MachineSection | undefined, roots: Roots, servicesOn: boolean): NonNullable<ToolHostDeps['capabilities']> {
  const commands = config?.commands ?? {};
  return {
    ...(servicesOn && config?.services !== undefined ? { services: createServiceCapability(Services.fromConfig(config.services)) } : {}),
    ...(config?.hosts === undefined ? {} : { http: httpCapabilityFor(config.hosts) }),
    ...(Object.keys(commands).length === 0 ? {} : { commands: commandCapabilityFor(commands, roots) }),
  };
}

/** The agent side's audit log: the shared database's table when configured, else the data folder's JSONL file. */
export function openAuditSink(config: AirlockConfig, db: Database | undefined): AuditSink {
  return db === undefined ? new JsonlAuditSink(statePaths(config).audit) : new PostgresAuditLog(db);
}

/**
 * The agent side's notifier when endpoints are configured: it shares the
 * agent's audit log (a failed delivery is audited there), and keeps what
 * it owes in the shared database when configured (any agent worker then
 * delivers it), else in the data folder. The caller starts and stops its
 * delivery loop with the workers.
 */
export function openNotifier(config: AirlockConfig, audit: AuditSink, db: Database | undefined): Notifier | undefined {
  const { notify } = config;
  if (notify.endpoints.length === 0) return undefined;
  return new Notifier({
    outbox: db === undefined ? new SqliteNotificationOutbox(statePaths(config).notifications) : new PostgresNotificationOutbox(db),
    endpoints: notify.endpoints,
    context: { namespace: config.temporal.namespace, webUiUrl: notify.webUiUrl, approvalPageUrl: notify.approvalPageUrl },
    attempts: notify.attempts,
    backoffMs: notify.backoffMs,
    timeoutMs: notify.timeoutMs,
    audit,
  });
}

/**
 * Real dependencies for the activities of the given queues, built from
 * configuration. Everything that can be wrong with the configuration fails
 * here, at start-up, not in the middle of a job. `metrics` is what the
 * activities count into (the worker's Prometheus endpoint); default: nothing.
 */
export async function buildActivities(
  config: AirlockConfig,
  roles: readonly QueueRole[],
  metrics?: AirlockMetrics,
  /**
   * What the process shares with the activities: the database (see
   * `openDatabase`; default: opened here when configured), and the agent
   * worker's audit log and notifier (see `openAuditSink`, `openNotifier`;
   * default: a log of its own, no notifications).
   */
  shared: { readonly db?: Database | undefined; readonly audit?: AuditSink; readonly notifier?: Notifier | undefined } = {},
): Promise<Activities> {
  const counted = metrics === undefined ? {} : { metrics };
  const paths = statePaths(config);
  if (roles.includes('agent')) checkModelEndpoint(config, 'model');
  if (roles.includes('judge')) checkModelEndpoint(config, 'judge');

  // One tools config for both sides: the agent offers what the tools worker can run, and its detectors know the same roots.
  const configured = roles.includes('agent') || roles.includes('tools') ? await loadToolsSetup(config) : undefined;
  // Upstream MCP servers are listed once at start: the agent offers their tools, the tools worker keeps the connections to call them.
  const upstream = configured?.config?.mcp === undefined ? undefined : await UpstreamServers.connect({ config: configured.config.mcp, file: configured.file ?? '(none)', version: packageVersion() });
  if (upstream !== undefined) {
    useUpstreamTools(upstream.specs);
    // Which upstream tools run with no person asked, and why: said once, where the operator starts the worker.
    for (const line of trustSummary(upstream.specs)) process.stderr.write(`${line}\n`);
  }
  const tools = configured === undefined || upstream === undefined ? configured : withUpstreamTools(configured, upstream.specs);
  if (upstream !== undefined && !roles.includes('tools')) await upstream.close();
  const db = shared.db ?? (roles.includes('agent') || roles.includes('tools') ? await openDatabase(config) : undefined);

  let agent;
  if (roles.includes('agent') && tools !== undefined) {
    const snapshotSettings = snapshotSettingsOf(config, tools);
    // Validate the rules now: an invalid file stops start-up with every problem listed.
    checkRuleMachines(await loadPolicySnapshotFrom(paths.rulesFile, snapshotSettings), tools.machines?.map((m) => m.name));
    const { privateKey } = loadOrCreateGrantKeyPair(paths.grantPrivateKey, paths.grantPublicKey);
    agent = {
      openai: createModelClient(config.model, config.model.timeoutMs),
      model: config.model.name,
      contents: openContentStore(db, paths.contents),
      contextChars: config.model.contextChars,
      loadSnapshot: () => loadPolicySnapshotFrom(paths.rulesFile, snapshotSettings),
      signer: createGrantSigner(privateKey),
      sealer: createSealer(privateKey),
      grantTtlMs: config.grants.ttlMs,
      audit: shared.audit ?? openAuditSink(config, db),
      ...(shared.notifier !== undefined ? { notifier: shared.notifier } : {}),
      // A configured keys file must exist; the default one is read once it does. Both are read again when they change.
      reviewerKeys: ReviewerKeysFile.open(paths.reviewerKeys, { mustExist: config.reviewerKeysFile !== undefined }),
      // Shared by every agent worker: the database's table when configured, else the data folder's file.
      passkeyCounters: db === undefined ? new SqlitePasskeyCounters(paths.passkeyCounters) : new PostgresPasskeyCounters(db),
      standing: db === undefined ? new SqliteStandingApprovals(paths.standingApprovals) : new PostgresStandingApprovals(db),
      ...counted,
    };
  }

  let toolDeps;
  if (roles.includes('tools') && tools !== undefined) {
    const local = machineSetup(tools, config);
    if (config.roots === undefined && local.section?.roots === undefined) mkdirSync(paths.sandbox, { recursive: true, mode: 0o700 });
    const nonces = await openNonceStore(db, paths.nonces, config);
    if (config.testCrashAt !== undefined) {
      process.stderr.write(`airlock: AIRLOCK_TEST_CRASH_AT=${config.testCrashAt} is set: this tools worker stops every call there on purpose (tests only)\n`);
    }
    const roots = await Roots.create(local.roots, local.rootsFrom);
    // A root holding airlock's keys, stores or policy files would put them in the model's reach.
    await requireStateOutsideRoots(config, roots.real, tools.file);
    // What the programs really are (links and other names of the same file): a wrapper without `wraps` stops the worker here.
    const launchers = await new CommandAllowlist(commandEntries(local.section?.commands ?? {}), roots.real).launchers();
    if (launchers.length > 0) {
      throw new ToolsConfigError(tools.file ?? '(none)', launchers.map((l) => ({ field: `commands.${l.name}.path`, message: l.reason.replace(/; tell the operator$/, '') })));
    }
    const undo = undoSettingsOf(tools, local, roots);
    toolDeps = {
      roots,
      ...(undo !== undefined ? { undo } : {}),
      capabilities: { ...lentCapabilities(local.section, roots, local.availability.services), ...(upstream !== undefined ? { upstream } : {}) },
      nonces,
      journalDir: paths.journals,
      verifier: createGrantVerifier(loadGrantPublicKey(paths.grantPublicKey)),
      ...(local.machine !== undefined ? { machine: local.machine } : {}),
      ...(config.testCrashAt !== undefined ? { testCrashAt: config.testCrashAt } : {}),
      ...counted,
    };
  }

  const judge = roles.includes('judge')
    ? { openai: createModelClient(config.judge, config.judge.timeoutMs), model: config.judge.model, timeoutMs: config.judge.timeoutMs, ...counted }
    : undefined;

  return createActivities({ agent, tools: toolDeps, judge });
}

/** Whether a job is running, asked of Temporal (a job it no longer knows is not); for retention, which keeps running jobs' conversations. */
export function temporalJobs(config: AirlockConfig): { running(jobId: string): Promise<boolean>; close(): Promise<void> } {
  let client: Promise<{ client: Client; connection: Connection }> | undefined;
  return {
    async running(jobId) {
      const target = temporalTarget(config);
      client ??= Connection.connect(connectionOptionsOf(target)).then((connection) => ({
        connection,
        client: new Client({ connection, namespace: target.namespace, dataConverter: dataConverterFor(config) }),
      }));
      try {
        return (await (await client).client.workflow.getHandle(jobId).describe()).status.name === 'RUNNING';
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      }
    },
    async close() {
      await client?.then((c) => c.connection.close()).catch(() => undefined);
    },
  };
}

/**
 * What this worker removes once it is old enough: the tools side its nonce
 * store's rows; the agent side the conversations of jobs that are over,
 * old audit events and, with the shared database, expired passkey invites
 * (the approval page removes those of a data folder).
 */
/** This tools worker's undo roots, as its tools config says now (read at each round: an edit takes effect without a restart of retention). */
async function undoSettingsFor(config: AirlockConfig): Promise<UndoSettings | undefined> {
  const setup = await loadToolsSetup(config);
  const local = machineSetup(setup, config);
  if (local.section?.undo === undefined) return undefined;
  return undoSettingsOf(setup, local, await Roots.create(local.roots, local.rootsFrom));
}

export function retentionTasks(
  config: AirlockConfig,
  roles: readonly QueueRole[],
  db: Database | undefined,
  audit: AuditSink | undefined,
  jobs?: { running(jobId: string): Promise<boolean> },
): RetentionTask[] {
  const { finishedMs, auditMs } = config.retention;
  const tasks: RetentionTask[] = [];
  if (roles.includes('tools')) {
    let nonces: Promise<NonceStore> | undefined;
    tasks.push({ name: 'nonce/outcome rows', run: async () => (await (nonces ??= openNonceStore(db, statePaths(config).nonces))).prune(finishedMs) });
    tasks.push({ name: 'call journals left by crashes', run: () => pruneJournals(statePaths(config).journals, finishedMs) });
    tasks.push({ name: 'undo records restored or purged', run: async () => (await (nonces ??= openNonceStore(db, statePaths(config).nonces))).pruneUndo(finishedMs) });
    tasks.push({ name: 'held entries past their undo time', run: async () => purgeExpiredHolds(await undoSettingsFor(config), await (nonces ??= openNonceStore(db, statePaths(config).nonces)), Date.now()) });
  }
  if (roles.includes('agent') && jobs !== undefined) {
    const contents = openContentStore(db, statePaths(config).contents);
    tasks.push({ name: 'conversation texts of finished jobs', run: () => contents.prune(finishedMs, (jobId) => jobs.running(jobId)) });
  }
  if (roles.includes('agent') && audit !== undefined) tasks.push({ name: 'audit events', run: () => audit.prune(auditMs) });
  if (roles.includes('agent') && db !== undefined) {
    const invites = new PostgresPasskeyInvites(db);
    tasks.push({ name: 'expired passkey invites', run: () => invites.prune(finishedMs) });
  }
  return tasks;
}
