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

/** Wrappers that take their options, then a program, and pass everything after it to that program unread. */
const passThrough = new Set([
  'env', 'timeout', 'nice', 'nohup', 'setsid', 'stdbuf', 'ionice', 'chrt', 'taskset', 'time', 'flock', 'unshare', 'nsenter', 'chroot',
  'setpriv', 'prlimit', 'numactl', 'cpulimit', 'systemd-run', 'firejail', 'bwrap', 'sudo', 'doas', 'pkexec', 'strace', 'ltrace', 'valgrind',
  'setarch', 'linux32', 'linux64', 'capsh', 'unbuffer', 'rlwrap',
]);

/** Shells and interpreters: given a script file first, they run it and hand it the rest. */
const scriptRunners = new Set([
  'sh', 'bash', 'dash', 'ash', 'zsh', 'ksh', 'mksh', 'pdksh', 'yash', 'fish', 'csh', 'tcsh', 'rbash', 'sash', 'posh', 'elvish', 'nu', 'xonsh', 'pwsh',
  'python', 'pypy', 'perl', 'ruby', 'node', 'nodejs', 'deno', 'bun', 'php', 'lua', 'luajit', 'tclsh', 'wish', 'guile', 'racket', 'rscript',
  'groovy', 'julia', 'escript', 'elixir', 'php-cgi',
]);

/** Launchers that read their arguments as a command line or as code: no fixed program makes them safe. */
const commandLineReaders = new Set([
  'xargs', 'parallel', 'find', 'watch', 'ssh', 'script', 'expect', 'su', 'runuser', 'sg', 'newgrp', 'gdb', 'busybox', 'toybox', 'command', 'exec',
  'eval', 'builtin', 'start-stop-daemon', 'daemonize', 'at', 'batch', 'systemd-nspawn', 'awk', 'gawk', 'mawk', 'nawk', 'sed', 'ed', 'vi', 'vim',
  'nvim', 'emacs', 'jshell', 'erl', 'ipython', 'ipython3', 'irb', 'erb',
]);

/** Interpreter names that carry a version: `python3.12`, `perl5.36`, `php8.2`, `lua5.4`, `pypy3`. */
const versioned = /^(python|pypy|perl|ruby|php|lua|node|tclsh|wish|guile|pwsh|ipython)[0-9][0-9.]*$/;

function base(name: string): string {
  const lower = name.toLowerCase();
  const v = versioned.exec(lower);
  if (v?.[1] !== undefined) return v[1];
  // Statically linked shells: `bash-static`, `zsh-static`.
  return lower.replace(/-static$/, '');
}

/** Whether a program file by this name runs other programs given in its arguments. */
export function isLauncher(name: string): boolean {
  const b = base(name);
  // The dynamic loader runs any program it is given: ld-linux-x86-64.so.2, ld-musl-x86_64.so.1, ld.so.
  if (/^(ld-linux|ld-musl|ld\.so)/.test(b)) return true;
  return passThrough.has(b) || scriptRunners.has(b) || commandLineReaders.has(b);
}

/** Whether a `wraps` entry can make this launcher safe: it must pass the call's arguments to the wrapped program unread. */
export function wrapsSafely(name: string): boolean {
  const b = base(name);
  return passThrough.has(b) || scriptRunners.has(b);
}

/** The first of these names that is a launcher's. */
export function launcherAmong(names: readonly string[]): string | undefined {
  return names.find(isLauncher);
}
