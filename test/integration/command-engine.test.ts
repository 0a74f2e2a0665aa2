import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandsConfigSchema } from '../../core/config/tools/commands';
import { BinaryChanged, CommandNotAllowed } from '../../host/commands/command-allowlist';
import { CommandEngine, formatCommandResult, liveGroupMembers } from '../../host/commands/command-engine';
import { OutsideRoots, Roots, ToolRefusal } from '../../host/fs/roots';

/**
 * The command_run engine with real programs and process trees. The
 * programs live outside the roots; the roots are real temporary folders.
 */

let base: string;
let root: string;
let bin: string;
let roots: Roots;

function script(name: string, body: string): string {
  const path = join(bin, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

/** Every test program allowed, with these settings each; or exactly `only`. */
function engine(settings: Record<string, unknown> = {}, only?: Record<string, string>): CommandEngine {
  const programs = only ?? {
    args: join(bin, 'args'),
    tree: join(bin, 'tree'),
    'leaves-child': join(bin, 'leaves-child'),
    stubborn: join(bin, 'stubborn'),
    loud: join(bin, 'loud'),
    where: join(bin, 'where'),
    tool: join(bin, 'current'),
    env: '/usr/bin/printenv',
  };
  return new CommandEngine({
    roots,
    home: base,
    commands: commandsConfigSchema.parse(Object.fromEntries(Object.entries(programs).map(([name, path]) => [name, { path, killGraceSeconds: 0.5, maxTimeoutSeconds: 60, ...settings }]))),
  });
}

/** Whether a process is still running (not gone, not a zombie). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'airlock-command-'));
  root = join(base, 'root');
  bin = join(base, 'bin');
  mkdirSync(join(root, 'work'), { recursive: true });
  mkdirSync(bin);
  roots = await Roots.create([root]);
  script('args', 'for a in "$@"; do printf "<%s>\\n" "$a"; done');
  // Prints its pid (the group's id), starts a grandchild that sleeps, and sleeps itself.
  script('tree', 'echo "leader $$"; sh -c \'sleep 300; true\' & echo "grandchild $!"; sleep 300');
  // Leaves a sleeping child behind and exits at once.
  script('leaves-child', 'echo "leader $$"; sleep 300 & echo "grandchild $!"; exit 0');
  // Notes in the file named by $1 that it is ready, each SIGTERM, and each 0.1 s round it lives; only SIGKILL ends it.
  script('ignores-term', 'trap \'echo "TERM $$" >> "$1"\' TERM; echo "ready $$" >> "$1"; while :; do sleep 0.1; echo "alive $$" >> "$1"; done');
  // A child that ignores SIGTERM (noting it in the file named by $1).
  script('stubborn', `echo "leader $$"; ${join(bin, 'ignores-term')} "$1" & echo "grandchild $!"; sleep 300`);
  script('loud', 'head -c 1000000 /dev/zero | tr "\\0" a; echo done >&2');
  script('where', 'pwd -P');
  script('current', 'echo version-one');
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

test('a program outside the allowlist is refused, however it is named', async () => {
  const e = engine();
  for (const argv of [['rm', '-rf', root], ['/bin/sh', '-c', 'true'], ['sh'], [`${bin}/../bin/args`], ['ARGS'], [join(bin, 'missing')]]) {
    await expect(e.run({ argv })).rejects.toThrow(CommandNotAllowed);
  }
  await expect(engine({}, {}).run({ argv: ['args'] })).rejects.toThrow(/no commands are configured/);
  expect(existsSync(root)).toBe(true);
});

test('shell metacharacters arrive as literal arguments', async () => {
  writeFileSync(join(root, 'victim'), 'keep me');
  const hostile = ['; rm -rf victim', '$(touch pwned)', '`touch pwned2`', '| cat /etc/passwd', '&& rm victim', '*', "'quoted' \"twice\"", 'new\nline'];
  const result = await engine().run({ argv: ['args', ...hostile] });
  expect(result.exitCode).toBe(0);
  expect(result.stdout).toBe(hostile.map((a) => `<${a}>\n`).join(''));
  expect(readFileSync(join(root, 'victim'), 'utf8')).toBe('keep me');
  expect(existsSync(join(root, 'pwned'))).toBe(false);
  expect(existsSync(join(root, 'pwned2'))).toBe(false);
});

describe('the process group', () => {
  function pids(output: string): { leader: number; grandchild: number } {
    const leader = /leader (\d+)/.exec(output);
    const grandchild = /grandchild (\d+)/.exec(output);
    if (leader === null || grandchild === null) throw new Error(`no pids in ${JSON.stringify(output)}`);
    return { leader: Number(leader[1]), grandchild: Number(grandchild[1]) };
  }

  test('a runaway tree is killed whole at its timeout', async () => {
    const result = await engine().run({ argv: ['tree'], timeoutSeconds: 1 });
    expect(result.timedOut).toBe(true);
    const { leader, grandchild } = pids(result.stdout);
    expect(liveGroupMembers(leader)).toEqual([]);
    expect(running(grandchild)).toBe(false);
    expect(formatCommandResult(result, 1000)).toMatch(/stopped at its 1 s timeout/);
  });

  test('a child that ignores SIGTERM is sent SIGTERM first and killed after the grace time', async () => {
    const record = join(base, 'stubborn-signals');
    // A grace time long enough, on a busy machine too, for the child's trap and a few rounds of its loop.
    const result = await engine({ killGraceSeconds: 2 }).run({ argv: ['stubborn', record], timeoutSeconds: 1 });
    expect(result.timedOut).toBe(true);
    const { leader, grandchild } = pids(result.stdout);
    const lines = readFileSync(record, 'utf8').trim().split('\n');
    expect(lines[0]).toBe(`ready ${grandchild}`);
    // SIGTERM reached it while it ran (its trap wrote this) ...
    const lastTerm = lines.lastIndexOf(`TERM ${grandchild}`);
    expect(lastTerm).toBeGreaterThan(0);
    // ... it was left to go on after it (two 0.1 s rounds of a 2 s grace time), not killed along with it ...
    expect(lines.slice(lastTerm + 1).filter((line) => line === `alive ${grandchild}`).length).toBeGreaterThanOrEqual(2);
    // ... and it is gone anyway, with its whole group: only SIGKILL ends it.
    expect(liveGroupMembers(leader)).toEqual([]);
    expect(running(grandchild)).toBe(false);
  });

  test('what a finished command left running in its group is stopped', async () => {
    const result = await engine().run({ argv: ['leaves-child'], timeoutSeconds: 60 });
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(0);
    const { leader, grandchild } = pids(result.stdout);
    expect(liveGroupMembers(leader)).toEqual([]);
    expect(running(grandchild)).toBe(false);
  });

  test('a timeout above the configured maximum is refused', async () => {
    await expect(engine({ maxTimeoutSeconds: 10, timeoutSeconds: 5 }).run({ argv: ['args'], timeoutSeconds: 11 })).rejects.toThrow(/above the 10 s allowed for args/);
  });
});

test('output is capped per stream; the rest is counted', async () => {
  const result = await engine({ maxOutputBytes: 1000 }).run({ argv: ['loud'] });
  expect(result.exitCode).toBe(0);
  expect(result.stdout).toBe('a'.repeat(1000));
  expect(result.stdoutBytes).toBe(1_000_000);
  expect(result.stdoutTruncated).toBe(true);
  expect(result.stderr).toBe('done\n');
  expect(formatCommandResult(result, 60_000)).toMatch(/stdout \(1000000 bytes, first 1000 shown\)/);
});

test("the worker's environment does not reach the command", async () => {
  process.env.AIRLOCK_CANARY_SECRET = 'canary-5d1e0c7a';
  process.env.OPENAI_API_KEY = 'sk-canary-not-for-commands';
  try {
    const result = await engine({ env: { TZ: 'UTC' } }).run({ argv: ['env'] });
    expect(result.exitCode).toBe(0);
    const vars = Object.fromEntries(result.stdout.trim().split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
    expect(vars).toEqual({ PATH: '/usr/local/bin:/usr/bin:/bin', HOME: base, LANG: 'C.UTF-8', TZ: 'UTC' });
    expect(result.stdout).not.toContain('canary-5d1e0c7a');
    expect(result.stdout).not.toContain('AIRLOCK_CANARY_SECRET');
    expect(result.stdout).not.toContain('sk-canary');
  } finally {
    delete process.env.AIRLOCK_CANARY_SECRET;
    delete process.env.OPENAI_API_KEY;
  }
});

test('a secret-named variable in the config is refused', () => {
  const parsed = commandsConfigSchema.safeParse({ backup: { path: '/usr/local/bin/backup', env: { BACKUP_PASSWORD: 'x' } } });
  expect(parsed.error?.issues[0]?.message).toMatch(/BACKUP_PASSWORD looks like a secret/);
});

describe('the program is the file that was checked', () => {
  test('replaced after prepare (new inode): refused, the new one never runs', async () => {
    script('current', 'echo version-one');
    const e = engine();
    const checked = await e.resolve({ argv: ['tool'] });
    expect(checked.path).toBe(join(bin, 'current'));
    // Replaced the usual way: a new file renamed over the old name.
    const next = join(bin, 'current.new');
    writeFileSync(next, `#!/bin/sh\ntouch ${join(root, 'replaced-ran')}\n`, { mode: 0o755 });
    renameSync(next, join(bin, 'current'));
    await expect(e.run({ argv: ['tool'] }, checked)).rejects.toThrow(BinaryChanged);
    await expect(e.run({ argv: ['tool'] }, checked)).rejects.toThrow(/is another file now/);
    expect(existsSync(join(root, 'replaced-ran'))).toBe(false);
  });

  test('modified in place after prepare: refused', async () => {
    script('current', 'echo version-one');
    const e = engine();
    const checked = await e.resolve({ argv: ['tool'] });
    writeFileSync(join(bin, 'current'), `#!/bin/sh\ntouch ${join(root, 'modified-ran')}\n`);
    await expect(e.run({ argv: ['tool'] }, checked)).rejects.toThrow(/was modified/);
    expect(existsSync(join(root, 'modified-ran'))).toBe(false);
  });

  test('a configured link pointed elsewhere after prepare: refused', async () => {
    const v1 = script('v1', 'echo one');
    const v2 = script('v2', `touch ${join(root, 'relinked-ran')}`);
    const link = join(bin, 'linked');
    symlinkSync(v1, link);
    const e = engine({}, { linked: link });
    const checked = await e.resolve({ argv: ['linked'] });
    expect(checked.path).toBe(v1);
    rmSync(link);
    symlinkSync(v2, link);
    await expect(e.run({ argv: ['linked'] }, checked)).rejects.toThrow(/now resolves to/);
    expect(existsSync(join(root, 'relinked-ran'))).toBe(false);
  });

  test('unchanged: it runs, as the name in the allowlist', async () => {
    script('current', 'echo "version-one $0"');
    const e = engine();
    const checked = await e.resolve({ argv: ['tool'] });
    const result = await e.run({ argv: ['tool'] }, checked);
    expect(result.stdout).toMatch(/^version-one /);
  });
});

describe('the working folder', () => {
  test('is the named folder inside the roots (the first root by default)', async () => {
    const e = engine();
    expect((await e.run({ argv: ['where'], cwd: join(root, 'work') })).stdout.trim()).toBe(join(root, 'work'));
    expect((await e.run({ argv: ['where'] })).stdout.trim()).toBe(root);
  });

  test('outside the roots, or reached through a link leading out: refused, nothing runs', async () => {
    const e = engine();
    await expect(e.run({ argv: ['where'], cwd: bin })).rejects.toThrow(OutsideRoots);
    symlinkSync(bin, join(root, 'escape'));
    await expect(e.run({ argv: ['where'], cwd: join(root, 'escape') })).rejects.toThrow(OutsideRoots);
    writeFileSync(join(root, 'file'), '');
    await expect(e.run({ argv: ['where'], cwd: join(root, 'file') })).rejects.toThrow(ToolRefusal);
  });
});
