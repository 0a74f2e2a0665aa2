import { statfsSync } from 'node:fs';
import type { UndoQuota } from '../../core/config/tools/tools-config';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { HoldSlot, Reversibility } from '../../core/tools/undo';
import { humanSize } from '../../core/util/human-size';
import type { UndoRecords } from '../stores/nonces/undo-records';
import { withRoot } from './call-folder';
import { fstatFd } from '../fs/descriptors';
import type { Pinned } from '../fs/pinned-path';

/** Which roots keep their changes for undo, how long, how much: what every reversible change asks before it keeps anything. */

/** The tools config's `undo`: the roots (real paths) whose changes are kept, for how long, and how much each may keep. */
export interface UndoSettings {
  readonly roots: readonly string[];
  readonly keepDays: number;
  /** Absent: the smaller of 10 % of the root's file system and 20 GiB. */
  readonly quota?: UndoQuota;
}

const DEFAULT_QUOTA_BYTES = 20 * 1024 ** 3;
const DEFAULT_QUOTA_PERCENT = 10;

/** The most a root may keep for undo at once, in bytes. */
export function quotaBytes(root: string, quota: UndoQuota | undefined): number {
  if (quota?.bytes !== undefined) return quota.bytes;
  const fs = statfsSync(root);
  const share = (fs.blocks * fs.bsize * (quota?.percent ?? DEFAULT_QUOTA_PERCENT)) / 100;
  return quota === undefined ? Math.min(share, DEFAULT_QUOTA_BYTES) : share;
}

/**
 * Why keeping `bytes` more in the root would pass its quota (what its held
 * records keep, plus this); undefined while it fits, or when no record
 * store counts here. A size not known (a folder past the tree limits) is
 * never taken to fit.
 */
export async function overQuota(root: string, settings: UndoSettings, records: Pick<UndoRecords, 'heldBytes'> | undefined, bytes: number | undefined): Promise<string | undefined> {
  if (records === undefined) return undefined;
  if (bytes === undefined) return `its size is not known, so it cannot be counted against ${root}'s undo quota`;
  const held = await records.heldBytes(root);
  const limit = quotaBytes(root, settings.quota);
  if (held + bytes <= limit) return undefined;
  return `keeping ${humanSize(bytes)} more would pass ${root}'s undo quota (${humanSize(held)} kept of ${humanSize(limit)})`;
}

/** Whether a change of the pinned target can be kept for undo now. */
export function reversibilityOf(target: Pinned, settings: UndoSettings | undefined): Reversibility {
  if (settings === undefined || !settings.roots.includes(target.root)) return { reversible: false, why: `${target.root} is not set up for undo` };
  if (target.stats !== null) {
    const root = withRoot(target.root, (fd) => fstatFd(fd));
    // A rename cannot leave its file system: what is mounted below the root is not kept.
    if (target.stats.dev !== root.dev) return { reversible: false, why: `${target.path} is on another file system than ${target.root}` };
  }
  return { reversible: true, keepDays: settings.keepDays };
}

/**
 * A change that cannot be kept: refused, having changed nothing, when the
 * reviewer was promised it reversible; otherwise false (the change goes on
 * without undo, as in a root not set up for it).
 */
export function notKept(slot: HoldSlot, why: string): false {
  if (slot.required) throw new ToolRefusal(`the approved change was to be reversible, but ${why}; nothing was changed`);
  return false;
}

/** Why the change cannot be kept now (not set up, another file system, or, for one no card promised, past the quota); undefined when it can. */
export async function whyNotKept(target: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, records?: Pick<UndoRecords, 'heldBytes'>): Promise<string | undefined> {
  const can = reversibilityOf(target, settings);
  if (!can.reversible) return can.why;
  // The quota was checked for the card; a change no card promised is kept only while it fits.
  if (!slot.required && settings !== undefined) return overQuota(target.root, settings, records, slot.bytes);
  return undefined;
}
