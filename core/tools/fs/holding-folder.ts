/**
 * The folder in each root where airlock keeps what an undo can restore
 * (a deleted entry moved aside, a file's earlier content). It belongs to
 * airlock: no tool reads, lists, changes or names anything in it, so a
 * model cannot reach held data and no rule ever matches it. Only the name
 * directly inside a root is reserved; a folder of that name deeper down is
 * an ordinary folder.
 */
export const HOLDING_FOLDER = '.airlock-undo';

/** Whether an entry is a root's holding folder: its name, directly in a root. */
export function isHoldingFolder(name: string, inRoot: boolean): boolean {
  return inRoot && name === HOLDING_FOLDER;
}
