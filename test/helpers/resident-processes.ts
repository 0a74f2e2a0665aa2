import { readdirSync, readFileSync } from 'node:fs';

/**
 * The resident CLI processes (cli/resident/) started with a runtime
 * folder under `folder`: pid → commands run, read from the title `ps`
 * shows (`airlock resident CLI: N commands`) and the process's
 * `XDG_RUNTIME_DIR`. Processes of other users, or gone meanwhile, are
 * skipped.
 */
export function residentsUnder(folder: string): Map<number, number> {
  const found = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const served = /^airlock resident CLI: (\d+) commands/.exec(readFileSync(`/proc/${entry}/cmdline`, 'utf8'));
      if (served === null) continue;
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      const place = environ.find((v) => v.startsWith('XDG_RUNTIME_DIR='))?.slice('XDG_RUNTIME_DIR='.length);
      if (place !== undefined && place.startsWith(folder)) found.set(Number(entry), Number(served[1]));
    } catch {
      // Gone while we looked, or not ours to read.
    }
  }
  return found;
}

/** Ends (SIGKILL) every resident process under `folder`. */
export function killResidentsUnder(folder: string): void {
  for (const pid of residentsUnder(folder).keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}
