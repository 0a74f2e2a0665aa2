import { z } from 'zod';

/**
 * The approval card's shape: everything a reviewer needs to decide one
 * request, as one versioned record. Audit events and notifications carry
 * it; `core/reviewer/approval-card.ts` builds and renders it.
 */

/** Said on every card: an approval covers this call alone, and an edit is a new call. */
export const EDIT_NOTE = 'this call only; editing creates a new fingerprint';

/** How the CLI is invoked where the reader types: `airlock` from an installed bin on PATH, else `npx airlock`. */
export const cliNames = ['airlock', 'npx airlock'] as const;
export type CliName = (typeof cliNames)[number];

/**
 * What the call changes, shown beside the observed state: a diff of a
 * file's content, a mode before → after, the moves of a bulk move, a
 * service's state before an action. Absent when a tool changes nothing a
 * reviewer could compare (and in cards of builds before).
 */
export const cardChangeSchema = z.discriminatedUnion('kind', [
  /** Unified diff lines of the file as it is against what it would hold (masked, capped). */
  z.object({ kind: z.literal('diff'), path: z.string(), lines: z.array(z.string()), added: z.number(), removed: z.number(), omitted: z.number() }),
  /** No line diff, and why, in words: "binary, 12 KiB → 14 KiB", "too large to compare (3 MiB)". */
  z.object({ kind: z.literal('note'), path: z.string(), text: z.string() }),
  /** Permissions in `rwx` form; `before` null when the target does not exist now. */
  z.object({ kind: z.literal('mode'), path: z.string(), before: z.string().nullable(), after: z.string() }),
  z.object({ kind: z.literal('moves'), rows: z.array(z.object({ from: z.string(), to: z.string() })), more: z.number(), total: z.string() }),
  /** The service as it is before the action: "running, healthy". */
  z.object({ kind: z.literal('service'), service: z.string(), action: z.string(), now: z.string() }),
]);
export type CardChange = z.infer<typeof cardChangeSchema>;

export const approvalCardSchema = z.object({
  schemaVersion: z.literal(1),
  jobId: z.string(),
  requestId: z.string(),
  goal: z.string(),
  /** What will happen, in one sentence: "Delete old-backup.tar (256 KiB) in airlock-demo — cannot be undone" (absent in cards of builds before). */
  action: z.string().optional(),
  /** Once it ran, the change can be taken back this many days (`airlock undo`, the page's Undo); absent when it cannot, and in cards of builds before. */
  undoDays: z.number().int().positive().optional(),
  /** Why a change of a kind airlock can keep for undo will not be kept ("/srv/media is not set up for undo"); absent when it will be, for tools that keep nothing, and in cards of builds before. */
  undoWhy: z.string().optional(),
  /** `target` is `machine:target` on a machine of several. */
  operation: z.object({ tool: z.string(), target: z.string(), args: z.unknown(), summary: z.string() }),
  /** The machine the call runs on; absent with one machine (and in cards of builds before machines). */
  machine: z.string().optional(),
  /** What the call changes (absent when there is nothing to compare, and in cards of builds before). */
  change: cardChangeSchema.optional(),
  observed: z.array(
    z.object({
      path: z.string(),
      exists: z.boolean(),
      /** One line: type, size or folder totals, mode, digest. */
      text: z.string(),
      /** Folder totals below it, when observed deeply (files only when counted). */
      files: z.number().nullable(),
      entries: z.number().nullable(),
      bytes: z.number().nullable(),
    }),
  ),
  rule: z.object({ id: z.string(), version: z.number(), reason: z.string() }),
  /** The model's own words in the turn that proposed the call; null when it gave none (or an older build parked it). */
  statedReason: z.string().nullable(),
  /** The other calls of the same batch and what happens to them. */
  otherCalls: z.array(z.object({ tool: z.string(), target: z.string(), decision: z.string(), requestId: z.string().nullable() })),
  editable: z.array(z.string()),
  editNote: z.literal(EDIT_NOTE),
  requester: z.string(),
  /** null: anyone may decide. */
  reviewers: z.array(z.string()).nullable(),
  /** Who may decide and how, in words: "alice, bob; a signed decision (key or passkey); not the requester" (absent in cards of builds before). */
  mayDecide: z.string().optional(),
  createdAt: z.string(),
  expiresAt: z.string(),
  /** "waiting 3m" */
  waiting: z.string(),
  /** "expires in 23h", or "expired 5m ago" */
  expires: z.string(),
  fingerprint: z.string(),
  commands: z.object({ approve: z.string(), deny: z.string(), edit: z.string().nullable() }),
  /** What a standing approval of this call would cover, in one sentence, and how to ask for one (absent: its rules allow none, and in cards of builds before). */
  standing: z.object({ offer: z.string(), command: z.string() }).optional(),
});
export type ApprovalCard = z.infer<typeof approvalCardSchema>;
