import type { GrantClaims } from '../../core/approval/grants';
import { ApplicationFailure } from '@temporalio/activity';
import { FailureTypes } from '../../core/temporal/failure-types';
import type { ContentPreview } from '../../core/tools/content-preview';
import type { ObservedState } from '../../core/tools/observed-state';
import { lendHost } from '../../core/tools/lend';
import { getTool, type AnyTool } from '../../core/tools/registry';
import type { Capability, HostFor, ToolHost } from '../../core/tools/tool-host';
import type { Prepared, ToolOutcome } from '../../core/tools/tool-module';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { GrantVerifier } from '../../host/keys/grant-keys';
import type { NonceStore } from '../../host/stores/nonces/store';
import { messageOf } from '../../host/fs/descriptors';
import { createCallJournal, journalFile } from '../../host/tools/move-journal';
import { rmSync } from 'node:fs';
import { createToolHost, type ToolHostDeps } from '../../host/tools/tool-host';
import type { AirlockMetrics } from '../metrics';
import { attemptAbandoned } from '../heartbeat';
import type { UndoKeeping } from './keep-undo';
import type { ApprovedCheck, CrashPoint } from './messages';


/** What an approved call keeps for undo: what its card promised ('required'), nothing when a rule chose so ('never'), else what it can. */
export type KeepForUndo = 'required' | 'if_possible' | 'never';

export function keepForUndo(approved: ApprovedCheck | undefined): KeepForUndo {
  if (approved?.reversible === true) return 'required';
  return approved?.keep === false ? 'never' : 'if_possible';
}

export interface ToolGateDeps extends ToolHostDeps {
  readonly nonces: NonceStore;
  readonly verifier: GrantVerifier;
  readonly now?: () => number;
  /**
   * TEST ONLY (`AIRLOCK_TEST_CRASH_AT`): `execute` stops at this point,
   * says so on stderr, and waits there for the test to kill the process.
   */
  readonly testCrashAt?: CrashPoint;
  /** How long a consumed nonce's holder must have been silent before a retry settles it; default 20 s. */
  readonly claimStaleMs?: number;
  /** Counts executions and reconciliations; default: nothing. */
  readonly metrics?: AirlockMetrics;
  /** Where calls keep their journals (a file per grant nonce); unset: tools that need one (bulk moves) refuse to run. */
  readonly journalDir?: string;
  /** AIRLOCK_MACHINE: the machine this worker acts on when the tools config lists several; it refuses calls for any other. */
  readonly machine?: string;
}

/**
 * The tools worker's hands, shared by every step of the gate: the host it
 * lends a tool, what the tool observes of its targets, the tool run itself,
 * and the points where a test may stop `execute`.
 */
export interface ToolRunner {
  readonly deps: ToolGateDeps;
  readonly now: () => number;
  readonly host: ToolHost;
  /** The host the tool's hooks get; a tool this worker is not configured for is refused, never run half-way. */
  lent(tool: AnyTool): HostFor<Capability>;
  /** The host of one call's hooks: the lent capabilities, plus the journal kept under the call's nonce. */
  callHost(tool: AnyTool, nonce: string): HostFor<Capability>;
  /** The tool's `prepare`, whose per-target problems become the reviewer's warnings. */
  observeTargets(tool: AnyTool, args: unknown): Promise<Prepared & { warnings: string[] }>;
  /** What the call would change, for the reviewer (tools without a preview: undefined). */
  previewOf(tool: AnyTool, args: unknown, observed: readonly ObservedState[]): Promise<ContentPreview | undefined>;
  /**
   * Runs the tool itself; a failure inside it is an outcome (the nonce is
   * spent), never a retry. A reversible change keeps what it replaces under
   * the nonce; `keep` 'required' (the approved card said so) makes one that
   * cannot refuse instead, 'never' (a rule chose so) keeps nothing.
   */
  runTool(tool: AnyTool, args: unknown, before: readonly ObservedState[] | undefined, grant: Pick<GrantClaims, 'nonce' | 'definition'>, keep?: KeepForUndo): Promise<ToolOutcome>;
  /** What keeping the call's undo record needs: the files capability, the call's journal, the store, the clock. */
  undoKeeping(tool: AnyTool, nonce: string): UndoKeeping;
  /** TEST ONLY: stops here for good when the test asked for it, so it can kill the process at exactly this point. */
  crashPoint(point: CrashPoint): Promise<void>;
  /**
   * The call's outcome is in the store: its journal (plain paths of a bulk
   * move) is no longer needed by anything, and goes. Best effort: what a
   * crash leaves is removed by retention.
   */
  forgetJournal(nonce: string): Promise<void>;
}

/** The registered tool of that name; a control tool or an unknown name is bad input, never retried. */
export function toolOrFail(name: string): AnyTool {
  const tool = getTool(name);
  if (tool === undefined || tool.category === 'control') {
    throw ApplicationFailure.nonRetryable(`unknown tool ${JSON.stringify(name)}`, FailureTypes.InvalidInput);
  }
  return tool;
}

/**
 * A call is for one machine (the workflow routes it to that machine's
 * queue); a worker of another machine, or a single-machine worker given a
 * machine's call, refuses it before looking at anything: its roots,
 * services and commands are not the ones the call was decided for.
 */
