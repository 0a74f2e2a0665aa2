/**
 * Programs that run another program named in their arguments: wrappers
 * (`env`, `timeout`, `nice`, `sudo`, `xargs`, `find -exec` …), shells,
 * interpreters that take code in an argument (`python -c`, `perl -e`,
 * `awk`), multi-call binaries (`busybox`). Allowing one of them is allowing
 * whatever it is told to run: `command_run` refuses them unless the tools
 * config names the one program such an entry may run (`wraps`). Recognised
 * by what the program file is (its real name and the names of the same
 * file), never by parsing their options, which loses to the next spelling.
 */

const launcherNames = new Set([
  // Wrappers: run their arguments as a command.
  'env', 'timeout', 'nice', 'nohup', 'setsid', 'stdbuf', 'ionice', 'chrt', 'taskset', 'xargs', 'parallel', 'time', 'flock',
  'unshare', 'nsenter', 'chroot', 'setpriv', 'prlimit', 'numactl', 'cpulimit', 'systemd-run', 'systemd-nspawn', 'firejail', 'bwrap',
  'sudo', 'doas', 'su', 'runuser', 'pkexec', 'sg', 'newgrp', 'watch', 'script', 'expect', 'ssh', 'strace', 'ltrace', 'gdb', 'valgrind',
  'find', 'command', 'exec', 'eval', 'builtin', 'start-stop-daemon', 'daemonize', 'at', 'batch',
  // Shells.
  'sh', 'bash', 'dash', 'ash', 'zsh', 'ksh', 'mksh', 'pdksh', 'yash', 'fish', 'csh', 'tcsh', 'rbash', 'elvish', 'nu', 'xonsh', 'pwsh',
  // Multi-call binaries.
  'busybox', 'toybox',
  // Interpreters and editors that run code from an argument.
  'python', 'perl', 'ruby', 'node', 'nodejs', 'deno', 'bun', 'php', 'lua', 'luajit', 'tclsh', 'wish', 'guile', 'racket', 'rscript',
  'awk', 'gawk', 'mawk', 'nawk', 'sed', 'ed', 'vi', 'vim', 'nvim', 'emacs', 'jshell', 'groovy', 'julia', 'erl', 'escript', 'elixir', 'php-cgi',
]);

/** `python3.12` is `python`, `perl5.36` is `perl`, `php8.2` is `php`, `lua5.4` is `lua`. */
function unversioned(name: string): string {
  return name.toLowerCase().replace(/(?:[0-9][0-9.]*)$/, '').replace(/[-.]$/, '');
}

/** Whether a program file by this name runs other programs given in its arguments. */
export function isLauncher(name: string): boolean {
  const lower = name.toLowerCase();
  return launcherNames.has(lower) || launcherNames.has(unversioned(lower));
}

/** The first of these names that is a launcher's. */
export function launcherAmong(names: readonly string[]): string | undefined {
  return names.find(isLauncher);
}
