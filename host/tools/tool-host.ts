import type { ToolHost } from '../../core/tools/tool-host';
import type { Roots } from '../fs/roots';
import { createFileCapability } from './file-host';
import type { UndoSettings } from './undo-settings';
import type { TreeLimits } from './tree';
import type { UndoRecords } from '../stores/nonces/undo-records';

/** What the tools worker was configured with: the roots, and whichever other capabilities its tools config grants. */
export interface ToolHostDeps {
  /** The roots of the file tools (the `files` capability), always configured. */
  readonly roots: Roots;
  /** The other capabilities the tools config grants; a tool needing one that is absent is refused. */
  readonly capabilities?: Omit<ToolHost, 'files' | 'journal' | 'hold'>;
  readonly hashLimitBytes?: number;
  /** Folders past these cannot be observed exactly, so calls on them are never approvable to run. */
  readonly treeLimits?: TreeLimits;
  /** The roots whose file changes are kept for undo (tools config `undo`); unset: none. */
  readonly undo?: UndoSettings;
  /** Where reversible changes' records are kept (the nonce/outcome store); unset: nothing can be undone. */
  readonly undoRecords?: UndoRecords;
  /** TEST ONLY: where a new file's write stops half way (see `FsToolOptions`). */
  readonly midWrite?: () => Promise<void>;
  /** TEST ONLY: called before each entry a bulk move's undo moves back, with how many went back so far. */
  readonly midUndo?: (back: number) => Promise<void>;
}

/** The capabilities lent to tool modules on this worker. */
export function createToolHost(deps: ToolHostDeps): ToolHost {
  return {
    ...deps.capabilities,
    files: createFileCapability(deps.roots, { hashLimitBytes: deps.hashLimitBytes, treeLimits: deps.treeLimits, undo: deps.undo, ...(deps.undoRecords !== undefined ? { undoRecords: deps.undoRecords } : {}), ...(deps.midWrite !== undefined ? { midWrite: deps.midWrite } : {}), ...(deps.midUndo !== undefined ? { midUndo: deps.midUndo } : {}) }),
  };
}
