import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, realpathSync } from 'node:fs';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProcessServiceConfig } from '../../core/config/tools/services';
import { describeIdentity, describeIdentityChange, sameIdentity, type ServiceIdentity, type ServiceObservation } from '../../core/tools/service-state';
import { errnoCode, messageOf } from '../fs/descriptors';
import { ServiceError, ServiceIdentityChanged, type ServiceAdapter } from './adapter';
import { probeHealth } from './health-check';
import { alive, currentBootId, readCmdline, readExe, readProcStat, type ProcEntry } from './proc';

/**
 * A service that is a plain process: started from its configured argv
 * (detached, in its own process group, the pid written to its pid file),
 * found again through the pid file, stopped with SIGTERM and, after a
 * grace period, SIGKILL. A process is named by its pid *and* start time,
 * so a pid reused by another process is never taken for the approved one.
 */

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface ProcessAdapterOptions {
  /** How often exits and health are polled; default 50 ms. */
  readonly pollMs?: number;
  /** How long to wait for an exit after SIGKILL; default 5 s. */
  readonly killWaitMs?: number;
}

type Found = { readonly running: true; readonly entry: ProcEntry } | { readonly running: false; readonly why: string };

export class ProcessAdapter implements ServiceAdapter {
  readonly kind = 'process';
  readonly target: string;
  private readonly pollMs: number;
  private readonly killWaitMs: number;
  /** Actions on one service run one at a time: two starts must not make two processes. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly service: string,
    private readonly config: ProcessServiceConfig,
    options: ProcessAdapterOptions = {},
  ) {
    this.target = `process ${config.command.map((a) => JSON.stringify(a)).join(' ')}`;
    this.pollMs = options.pollMs ?? 50;
    this.killWaitMs = options.killWaitMs ?? 5_000;
  }

  private serially<T>(run: () => Promise<T>): Promise<T> {
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async readPidFile(): Promise<number | null> {
    let text: string;
    try {
      text = await readFile(this.config.pidFile, 'utf8');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return null;
      throw new ServiceError(this.service, `cannot read its pid file ${this.config.pidFile}: ${messageOf(err)}`);
    }
    const trimmed = text.trim();
    if (!/^[0-9]{1,10}$/.test(trimmed)) {
      throw new ServiceError(this.service, `its pid file ${this.config.pidFile} does not hold a pid (${JSON.stringify(trimmed.slice(0, 40))}); fix or remove it`);
    }
    const pid = Number(trimmed);
    if (pid <= 1 || pid === process.pid) {
      throw new ServiceError(this.service, `its pid file ${this.config.pidFile} names pid ${pid}, which is never a service airlock may signal; fix or remove it`);
    }
    return pid;
  }

  /** Is this process the configured program? A stale pid file may name a pid another program has now. Null: cannot tell. */
  private runsCommand(pid: number): boolean | null {
    if (this.config.matchBy === 'argv') {
      const argv = readCmdline(pid);
      if (argv === null) return null;
      return argv.length === this.config.command.length && argv.every((a, i) => a === this.config.command[i]);
    }
    const exe = readExe(pid);
    if (exe === null) return null;
    try {
      return exe === realpathSync(this.config.command[0] ?? '');
    } catch {
      return false;
    }
  }

  private async find(): Promise<Found> {
    const pid = await this.readPidFile();
    if (pid === null) return { running: false, why: `no pid file at ${this.config.pidFile}` };
    const entry = readProcStat(pid);
    if (!alive(entry)) return { running: false, why: `pid ${pid} from the pid file has exited` };
    const ours = this.runsCommand(pid);
    if (ours === null) throw new ServiceError(this.service, `cannot tell whether pid ${pid} runs its command (/proc/${pid} is not readable to the tools worker)`);
    if (!ours) return { running: false, why: `the pid file names pid ${pid}, which now runs another program (stale pid file)` };
    return { running: true, entry };
  }

  private identityOf(entry: ProcEntry): Extract<ServiceIdentity, { adapter: 'process' }> {
    return { adapter: 'process', pid: entry.pid, startTicks: entry.startTicks, bootId: currentBootId() };
  }

  private async observe(found: Found): Promise<ServiceObservation> {
    const base = { schemaVersion: 1 as const, service: this.service, adapter: 'process' as const };
    if (!found.running) return { ...base, identity: null, health: 'stopped', instance: null, detail: `not running (${found.why})` };
    const probe = await probeHealth(this.config.health);
    const identity = this.identityOf(found.entry);
    return {
      ...base,
      identity,
      health: probe.healthy ? 'healthy' : 'unhealthy',
      instance: `${identity.bootId}/${found.entry.startTicks}`,
      detail: `running as pid ${found.entry.pid}; ${probe.detail}`,
    };
  }

  async status(): Promise<ServiceObservation> {
    return this.observe(await this.find());
  }

  /** The approved process, still the same one, or a refusal saying what it is now. */
  private async pinnedEntry(pinned: ServiceIdentity | null): Promise<ProcEntry | null> {
    const found = await this.find();
    const current = found.running ? this.identityOf(found.entry) : null;
    if (pinned !== null && pinned.adapter !== 'process') throw new ServiceIdentityChanged(this.service, `${describeIdentity(pinned)} is not a process`);
    if (!sameIdentity(pinned, current)) throw new ServiceIdentityChanged(this.service, describeIdentityChange(pinned, current));
    return found.running ? found.entry : null;
  }

