import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { commands } from '../../cli/command-registry';
import { isGroup, type Command } from '../../cli/command';
import { repoRoot } from '../helpers/processes';

/**
 * Help, version, usage errors and completion of the built CLI, for every
 * command in the registry: a command added without flag descriptions or an
 * example fails here. None of these needs a Temporal server.
 */

const run = promisify(execFile);
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-help-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // An address nothing listens on: a command that tried to reach a server would fail, not hang.
    const out = await run(process.execPath, [join(repoRoot, 'bin', 'airlock.js'), ...args], {
      env: { PATH: process.env.PATH, AIRLOCK_DATA_DIR: join(dir, 'data'), TEMPORAL_ADDRESS: '127.0.0.1:9' },
      timeout: 30_000,
    });
    return { code: 0, ...out };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Every runnable command with its words: `show`, `rules test`. */
const leaves: Array<[string, Command]> = commands.flatMap((c) =>
  isGroup(c) ? c.subcommands.map((s): [string, Command] => [`${c.name} ${s.name}`, s]) : [[c.name, c] as [string, Command]],
);
const groups = commands.filter(isGroup);

/** The lines of one section of a help text (`FLAGS`, `EXAMPLES`). */
function section(help: string, title: string): string[] {
  const lines = help.split('\n');
  const start = lines.indexOf(title);
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && l === '');
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