export function onThisMachine(deps: { readonly machine?: string }, machine: string | undefined): void {
  if (deps.machine === machine) return;
  const meant = machine === undefined ? 'a single-machine setup (no AIRLOCK_MACHINE)' : `machine ${machine}`;
  const here = deps.machine === undefined ? 'has no AIRLOCK_MACHINE' : `is machine ${deps.machine}`;
  throw ApplicationFailure.nonRetryable(`this call is for ${meant}, but this tools worker ${here}; it was not run`, FailureTypes.WrongMachine);
}

/**
 * A call's arguments, parsed with the tool's schema. Bad arguments are a
 * clear, final refusal (what was wrong, in the words the reviewer and the
 * model see), never a schema library's dump and never a retry.
 */
export function argsOrFail(tool: AnyTool, args: unknown): unknown {
  const parsed = tool.parameters.safeParse(args);
  if (parsed.success) return parsed.data;
  const detail = parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.map(String).join('.') : '(arguments)'}: ${i.message}`)
    .join('; ');
  throw ApplicationFailure.nonRetryable(`invalid arguments for ${tool.name}: ${detail}`, FailureTypes.InvalidInput);
}

export function notConfigured(tool: AnyTool, missing: readonly Capability[]): string {
  return `tool ${tool.name} is not configured on this tools worker (its tools config grants no ${missing.join(', ')})`;
}

/** Stops for good, saying where on stderr: the test that asked kills the process here. */
async function pauseForever(point: string): Promise<never> {
  process.stderr.write(`airlock test: execute paused ${point} (AIRLOCK_TEST_CRASH_AT)\n`);
  return new Promise<never>(() => undefined);
}

/** TEST ONLY: `mid-write` stops a write half way; `mid-undo:N` stops a bulk move's undo once N entries went back. */
function testPauses(point: CrashPoint | undefined): Pick<ToolHostDeps, 'midWrite' | 'midUndo'> {
  if (point === 'mid-write') return { midWrite: () => pauseForever(point) };
  if (point?.startsWith('mid-undo:') !== true) return {};
  const after = Number(point.slice('mid-undo:'.length));
  return { midUndo: async (back) => (back >= after ? pauseForever(point) : undefined) };
}

export function createToolRunner(deps: ToolGateDeps): ToolRunner {
  // The nonce store keeps the undo records `fs_undo` reads and settles.
  const hostDeps = { ...deps, undoRecords: deps.nonces };
  const host = createToolHost({ ...hostDeps, ...testPauses(deps.testCrashAt) });
  const now = deps.now ?? Date.now;

  function lent(tool: AnyTool): HostFor<Capability> {
    const loan = lendHost(tool, host);
    if (!loan.ok) throw ApplicationFailure.nonRetryable(notConfigured(tool, loan.missing), FailureTypes.ToolUnavailable);
    return loan.host;
  }

  function callHost(tool: AnyTool, nonce: string): HostFor<Capability> {
    const base = lent(tool);
    if (deps.journalDir === undefined) return base;
    return { ...base, journal: createCallJournal(deps.journalDir, nonce, { beforeAppend: midBatchPause() }) };
  }

  /** TEST ONLY: with `mid-batch:N`, a journal stops for good before it records its (N+1)th moved entry. */
  function midBatchPause(): ((record: Readonly<Record<string, unknown>>) => Promise<void>) | undefined {
    const point = deps.testCrashAt;
    if (point === undefined || !point.startsWith('mid-batch:')) return undefined;
    const after = Number(point.slice('mid-batch:'.length));
    let moved = 0;
    return async (record) => {
      if (record.step !== 'moved' || ++moved <= after) return;
      await pauseForever(point);
    };
  }

  return {
    deps,
    now,
    host,
    lent,
    callHost,
    async forgetJournal(nonce) {
      if (deps.journalDir === undefined) return;
      // Synchronous: almost every call has no journal, and one unlink is cheaper than a trip through libuv's thread pool.
      try {
        rmSync(journalFile(deps.journalDir, nonce), { force: true });
      } catch {
        // Best effort, as above.
      }
    },
    async observeTargets(tool, args) {
      const prepared = await tool.prepare(lent(tool), args);
      const warnings = prepared.problems.flatMap((p) => (p === undefined ? [] : [p.kind === 'refused' ? `the tool will refuse this call: ${p.reason}` : p.reason]));
      return { ...prepared, warnings };
    },
    async previewOf(tool, args, observed) {
      return tool.preview === undefined ? undefined : tool.preview(lent(tool), args, observed);
    },
    async runTool(tool, args, before, { nonce, definition }, keep = 'if_possible') {
      // Temporal already gave up on this attempt (another may be running): start no effect; the next attempt reconciles.
      if (attemptAbandoned()) throw ApplicationFailure.retryable('this attempt was abandoned before its effect; the next attempt reconciles', FailureTypes.AttemptAbandoned);
      try {
        const hold = keep === 'never' ? {} : { hold: { key: nonce, required: keep === 'required' } };
        return await tool.execute({ ...callHost(tool, nonce), ...hold, ...(definition !== undefined ? { definition } : {}) }, args, before);
      } catch (err) {
        if (err instanceof ToolRefusal) return { ok: false, output: `Refused: ${err.message}` };
        return { ok: false, output: `Error: ${messageOf(err)}` };
      }
    },
    undoKeeping(tool, nonce) {
      return { files: host.files, journal: () => callHost(tool, nonce).journal, records: deps.nonces, now };
    },
    async crashPoint(point) {
      if (deps.testCrashAt === point) await pauseForever(point);
    },
  };
}
