import { requireCodecForRemoteTemporal } from '../../host/temporal/locality';
import { Client, Connection, type ConnectionOptions, type WorkflowExecutionInfo } from '@temporalio/client';
import type { DecisionPayload, WithdrawInput } from '../../core/approval/approvals';
import type { AirlockConfig } from '../../core/config/config';
import type { AgentJobResult } from '../../core/job/job-input';
import type { AgentJobStateView } from '../../core/job/job-view';
import type { JobStatus } from '../../core/temporal/search-attributes';
import { dataConverterFor } from '../../host/temporal/data-converter';
import { connectionOptionsOf, connectTo, temporalTarget } from '../../host/temporal/target';
import { decide, lastAgentPoll, sendDecision, type DecideOptions, type DecideOutcome } from './deciding';
import { cancel, result, startJob, state, stateWithin, temporalStatusText, WORKER_WAIT_MS, type CancelOutcome, type StartedJob, type StartJobOptions } from './jobs';
import { listByStatus, pendingOf, status, type JobStatusInfo, type PendingJob, type PendingOf } from './listing';
import { listPending, pendingPage, type PendingPage } from './pending-pages';
import { submitUndo, undoResult, type SubmittedUndo, type UndoRequest } from './undoing';
import { withdrawRequests, type WithdrawOutcome } from './withdrawing';

/**
 * The typed client the CLI uses: one method per thing a reviewer or
 * operator does, over one connection. Each concern is a module of this
 * folder: `jobs` (start, cancel, state, result), `listing` (what waits and
 * how jobs stand, without a worker), `deciding` (decisions and their
 * outcomes).
 */

export type { CancelOutcome, StartedJob, StartJobOptions } from './jobs';
export { temporalStatusText, WORKER_WAIT_MS };
export type { ActivityInProgress, JobStatusInfo, PendingJob, PendingOf } from './listing';
export { shownStatus } from './listing';
export type { PendingPage } from './pending-pages';
export type { SubmittedUndo, UndoRequest } from './undoing';
export type { WithdrawOutcome } from './withdrawing';
export type { DecideOptions, DecideOutcome } from './deciding';
export { closedJobMessage, coerceEdits, reportedRejection } from './deciding';

export class AirlockClient {
  private constructor(
    readonly client: Client,
    private readonly connection: Connection,
  ) {}

  /** `connection` adds options to the gRPC connection (tests count calls with interceptors). */
  static async connect(config: AirlockConfig, connection?: Pick<ConnectionOptions, 'interceptors'>): Promise<AirlockClient> {
    // A client writes goals, decisions and reasons into history too: to another machine only encrypted, like the workers.
    const target = temporalTarget(config);
    requireCodecForRemoteTemporal(config, target.address);
    // A person waits on this: a server that does not answer within 2 s gets the clear error, not a silent wait.
    const conn = await connectTo(target, () => Connection.connect({ ...connection, ...connectionOptionsOf(target), connectTimeout: 2000 }));
    return new AirlockClient(new Client({ connection: conn, namespace: target.namespace, dataConverter: dataConverterFor(config) }), conn);
  }

  async close(): Promise<void> {
    await this.connection.close();
  }

  startJob(options: StartJobOptions): Promise<StartedJob> {
    return startJob(this.client, options);
  }

  cancel(jobId: string, options: { readonly reason?: string; readonly waitMs?: number } = {}): Promise<CancelOutcome> {
    return cancel(this.client, jobId, options);
  }

  state(jobId: string): Promise<AgentJobStateView> {
    return state(this.client, jobId);
  }

  stateWithin(jobId: string, ms: number): Promise<AgentJobStateView> {
    return stateWithin(this.client, jobId, ms);
  }

  result(jobId: string): Promise<AgentJobResult> {
    return result(this.client, jobId);
  }

  /** Every parked job, `pageSize` jobs per visibility call (default 1000). */
  listPending(options: { readonly pageSize?: number } = {}): Promise<PendingJob[]> {
    return listPending({ client: this.client, ...options });
  }

  /** One visibility call: up to `pageSize` parked jobs, newest first, from `token` (Temporal's) on. */
  pendingPage(options: { readonly pageSize: number; readonly token?: Uint8Array }): Promise<PendingPage> {
    return pendingPage({ client: this.client, ...options });
  }

  pendingOf(jobId: string): Promise<PendingOf> {
    return pendingOf(this.client, jobId);
  }

  status(jobId: string): Promise<JobStatusInfo> {
    return status(this.client, jobId);
  }

  listByStatus(jobStatus: JobStatus): AsyncIterable<WorkflowExecutionInfo> {
    return listByStatus(this.client, jobStatus);
  }

  decide(jobId: string, options: DecideOptions): Promise<DecideOutcome> {
    return decide(this.client, jobId, options);
  }

  /** Starts (or finds) the undo job of a call and submits its `fs_undo`; answered, or parked for a reviewer. */
  submitUndo(request: UndoRequest): Promise<SubmittedUndo> {
    return submitUndo(this.client, request);
  }

  /** The undo job's result once it ends; undefined when it has not within `waitMs`. */
  undoResult(undoJobId: string, waitMs: number): Promise<AgentJobResult | undefined> {
    return undoResult(this.client, undoJobId, waitMs);
  }

  /** Ends every request the job waits for as withdrawn by `by`, for `reason`. */
  withdrawRequests(jobId: string, input: WithdrawInput): Promise<WithdrawOutcome> {
    return withdrawRequests(this.client, jobId, input);
  }

  lastAgentPoll(): Promise<string | null> {
    return lastAgentPoll(this.client);
  }

  sendDecision(jobId: string, payload: DecisionPayload, workerWaitMs = WORKER_WAIT_MS): Promise<DecideOutcome> {
    return sendDecision(this.client, jobId, payload, workerWaitMs);
  }
}
