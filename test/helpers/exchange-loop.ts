import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A real process that keeps swapping two names with
 * `renameat2(RENAME_EXCHANGE)`: the attacker of the symlink-swap race.
 */
export interface ExchangeLoop {
  /** Resolves once the loop runs. */
  ready(): Promise<void>;
  /** Stops the loop; resolves with the number of exchanges it made. */
  stop(): Promise<number>;
}

export type ExchangeLauncher = { readonly kind: string; readonly start: (a: string, b: string) => ExchangeLoop };

// syscall numbers of renameat2, by `os.uname().machine`.
const PYTHON = `
import ctypes, os, signal, sys
nr = {'x86_64': 316, 'aarch64': 276, 'riscv64': 276, 'loongarch64': 276}.get(os.uname().machine)
if nr is None:
    sys.stderr.write('renameat2: unknown syscall number on ' + os.uname().machine + '\\n'); sys.exit(3)
libc = ctypes.CDLL(None, use_errno=True)
a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
if len(sys.argv) > 3:
    sys.exit(0)
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
n = 0
print('ready', flush=True)
while not stop:
    if libc.syscall(nr, -100, a, -100, b, 2) != 0:
        sys.stderr.write('renameat2: ' + os.strerror(ctypes.get_errno()) + '\\n'); sys.exit(2)
    n += 1
print('swaps %d' % n, flush=True)
`;

const C_SOURCE = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
static volatile sig_atomic_t stop = 0;
static void on_term(int s) { (void)s; stop = 1; }
int main(int argc, char **argv) {
  if (argc != 3) return 64;
  signal(SIGTERM, on_term);
  unsigned long n = 0;
  printf("ready\\n"); fflush(stdout);
  while (!stop) {
    if (syscall(SYS_renameat2, AT_FDCWD, argv[1], AT_FDCWD, argv[2], 2) != 0) { perror("renameat2"); return 2; }
    n++;
  }
  printf("swaps %lu\\n", n);
  return 0;
}
`;

function launch(command: string, args: string[]): ExchangeLoop {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return {
    async ready() {
      const deadline = Date.now() + 10_000;
      while (!out.includes('ready')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`exchange loop did not start: ${err}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop() {
      child.kill('SIGTERM');
      const code = await exited;
      const swaps = /swaps (\d+)/.exec(out);
      if (code !== 0 || swaps === null) throw new Error(`exchange loop failed (exit ${String(code)}): ${err}`);
      return Number(swaps[1]);
    },
  };
}

/** python3 with ctypes, else a C file compiled with gcc; undefined (with why) when neither works here. */
export function findExchanger(workDir: string): ExchangeLauncher | string {
  if (process.platform !== 'linux') return `renameat2 needs Linux (this is ${process.platform})`;
  const probe = spawnSync('python3', ['-c', PYTHON, '/', '/', 'probe'], { encoding: 'utf8' });
  if (probe.status === 0) return { kind: 'python3 ctypes', start: (a, b) => launch('python3', ['-c', PYTHON, a, b]) };
  const source = join(workDir, 'exchange.c');
  const binary = join(workDir, 'exchange');
  writeFileSync(source, C_SOURCE);
  const built = spawnSync('gcc', ['-O2', '-o', binary, source], { encoding: 'utf8' });
  if (built.status === 0) return { kind: 'gcc', start: (a, b) => launch(binary, [a, b]) };
  return `neither python3 with ctypes (${(probe.stderr ?? '').trim() || String(probe.error)}) nor gcc (${(built.stderr ?? '').trim() || String(built.error)}) is available`;
}
