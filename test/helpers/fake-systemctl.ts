import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A stand-in `systemctl`: a real executable that records the argv it was
 * run with and answers `show`, `start`, `stop` and `restart` from a JSON
 * state file, as systemd would.
 */

export interface FakeUnit {
  ActiveState: string;
  SubState: string;
  MainPID: number;
  FragmentPath: string;
  DropInPaths: string;
  InvocationID: string;
  /** Set: the next action fails with this text on stderr and exit code 1. */
  failWith?: string;
}

export interface FakeSystemctl {
  readonly path: string;
  /** The argv of every run, in order. */
  calls(): string[][];
  units(): Record<string, FakeUnit>;
  setUnit(name: string, unit: FakeUnit): void;
}

const SOURCE = (logFile: string, stateFile: string) => `#!${process.execPath}
const fs = require('node:fs');
const { randomBytes } = require('node:crypto');
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(logFile)}, JSON.stringify(args) + '\\n');
const state = JSON.parse(fs.readFileSync(${JSON.stringify(stateFile)}, 'utf8'));
const rest = args.filter((a) => a !== '--no-ask-password');
const dash = rest.indexOf('--');
const verb = rest[0];
const unitName = dash >= 0 ? rest[dash + 1] : rest[rest.length - 1];
const unit = state[unitName];
if (verb === 'show') {
  const props = (rest.find((a) => a.startsWith('--property=')) || '--property=').slice('--property='.length).split(',');
  const values = unit === undefined
    ? { Id: unitName, LoadState: 'not-found', ActiveState: 'inactive', SubState: 'dead', MainPID: 0, FragmentPath: '', DropInPaths: '', InvocationID: '' }
    : { Id: unitName, LoadState: 'loaded', ...unit };
  for (const p of props) process.stdout.write(p + '=' + (values[p] ?? '') + '\\n');
  process.exit(0);
}
if (unit === undefined) { process.stderr.write('Failed to ' + verb + ' ' + unitName + ': Unit ' + unitName + ' not found.\\n'); process.exit(5); }
if (unit.failWith) { process.stderr.write(unit.failWith + '\\n'); process.exit(1); }
if (verb === 'stop') Object.assign(unit, { ActiveState: 'inactive', SubState: 'dead', MainPID: 0, InvocationID: '' });
else if (verb === 'start' || verb === 'restart') Object.assign(unit, { ActiveState: 'active', SubState: 'running', MainPID: 1000 + Math.floor(Math.random() * 9000), InvocationID: randomBytes(16).toString('hex') });
else { process.stderr.write('Unknown command verb ' + verb + '.\\n'); process.exit(1); }
fs.writeFileSync(${JSON.stringify(stateFile)}, JSON.stringify(state));
`;

export function fakeSystemctl(dir: string): FakeSystemctl {
  const path = join(dir, 'systemctl');
  const logFile = join(dir, 'systemctl.calls');
  const stateFile = join(dir, 'systemctl.state.json');
  writeFileSync(logFile, '');
  writeFileSync(stateFile, '{}');
  writeFileSync(path, SOURCE(logFile, stateFile));
  chmodSync(path, 0o755);
  const units = () => JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, FakeUnit>;
  return {
    path,
    calls: () =>
      readFileSync(logFile, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as string[]),
    units,
    setUnit(name, unit) {
      writeFileSync(stateFile, JSON.stringify({ ...units(), [name]: unit }));
    },
  };
}
