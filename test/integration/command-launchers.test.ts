import { copyFileSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandsConfigSchema, commandEntries } from '../../core/config/tools/commands';
import { defaultRules } from '../../core/policy/default-rules';
import { isLauncher, wrapsSafely } from '../../core/tools/commands/launchers';
import { CommandAllowlist } from '../../host/commands/command-allowlist';
import { commandCapabilityFor } from '../../host/commands/command-capability';
import { parseToolsConfig, ToolsConfigError } from '../../host/config/tools-config-file';
import { ToolRefusal } from '../../host/fs/roots';
import { JobHarness } from '../helpers/job-harness';

/**
 * `command_run` judged by what runs, not by how it is spelled: a program
 * that runs other programs (a wrapper, shell, interpreter) is refused
 * unless the tools config names the one program it may run, by the real
 * file and its other names, and the deny list matches the program a
 * command really starts (a link or hard link to `dd` is `dd`), also
 * behind a wrapper. Real programs, real links, real jobs.
 */
let dir: string;
let bin: string;
let h: JobHarness | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-launchers-'));
  bin = join(dir, 'bin');
  mkdirSync(bin);
  // A harmless stand-in called dd, reached by a link and by a hard link under other names.
  copyFileSync('/bin/true', join(bin, 'dd'));
  symlinkSync(join(bin, 'dd'), join(bin, 'cleanup-tool'));
  linkSync(join(bin, 'dd'), join(bin, 'tidy'));
  // A wrapper under another name: a link, and a hard link beside a copy named as it is.
  symlinkSync('/usr/bin/timeout', join(bin, 'patience'));
  copyFileSync('/usr/bin/timeout', join(bin, 'timeout'));
  linkSync(join(bin, 'timeout'), join(bin, 'harmless'));
  symlinkSync('/bin/sh', join(bin, 'run'));
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

const configProblem = (commands: Record<string, unknown>): string => {
  try {
    parseToolsConfig({ version: 1, commands }, 'tools.yaml');
  } catch (err) {
    if (err instanceof ToolsConfigError) return err.message;
    throw err;
  }
  return 'accepted';
};

// The wrappers and more, as a tools config would list them: each is refused at load.
const launcherPaths = [
  '/usr/bin/env',
  '/usr/bin/timeout',
  '/usr/bin/nice',
  '/usr/bin/nohup',
  '/usr/bin/setsid',
  '/usr/bin/stdbuf',
  '/usr/bin/ionice',
  '/usr/bin/chrt',
  '/usr/bin/taskset',
  '/usr/bin/xargs',
  '/usr/bin/sudo',
  '/usr/bin/doas',
  '/bin/sh',
  '/bin/bash',
  '/bin/dash',
  '/bin/busybox',
  '/usr/bin/find',
  '/usr/bin/python3',
  '/usr/bin/python3.11',
  '/usr/bin/perl',
  '/usr/bin/perl5.36',
  '/usr/bin/node',
  '/usr/bin/ruby',
  '/usr/bin/php8.2',
  '/usr/bin/awk',
  '/usr/bin/flock',
  '/usr/bin/unshare',
  '/usr/sbin/chroot',
  '/usr/bin/systemd-run',
  '/bin/su',
  '/usr/bin/time',
  '/usr/bin/zsh',
];

test.each(launcherPaths)('%s as a command is refused at load unless it names what it wraps', (path) => {
  expect(configProblem({ tool: { path } })).toMatch(/commands\.tool\.path: \S+ runs whatever program its arguments name .*wraps:/);
  const withWraps = configProblem({ tool: { path, wraps: { program: '/usr/local/bin/backup-share', wrapperArgs: ['30'] } } });
  // A wrapper that passes the call's arguments on unread may wrap one program; one that reads them as a command line may not.
  if (wrapsSafely(path.slice(path.lastIndexOf('/') + 1))) expect(withWraps).toBe('accepted');
  else expect(withWraps).toMatch(/reads its arguments as a command line or as code/);
});

test.each(['/usr/bin/watch', '/usr/bin/ssh', '/bin/sed', '/usr/bin/awk', '/usr/bin/find', '/usr/bin/xargs', '/usr/bin/gdb', '/usr/bin/vim', '/bin/su'])(
  '%s reads its arguments as a command line or code: refused even with wraps',
  (path) => {
    expect(configProblem({ tool: { path, wraps: { program: '/usr/local/bin/report' } } })).toMatch(/commands\.tool\.wraps: \S+ reads its arguments as a command line or as code/);
  },
);

test('launcher names: loaders, arch and capability wrappers, static shells, versioned interpreters; not names that merely end in digits', () => {
  for (const name of ['ld-linux-x86-64.so.2', 'ld-musl-x86_64.so.1', 'setarch', 'linux64', 'capsh', 'rlwrap', 'unbuffer', 'bash-static', 'zsh-static', 'sash', 'posh', 'pypy3', 'ipython3', 'python3.12']) {
    expect([name, isLauncher(name)]).toEqual([name, true]);
  }
  for (const name of ['ed25519', 'script2', 'su2', 'find4', 'time2', 'ldd', 'shasum']) expect([name, isLauncher(name)]).toEqual([name, false]);
});

test('a wrapper may not wrap another launcher; ordinary programs stay allowed', () => {
  expect(configProblem({ tool: { path: '/usr/bin/timeout', wraps: { program: '/bin/sh' } } })).toMatch(/commands\.tool\.wraps\.program: sh runs other programs too/);
  for (const name of ['backup-share', 'rsnapshot', 'mkfs.ext4', 'python3-config', 'envsubst', 'finder', 'shasum', 'timeoutctl']) expect(isLauncher(name)).toBe(false);
});

