import { submitCallInputSchema, type SubmitCallInput } from '../../core/job/client-calls';
import { canonicalJson } from '../../core/util/canonical-json';
import { sha256Hex } from '../../core/util/sha256';

/** A client's call the job took: what a retry while it waits for a reviewer is compared with. */
export interface TakenCall {
  readonly toolName: string;
  readonly argsDigest: string;
}

/** As the workflow digests a client's arguments (canonical JSON, as sent). */
const argsDigest = (args: unknown) => sha256Hex(canonicalJson(args));

/**
 * A client-driven job's calls as its history holds them: each accepted
 * `submitCall` update, in the order accepted, until the `evaluatePolicy`
 * plan that took it. The workflow's rules: a key the job already took is
 * answered from its state (a retry, in this run or a later one), and so is
 * the same tool with the same arguments while that call waits for a
 * reviewer; neither is a new call. Only a plan makes a call taken: a call
 * the job answered without one never reached the gate.
 */
export class SubmittedCalls {
  /** Accepted in this run and not taken yet; a run that ends first tells its client to send it again (to the next run). */
  private readonly waiting: SubmitCallInput[] = [];

  constructor(private readonly taken: Map<string, TakenCall>) {}

  /** One accepted update's input; `parked` says whether a taken call still waits for its reviewer. */
  accept(raw: unknown, parked: (callKey: string) => boolean): void {
    const parsed = submitCallInputSchema.safeParse(raw);
    if (!parsed.success) return;
    const input = parsed.data;
    if (this.taken.has(input.callKey) || this.waiting.some((w) => w.callKey === input.callKey)) return;
    const digest = argsDigest(input.args);
    for (const [key, call] of this.taken) {
      if (call.toolName === input.toolName && call.argsDigest === digest && parked(key)) return;
    }
    this.waiting.push(input);
  }

  /**
   * The call ids of a plan that take waiting calls (a client's call id is its
   * key), now taken. None for a plan of calls taken before: a parked call
   * evaluated again after a reviewer's edit.
   */
  take(callIds: readonly string[]): ReadonlySet<string> {
    const took = new Set<string>();
    for (const id of callIds) {
      const i = this.waiting.findIndex((w) => w.callKey === id);
      const input = this.waiting[i];
      if (input === undefined) continue;
      this.waiting.splice(i, 1);
      this.taken.set(id, { toolName: input.toolName, argsDigest: argsDigest(input.args) });
      took.add(id);
    }
    return took;
  }
}
