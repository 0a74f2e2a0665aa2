import { detectAll, defaultDeniedCommands, type DetectorInput } from '../../core/policy/detectors';
import type { TargetFact } from '../../core/tools/facts';
import type { ToolCategory } from '../../core/tools/registry';

const settings = { roots: ['/srv/データ', '/srv/media'], allowedHosts: ['api.example.com', '*.lan.example'], deniedCommands: defaultDeniedCommands };

function allFired(toolName: string, category: ToolCategory, args: Record<string, unknown>, extra: Partial<DetectorInput> = {}): string[] {
  const targets = typeof args.path === 'string' ? [args.path] : typeof args.from === 'string' ? [args.from, String(args.to)] : [];
  return detectAll({ toolName, category, args, targets, settings, ...extra });
}

/** The detectors that describe what a call does; `destroys_data` has its own tests below. */
function fired(toolName: string, category: ToolCategory, args: Record<string, unknown>, extra: Partial<DetectorInput> = {}): string[] {
  return allFired(toolName, category, args, extra).filter((d) => d !== 'destroys_data');
}

const fact = (path: string, more: Partial<TargetFact> = {}): TargetFact => ({ path, real: path, exists: true, symlink: false, ...more });

describe('deletes', () => {
  test.each<[Record<string, unknown>, string[]]>([
    [{ path: '写真/古い.jpg', recursive: false }, []],
    [{ path: '写真', recursive: true }, ['recursive_delete']],
    [{ path: '写真/*.jpg', recursive: false }, ['wildcard_delete']],
    [{ path: 'backup-??.tar', recursive: true }, ['recursive_delete', 'wildcard_delete']],
  ])('fs_delete %j → %j', (args, expected) => {
    expect(fired('fs_delete', 'delete', args)).toEqual(expected);
  });

  test.each<[string[], string[]]>([
    [['rm', '-rf', '/srv/データ/old'], ['recursive_delete']],
    [['/bin/rm', '--recursive', 'x'], ['recursive_delete']],
    [['rm', 'a.txt'], []],
    [['rm', '*.log'], ['wildcard_delete']],
    [['find', '.', '-name', '*.tmp', '-delete'], ['recursive_delete']],
    // A zero-width space or fullwidth letters do not hide a command.
    [['r\u200bm', '-r', 'x'], ['recursive_delete']],
    [['ｒｍ', '-R', 'x'], ['recursive_delete']],
    // Abbreviated long options, wrappers and commands run by other commands.
    [['rm', '--recur', 'x'], ['recursive_delete']],
    [['sudo', '-u', 'root', 'rm', '-rf', 'x'], ['recursive_delete']],
    [['env', 'LANG=C', 'timeout', '5', 'rm', '-r', 'x'], ['recursive_delete']],
    [['xargs', '-0', 'rm', '-r'], ['recursive_delete']],
    [['find', '.', '-name', 'x', '-exec', 'rm', '-rf', '{}', '+'], ['recursive_delete']],
    [['find', '.', '-name', 'x', '-exec', 'ls', '{}', ';'], []],
  ])('command %j → %j', (argv, expected) => {
    expect(fired('command_run', 'command_execution', { argv })).toEqual(expected);
  });
});

describe('permissions and ownership', () => {
  test.each<[string, string[]]>([
    ['640', ['permission_change']],
    ['777', ['permission_change', 'world_writable']],
    ['0666', ['permission_change', 'world_writable']],
    ['4755', ['permission_change', 'setuid']],
    ['2750', ['permission_change', 'setuid']],
  ])('fs_chmod mode %s → %j', (mode, expected) => {
    expect(fired('fs_chmod', 'file_change', { path: 'a.sh', mode })).toEqual(expected);
  });

  test('mode widening needs the current mode from the facts', () => {
    const args = { path: 'a.sh', mode: '750' };
    expect(fired('fs_chmod', 'file_change', args)).not.toContain('mode_widening');
    expect(fired('fs_chmod', 'file_change', args, { facts: { targets: [fact('a.sh', { mode: '700' })] } })).toContain('mode_widening');
    expect(fired('fs_chmod', 'file_change', args, { facts: { targets: [fact('a.sh', { mode: '755' })] } })).not.toContain('mode_widening');
  });

  test.each<[string[], string[]]>([
    [['chmod', 'o+w', 'f'], ['world_writable']],
    [['chmod', 'a+rwx', 'f'], ['world_writable']],
    [['chmod', 'u+s', 'f'], ['setuid']],
    [['chmod', 'o=u', 'f'], ['world_writable']],
    [['sudo', 'chmod', '-R', 'a+w', 'd'], ['world_writable']],
    [['chmod', 'o-w', 'f'], []],
    [['chmod', '755', 'f'], []],
    [['chown', 'root:root', 'f'], ['ownership_change']],
    [['chgrp', 'wheel', 'f'], ['ownership_change']],
  ])('command %j → %j (besides permission_change)', (argv, expected) => {
    expect(fired('command_run', 'command_execution', { argv }).filter((d) => d !== 'permission_change')).toEqual(expected);
  });
});

