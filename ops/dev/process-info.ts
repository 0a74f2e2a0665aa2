import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * What this machine says about a process: alive, its command line, when it
 * started, which process listens on a port. Read from /proc where there is
 * one; elsewhere only liveness is known.
 */

/** Whether a process with this pid runs (one of another user counts; a zombie, ended but not yet reaped, does not). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return statFields(pid)?.[0] !== 'Z';
}

/** Fields 3 and on of /proc/PID/stat (fields[0] is the state). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** The process's arguments, or undefined when they cannot be read. */
export function processCommandLine(pid: number): string[] | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.split('\0').filter((part, i, all) => part !== '' || i < all.length - 1);
  } catch {
    return undefined;
  }
}

/**
 * When the process started (clock ticks since boot): a pid and its start
 * time name one process, even after the pid is reused.
 */
export function processStartTime(pid: number): string | undefined {
  // Field 22 of stat.
  return statFields(pid)?.[19];
}

/** One line naming a process for people: pid and command line. */
export function describeProcess(pid: number): string {
  const cmd = processCommandLine(pid);
  return cmd === undefined || cmd.length === 0 ? `pid ${pid}` : `pid ${pid} (${cmd.join(' ').slice(0, 200)})`;
}

/** The pid listening on a TCP port, when this machine tells (Linux, a process of this user). */
export function listeningPid(port: number): number | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      // State 0A is LISTEN; column 10 is the socket's inode.
      if (local === undefined || cols[3] !== '0A' || cols[9] === undefined) continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) inodes.add(cols[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode !== undefined && inodes.has(inode)) return Number(pid);
      } catch {
        // Closed while we looked.
      }
    }
  }
  return undefined;
}