describe('by the real file', () => {
  const allowlist = (commands: Record<string, unknown>) => new CommandAllowlist(commandEntries(commandsConfigSchema.parse(commands)));

  test.each([
    ['a link to timeout', 'patience', /patience: .*patience is timeout, which runs whatever program/],
    ['a hard link to a copy of timeout', 'harmless', /harmless: .*harmless is timeout, which runs/],
    ['a link to /bin/sh', 'run', /run: .*run is (sh|dash|bash), which runs/],
  ])('%s under another name is refused when resolved, and at the tools worker’s start', async (_what, name, reason) => {
    const list = allowlist({ [name]: { path: join(bin, name) } });
    await expect(list.resolve(name)).rejects.toThrow(ToolRefusal);
    await expect(list.resolve(name)).rejects.toThrow(reason);
    expect(await list.launchers()).toEqual([{ name, reason: expect.stringMatching(reason) }]);
  });

  test('a wrapper whose wrapped program is a launcher by its real file is refused', async () => {
    const list = allowlist({ sneaky: { path: '/usr/bin/timeout', wraps: { program: join(bin, 'run') } } });
    await expect(list.resolve('sneaky')).rejects.toThrow(/the program it wraps, .*run, is (sh|dash|bash), which runs other programs too/);
  });

  test('a program, or the program a wrapper runs, inside the allowed roots is refused: the file tools could rewrite it', async () => {
    const inRoot = new CommandAllowlist(commandEntries(commandsConfigSchema.parse({ own: { path: '/usr/bin/timeout', wraps: { program: join(bin, 'dd') } } })), [bin]);
    await expect(inRoot.resolve('own')).rejects.toThrow(/own: the program it wraps .*dd lies inside the allowed roots/);
    expect(await inRoot.launchers()).toHaveLength(1);
  });

  test('the names of a program are its real name and every name of the same file beside it', async () => {
    const resolved = await allowlist({ tidy: { path: join(bin, 'tidy') } }).resolve('tidy');
    expect([...resolved.names].sort()).toEqual(['cleanup-tool', 'dd', 'tidy']);
  });
});

describe('jobs: the deny list matches what runs', () => {
  beforeAll(async () => {
    const commands = commandsConfigSchema.parse({
      cleanup: { path: join(bin, 'cleanup-tool') },
      tidy: { path: join(bin, 'tidy') },
      'slow-dd': { path: '/usr/bin/timeout', wraps: { program: join(bin, 'dd'), wrapperArgs: ['5'] } },
      'slow-echo': { path: '/usr/bin/timeout', wraps: { program: '/bin/echo', wrapperArgs: ['5'] } },
    });
    h = await JobHarness.create({
      // The built-in deny rule for dangerous commands, and nothing else in the way.
      rules: { version: 1, rules: (defaultRules.rules ?? []).filter((r) => r.id === 'deny-dangerous-commands') },
      availableTools: ['command_run', 'fs_list'],
      capabilities: (roots) => ({ commands: commandCapabilityFor(commands, roots, dir) }),
    });
  }, 120_000);

  test.each([
    ['a link to dd', ['cleanup', 'if=/dev/zero', 'of=disk.img']],
    ['a hard link to dd', ['tidy', 'of=disk.img']],
    ['dd behind an allowed wrapper', ['slow-dd', 'of=disk.img']],
  ])('%s is denied by the built-in rule before it runs', async (_what, argv) => {
    const harness = h;
    if (harness === undefined) throw new Error('no harness');
    const { jobId } = await harness.start({
      script: { turns: [{ tool_calls: [{ name: 'command_run', arguments: { argv } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'tried' } }] }] },
    });
    expect((await harness.result(jobId)).status).toBe('completed');
    expect(harness.audit(jobId, 'policy_tool_denied').map((e) => e.data.ruleId)).toEqual(['deny-dangerous-commands']);
    expect(harness.audit(jobId, 'tool_executed')).toEqual([]);
  });

  test('an allowlisted wrapper and program pair runs, with the call’s arguments after the wrapped program', async () => {
    const harness = h;
    if (harness === undefined) throw new Error('no harness');
    const { jobId } = await harness.start({
      script: {
        turns: [{ tool_calls: [{ name: 'command_run', arguments: { argv: ['slow-echo', 'hello', '$(id)'] } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'echoed' } }] }],
      },
    });
    expect((await harness.result(jobId)).status).toBe('completed');
    expect(harness.toolResults(jobId).get('call_0_0')).toMatch(/hello \$\(id\)/);
    expect(harness.audit(jobId, 'tool_executed')).toHaveLength(1);
  });
});

test('when the tools side cannot say what a command runs, the deny list assumes the worst: denied, not run', async () => {
  // A tools worker without the commands capability answers no facts for a command call.
  const blind = await JobHarness.create({ rules: { version: 1, rules: (defaultRules.rules ?? []).filter((r) => r.id === 'deny-dangerous-commands') }, availableTools: ['command_run'] });
  try {
    const { jobId } = await blind.start({
      script: { turns: [{ tool_calls: [{ name: 'command_run', arguments: { argv: ['cleanup', 'of=disk.img'] } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'tried' } }] }] },
    });
    expect((await blind.result(jobId)).status).toBe('completed');
    expect(blind.audit(jobId, 'policy_tool_denied').map((e) => e.data.ruleId)).toEqual(['deny-dangerous-commands']);
  } finally {
    await blind.close();
  }
});