  /** Waits until the process is gone (exited, reaped or a zombie, or its pid reused); false when time ran out. */
  private async exited(entry: ProcEntry, withinMs: number): Promise<boolean> {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const now = readProcStat(entry.pid);
      if (!alive(now) || now.startTicks !== entry.startTicks) return true;
      if (Date.now() >= deadline) return false;
      await sleep(this.pollMs);
    }
  }

  /** Sends a signal to the process, or to its whole group when it leads one (as the processes airlock starts do). */
  private signal(entry: ProcEntry, signal: NodeJS.Signals): void {
    try {
      process.kill(entry.pgrp === entry.pid ? -entry.pid : entry.pid, signal);
    } catch (err) {
      if (errnoCode(err) === 'ESRCH') return;
      if (errnoCode(err) === 'EPERM') throw new ServiceError(this.service, `not permitted to signal pid ${entry.pid} (it runs as another user)`);
      throw err;
    }
  }

  /**
   * Signals the process only while it is still the same one (its start
   * time), read synchronously right before the signal: no other work runs
   * between the check and the kill.
   */
  private signalIfSame(entry: ProcEntry, signal: NodeJS.Signals): void {
    const now = readProcStat(entry.pid);
    if (alive(now) && now.startTicks === entry.startTicks) this.signal(entry, signal);
  }

  private async terminate(entry: ProcEntry): Promise<void> {
    this.signalIfSame(entry, 'SIGTERM');
    if (await this.exited(entry, this.config.stopGraceMs)) return;
    this.signalIfSame(entry, 'SIGKILL');
    if (!(await this.exited(entry, this.killWaitMs))) {
      throw new ServiceError(this.service, `pid ${entry.pid} did not exit within ${this.killWaitMs} ms of SIGKILL`);
    }
  }

  private async removePidFile(pid: number): Promise<void> {
    if ((await this.readPidFile().catch(() => null)) !== pid) return;
    await unlink(this.config.pidFile).catch(() => undefined);
  }

  /** The pid file is replaced whole: a reader never sees half a pid. */
  private async writePidFile(pid: number): Promise<void> {
    const tmp = join(dirname(this.config.pidFile), `.${basename(this.config.pidFile)}.${randomBytes(6).toString('hex')}`);
    try {
      await writeFile(tmp, `${pid}\n`, { mode: 0o644, flag: 'wx' });
      await rename(tmp, this.config.pidFile);
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      throw new ServiceError(this.service, `cannot write its pid file ${this.config.pidFile}: ${messageOf(err)}`);
    }
  }

  private async launch(): Promise<ServiceObservation> {
    const [program, ...args] = this.config.command;
    if (program === undefined) throw new ServiceError(this.service, 'no command is configured');
    let out: number | 'ignore' = 'ignore';
    if (this.config.logFile !== undefined) {
      try {
        out = openSync(this.config.logFile, 'a', 0o640);
      } catch (err) {
        throw new ServiceError(this.service, `cannot open its log file ${this.config.logFile}: ${messageOf(err)}`);
      }
    }
    let exit: string | undefined;
    let exited: Promise<void> = Promise.resolve();
    let pid: number;
    try {
      // Detached: its own session and process group, so it outlives the worker and a stop reaches its children.
      const child = spawn(program, args, {
        cwd: this.config.cwd,
        env: { PATH: DEFAULT_PATH, ...this.config.env },
        detached: true,
        stdio: ['ignore', out, out],
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      }).catch((err: unknown) => {
        throw new ServiceError(this.service, `cannot start ${program}: ${errnoCode(err) === 'ENOENT' ? 'no such program (or its working directory is missing)' : messageOf(err)}`);
      });
      exited = new Promise((resolve) => {
        child.once('exit', (code, signal) => {
          exit = signal !== null ? `was killed by ${signal}` : `exited with code ${String(code)}`;
          resolve();
        });
      });
      child.unref();
      if (child.pid === undefined) throw new ServiceError(this.service, `cannot start ${program}: no pid`);
      pid = child.pid;
    } finally {
      if (typeof out === 'number') closeSync(out);
    }
    const entry = readProcStat(pid);
    try {
      await this.writePidFile(pid);
    } catch (err) {
      // Nothing half-done: a process nobody can find again is stopped.
      if (alive(entry)) await this.terminate(entry).catch(() => undefined);
      throw err;
    }
    const deadline = Date.now() + this.config.startTimeoutMs;
    for (;;) {
      if (exit !== undefined || !alive(readProcStat(pid))) {
        // /proc can say it is gone before Node has reaped it: wait a moment for its exit code.
        await Promise.race([exited, sleep(1_000)]);
        await this.removePidFile(pid);
        const log = this.config.logFile !== undefined ? ` (see ${this.config.logFile})` : '';
        throw new ServiceError(this.service, `pid ${pid} ${exit ?? 'exited'} right after it was started${log}`);
      }
      const now = await this.status();
      if (now.health === 'healthy' || Date.now() >= deadline) return now;
      await sleep(this.pollMs);
    }
  }

  start(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.serially(async () => {
      const entry = await this.pinnedEntry(pinned);
      // Approved while it ran, and it still does: starting it again would make a second one.
      if (entry !== null) return this.status();
      return this.launch();
    });
  }

  stop(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.serially(async () => {
      const entry = await this.pinnedEntry(pinned);
      if (entry !== null) {
        await this.terminate(entry);
        await this.removePidFile(entry.pid);
      }
      return this.status();
    });
  }

  restart(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.serially(async () => {
      const entry = await this.pinnedEntry(pinned);
      if (entry !== null) {
        await this.terminate(entry);
        await this.removePidFile(entry.pid);
      }
      return this.launch();
    });
  }
}