describe.each(leaves)('airlock %s', (path, spec) => {
  test('--help shows the summary, usage, every flag with a description, and an example', async () => {
    const out = await cli([...path.split(' '), '--help']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    expect(out.stdout.startsWith(spec.summary)).toBe(true);
    expect(section(out.stdout, 'USAGE')).toEqual([`  ${spec.usage}`]);
    const flags = section(out.stdout, 'FLAGS');
    for (const [name, def] of [...Object.entries(spec.options), ['help', { description: 'Show help for this command' }] as const]) {
      const line = flags.find((l) => new RegExp(`--${name}( [A-Z=_,]+)? {3,}\\S`).test(l));
      expect({ name, line }).toEqual({ name, line: expect.stringContaining(def.description) });
      expect(def.description.trim()).not.toBe('');
    }
    for (const a of spec.arguments ?? []) expect(section(out.stdout, 'ARGUMENTS').join('\n')).toMatch(new RegExp(`^  ${a.name} +\\S`, 'm'));
    const examples = section(out.stdout, 'EXAMPLES');
    expect(examples.length).toBeGreaterThan(0);
    expect(examples.every((e) => e.startsWith('  $ ') && e.includes(`airlock ${path}`))).toBe(true);
  });

  test('help CMD prints the same as CMD --help, and so does the parser', async () => {
    const words = path.split(' ');
    // `-h --help` is not the plain form the CLI answers before loading the parser: commander prints this one.
    const [viaHelp, viaFlag, viaParser] = await Promise.all([cli(['help', ...words]), cli([...words, '-h']), cli([...words, '-h', '--help'])]);
    expect(viaHelp).toEqual({ code: 0, stdout: viaFlag.stdout, stderr: '' });
    expect(viaParser).toEqual({ code: 0, stdout: viaFlag.stdout, stderr: '' });
  });

  test('an unknown flag is one line naming it, with where to look, exit 2', async () => {
    const out = await cli([...path.split(' '), '--no-such-flag']);
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(out.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^airlock ${path}: unknown option "--no-such-flag"; usage: airlock ${path}`))]);
  });
});

describe.each(groups.map((g) => [g.name, g] as const))('airlock %s (a group)', (name, group) => {
  test('--help, help GROUP and the bare group list its subcommands and exit 0', async () => {
    const outs = await Promise.all([cli([name, '--help']), cli(['help', name]), cli([name])]);
    for (const out of outs) expect(out).toEqual({ code: 0, stdout: outs[0]?.stdout, stderr: '' });
    const listed = section(outs[0]?.stdout ?? '', 'COMMANDS');
    expect(listed.map((l) => l.trim().split(/\s+/)[0])).toEqual(group.subcommands.map((s) => s.name));
    expect(section(outs[0]?.stdout ?? '', 'EXAMPLES').length).toBeGreaterThan(0);
  });

  test('an unknown subcommand is one line naming it, exit 2', async () => {
    const out = await cli([name, 'frobnicate']);
    expect(out.code).toBe(2);
    expect(out.stderr.trim().split('\n')).toEqual([`airlock ${name}: unknown command "frobnicate"; run airlock ${name} --help`]);
  });
});

test('bare airlock, --help and help print the command list and exit 0', async () => {
  const outs = await Promise.all([cli([]), cli(['--help']), cli(['help']), cli(['-h', '--help'])]);
  for (const out of outs) expect(out).toEqual({ code: 0, stdout: outs[0]?.stdout, stderr: '' });
  const listed = section(outs[0]?.stdout ?? '', 'COMMANDS').map((l) => l.trim().split(/\s+/)[0]);
  expect(listed).toEqual([...commands.map((c) => c.name), 'help']);
});

test('--version and -V print the version in package.json', async () => {
  const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
  // The last two through the parser.
  for (const args of [['--version'], ['-V'], ['-V', '-V'], ['--version', '--version']]) {
    expect({ args, out: await cli(args) }).toEqual({ args, out: { code: 0, stdout: `${version}\n`, stderr: '' } });
  }
});

test.each([
  [['frobnicate'], 'airlock: unknown command "frobnicate"; run airlock --help'],
  [['aprove', 'job-1'], 'airlock: unknown command "aprove" (did you mean approve?); run airlock --help'],
  [['help', 'frobnicate'], 'airlock: unknown command "frobnicate"; run airlock --help'],
  [['frobnicate', '--help'], 'airlock: unknown command "frobnicate"; run airlock --help'],
  [['--frobnicate'], 'airlock: unknown option "--frobnicate"; run airlock --help'],
  [['deny', 'job-1', '--reasn', 'x'], /^airlock deny: unknown option "--reasn" \(did you mean --reason\?\); usage: airlock deny JOB_ID/],
  [['show', 'job-1', 'job-2'], /^airlock show: unexpected argument "job-2"; usage: airlock show JOB_ID/],
  [['show'], /^airlock show: missing required argument "JOB_ID"; usage: airlock show JOB_ID/],
  [['run', '--goal'], /^airlock run: --goal takes a value \(TEXT\); usage: airlock run --goal TEXT/],
  [['rules', '--json'], /^airlock rules: choose a subcommand \(list, validate, test, rehearse, add, enable, disable\); run airlock rules --help$/],
  [['completion', 'fish'], /^airlock completion: expected one shell, bash or zsh/],
  // The model is told why; a denial without a reason is refused before anything is sent, as on the approval page.
  [['deny', 'job-1'], /^airlock deny: deny needs --reason TEXT: the job tells the model why/],
  [['deny', 'job-1', '--reason', '   '], /^airlock deny: deny needs --reason TEXT/],
])('%j is one line on stderr, exit 2', async (args, line) => {
  const out = await cli(args);
  expect(out.code).toBe(2);
  expect(out.stdout).toBe('');
  expect(out.stderr.trim().split('\n')).toEqual([typeof line === 'string' ? line : expect.stringMatching(line)]);
});

describe('completion', () => {
  test('completion bash names every command, subcommand and flag', async () => {
    const out = await cli(['completion', 'bash']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    for (const c of commands) expect(out.stdout).toMatch(new RegExp(`\\b${c.name}\\b`));
    for (const [path, spec] of leaves) {
      const line = out.stdout.split('\n').find((l) => l.trim().startsWith(`'${path}')`));
      expect({ path, line }).toEqual({ path, line: expect.any(String) });
      for (const name of Object.keys(spec.options)) expect(line).toContain(`--${name}`);
    }
  });

  test('the bash script completes commands, subcommands and flags in a real bash', async () => {
    const script = join(dir, 'airlock.bash');
    writeFileSync(script, (await cli(['completion', 'bash'])).stdout);
    const complete = async (...words: string[]) => {
      const probe = `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($#-1)); _airlock; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const { stdout } = await run('bash', ['-c', probe, 'probe', script, 'airlock', ...words]);
      return stdout.split('\n').filter((w) => w !== '');
    };
    expect(await complete('')).toEqual([...commands.map((c) => c.name), 'help', '--help', '--version']);
    expect(await complete('ap')).toEqual(['approve']);
    expect(await complete('rules', '')).toEqual([...(groups.find((g) => g.name === 'rules')?.subcommands.map((s) => s.name) ?? []), '--help']);
    expect(await complete('rules', 'test', '--t')).toEqual(['--tools', '--tool']);
    expect(await complete('rules', 'rehearse', '--s')).toEqual(['--since']);
    expect(await complete('approve', 'job-1', '--re')).toEqual(['--request', '--reason', '--reviewer']);
    expect(await complete('run', '--goal', 'x', '--new')).toEqual(['--new-run']);
    // A flag's value is left to the shell (file names): no flags offered there.
    expect(await complete('run', '--goal', '')).toEqual([]);
    expect(await complete('help', 'rules', 'va')).toEqual(['validate']);
    expect(await complete('completion', '')).toEqual(['--help', 'bash', 'zsh']);
  });

  // The script runs in a real zsh (compsys stubbed to print what it is given); a machine without zsh fails here, it never skips.
  const zsh = (process.env.PATH ?? '').split(':').filter((d) => d !== '').map((d) => join(d, 'zsh')).find((f) => existsSync(f));
  test('the zsh script completes commands, subcommands and flags in a real zsh', async () => {
    if (zsh === undefined) throw new Error('zsh is not on PATH, so the zsh completion script cannot be run: install zsh (Debian: apt-get install zsh; .ci/run does)');
    const shell: string = zsh;
    const script = join(dir, '_airlock');
    writeFileSync(script, (await cli(['completion', 'zsh'])).stdout);
    const complete = async (...typed: string[]) => {
      const probe = [
        'compdef() { :; }',
        '_describe() { local name=${@[-1]}; print -l -- ${(P)name}; }',
        '_files() { print FILES; }',
        'source "$1"; shift',
        'words=("$@"); CURRENT=$#; _airlock',
      ].join('\n');
      const { stdout } = await run(shell, ['-f', '-c', probe, 'probe', script, 'airlock', ...typed]);
      return stdout.split('\n').filter((w) => w !== '').map((w) => w.replace(/(?<!\\):.*$/, ''));
    };
    expect(await complete('')).toEqual([...commands.map((c) => c.name), 'help']);
    expect(await complete('rules', '')).toEqual(groups.find((g) => g.name === 'rules')?.subcommands.map((s) => s.name));
    expect(await complete('approve', 'job-1', '')).toEqual([...Object.keys(leaves.find(([p]) => p === 'approve')?.[1].options ?? {}).map((n) => `--${n}`), '--help']);
    expect(await complete('run', '--goal', '')).toEqual(['FILES']);
    expect(await complete('completion', '')).toEqual(['--help', 'bash', 'zsh']);
  });

  test('completion zsh names every command, subcommand and flag with its description', async () => {
    const out = await cli(['completion', 'zsh']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    expect(out.stdout.startsWith('#compdef airlock\n')).toBe(true);
    for (const c of commands) expect(out.stdout).toContain(`'${c.name}:${c.summary.replace(/'/g, `'\\''`)}'`);
    for (const [, spec] of leaves) {
      for (const [name, def] of Object.entries(spec.options)) expect(out.stdout).toContain(`'--${name}:${def.description.replace(/'/g, `'\\''`)}'`);
    }
  });
});

test('airlock --help names the variables it reaches Temporal with, as the temporal CLI does', async () => {
  const out = await cli(['--help']);
  expect(out.code).toBe(0);
  const connection = section(out.stdout, 'CONNECTION').join(' ');
  for (const name of ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'TEMPORAL_API_KEY', 'TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_PROFILE', 'TEMPORAL_CONFIG_FILE']) {
    expect(connection).toContain(name);
  }
});
