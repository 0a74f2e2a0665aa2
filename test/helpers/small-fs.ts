import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, openSync, readdirSync, closeSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A real folder that can be made to refuse writes: a 64 KiB tmpfs, filled
 * or remounted read-only, when the tests run as root (CI does), else a
 * folder and its files made read-only (root would ignore that, so it is
 * the fallback only). Mounting as root must work: the tests fail rather
 * than pass without having seen a full disk.
 */
export interface SmallFolder {
  readonly dir: string;
  readonly kind: 'tmpfs' | 'chmod';
  /**
   * From now on writes into the folder fail. `full`: no space left, except
   * what the last page of a file still holds (a write there is cut short);
   * `read-only`: the file system is read-only (EROFS; permission denied
   * without root).
   */
  block(how?: 'full' | 'read-only'): void;
  /** Writes succeed again. */
  unblock(): void;
  close(): void;
}

const FILLER = '.filler';

export function smallFolder(): SmallFolder {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-small-fs-'));
  if (process.getuid?.() !== 0) return readOnlyFolder(dir);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', dir], { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? String(err);
    throw new Error(`the full-disk tests need a small tmpfs, and mounting one as root failed (mount -t tmpfs -o size=64k tmpfs DIR): ${stderr}`);
  }
  let readOnly = false;
  return {
    dir,
    kind: 'tmpfs',
    block(how = 'full') {
      if (how === 'read-only') {
        execFileSync('mount', ['-o', 'remount,ro', dir], { stdio: 'pipe' });
        readOnly = true;
        return;
      }
      const fd = openSync(join(dir, FILLER), 'a');
      const page = Buffer.alloc(4096, 0x2e);
      try {
        for (;;) writeSync(fd, page);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      }
      // A last short write fills what a page left.
      try {
        for (;;) writeSync(fd, page, 0, 1);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
      } finally {
        closeSync(fd);
      }
    },
    unblock() {
      if (readOnly) execFileSync('mount', ['-o', 'remount,rw', dir], { stdio: 'pipe' });
      readOnly = false;
      rmSync(join(dir, FILLER), { force: true });
    },
    close() {
      execFileSync('umount', [dir], { stdio: 'pipe' });
      readOnly = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readOnlyFolder(dir: string): SmallFolder {
  const setModes = (file: number, folder: number) => {
    for (const name of readdirSync(dir)) chmodSync(join(dir, name), file);
    chmodSync(dir, folder);
  };
  return {
    dir,
    kind: 'chmod',
    block: () => setModes(0o400, 0o500),
    unblock: () => setModes(0o600, 0o700),
    close() {
      setModes(0o600, 0o700);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