describe('paths', () => {
  test.each<[string, boolean]>([
    ['写真/猫.jpg', false],
    ['/srv/media/film.mkv', false],
    ['/srv/データ/../../etc/passwd', true],
    ['../secrets', true],
    ['/srv/mediaX/film.mkv', true],
    ['/etc/shadow', true],
    ['/srv/データ/\u202Egpj.exe', false],
    // A full-width solidus is no separator: these `..` climb out for real.
    ['/srv/media/a\uFF0Fb/../../etc/x', true],
  ])('%s outside the roots: %s', (path, outside) => {
    expect(fired('fs_read', 'read', { path }).includes('outside_roots')).toBe(outside);
  });

  test('symlinks are reported from the facts the tools side gathered', () => {
    expect(fired('fs_read', 'read', { path: 'link/x' }, { facts: { targets: [fact('link/x', { symlink: true, real: '/srv/media/x' })] } })).toContain('symlink_path');
    expect(fired('fs_read', 'read', { path: 'link/x' }, { facts: { targets: [fact('link/x')] } })).not.toContain('symlink_path');
    expect(fired('fs_read', 'read', { path: 'link/x' })).not.toContain('symlink_path');
  });

  test('without roots, outside_roots never fires', () => {
    expect(detectAll({ toolName: 'fs_read', category: 'read', args: { path: '/etc' }, targets: ['/etc'], settings: { ...settings, roots: [] } })).toEqual([]);
  });
});

describe('outbound and commands', () => {
  test.each<[unknown, boolean]>([
    ['https://api.example.com/v1/x?token=1', false],
    ['https://nas.lan.example/upload', false],
    ['https://lan.example/', false],
    ['https://evil.example.net/', true],
    ['https://api.example.com.evil.net/', true],
    ['not a url', true],
    [undefined, true],
  ])('http %j is an external send: %s', (url, expected) => {
    expect(fired('http_request', 'network', url === undefined ? {} : { url }).includes('external_send')).toBe(expected);
  });

  test.each<[string[], boolean]>([
    [['mkfs.ext4', '/dev/sda1'], false],
    [['mkfs', '-t', 'ext4', '/dev/sda1'], true],
    [['/sbin/shutdown', '-h', 'now'], true],
    [['/sbin/DD', 'if=/dev/zero'], true],
    [['sudo', 'mkfs', '/dev/sdb'], true],
    [['ls', '-la'], false],
  ])('command %j is denied: %s', (argv, expected) => {
    expect(fired('command_run', 'command_execution', { argv }).includes('denied_command')).toBe(expected);
  });
});

describe('destroys_data', () => {
  const destroys = (toolName: string, category: ToolCategory, args: Record<string, unknown>, extra: Partial<DetectorInput> = {}) =>
    allFired(toolName, category, args, extra).includes('destroys_data');

  test('deletes, permission and ownership changes always replace or remove what exists', () => {
    expect(destroys('fs_delete', 'delete', { path: 'a', recursive: false })).toBe(true);
    expect(destroys('fs_chmod', 'file_change', { path: 'a', mode: '640' })).toBe(true);
    expect(destroys('command_run', 'command_execution', { argv: ['sudo', 'chown', 'me', 'f'] })).toBe(true);
    expect(destroys('command_run', 'command_execution', { argv: ['truncate', '-s', '0', 'f'] })).toBe(true);
    expect(destroys('command_run', 'command_execution', { argv: ['ls', '-l'] })).toBe(false);
  });

  test('an overwriting write or move destroys data unless the target is known not to exist', () => {
    const write = { path: 'r.txt', content: '', mode: 'overwrite' };
    expect(destroys('fs_write', 'file_change', write)).toBe(true);
    expect(destroys('fs_write', 'file_change', write, { facts: { targets: [fact('r.txt')] } })).toBe(true);
    expect(destroys('fs_write', 'file_change', write, { facts: { targets: [fact('r.txt', { exists: false })] } })).toBe(false);
    expect(destroys('fs_write', 'file_change', { ...write, mode: 'create' })).toBe(false);
    expect(destroys('fs_write', 'file_change', { ...write, mode: 'append' })).toBe(false);
    const move = { from: 'a', to: 'b', overwrite: true };
    expect(destroys('fs_move', 'file_change', move)).toBe(true);
    expect(destroys('fs_move', 'file_change', move, { facts: { targets: [fact('a'), fact('b', { exists: false })] } })).toBe(false);
    expect(destroys('fs_move', 'file_change', { ...move, overwrite: false })).toBe(false);
  });
});
