import { readFileSync, readlinkSync } from 'node:fs';
import { errnoCode } from '../fs/descriptors';

/** What /proc says about one process, read in one go. */
export interface ProcEntry {
  readonly pid: number;
  /** R, S, D, Z, T, X…: a zombie (Z) or dead (X) process has exited. */
  readonly state: string;
  readonly pgrp: number;
  /** Field 22, clock ticks after boot: with the pid and the boot, names one process for good. */
  readonly startTicks: string;
}

/** The process's /proc/PID/stat, or null when there is no such process. */
export function readProcStat(pid: number): ProcEntry | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ESRCH') return null;
    throw err;
  }
  // The command name (field 2) is in parentheses and may itself hold spaces and ")".
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  const state = fields[0];
  const pgrp = Number(fields[2]);
  const startTicks = fields[19];
  if (close < 0 || state === undefined || !Number.isInteger(pgrp) || startTicks === undefined || !/^[0-9]+$/.test(startTicks)) {
    throw new Error(`/proc/${pid}/stat is not in the expected format`);
  }
  return { pid, state, pgrp, startTicks };
}

/** A process that exists and has not exited (zombies have). */
export function alive(entry: ProcEntry | null): entry is ProcEntry {
  return entry !== null && entry.state !== 'Z' && entry.state !== 'X';
}

let bootId: string | undefined;

/** This boot's id: start ticks restart from zero at every boot. */
export function currentBootId(): string {
  bootId ??= readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  return bootId;
}

/** The argv a process runs with, or null when it cannot be read (gone, or another user's). */
export function readCmdline(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const parts = raw.split('\0');
    if (parts.at(-1) === '') parts.pop();
    return parts;
  } catch {
    return null;
  }
}

/** The program a process runs, or null when it cannot be read. */
export function readExe(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return null;
  }
}
