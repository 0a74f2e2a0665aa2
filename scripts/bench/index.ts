import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { approvalPart } from './approval';
import { parseBenchArgs, usage, type BenchOptions, type PartName } from './args';
import { cliPart } from './cli';
import { renderTable, writeReport, type Figure } from './figures';
import { floorPart } from './floor';
import { gatePart } from './gate';
import { historyPart } from './history';
import { httpPart } from './http';
import { parkedPart } from './parked';
import { maskingPart } from './masking';
import { policyPart } from './policy';
import { servicesPart } from './services';
import { startStack, type Stack } from './stack';
import { storesPart } from './stores';
import { throughputPart } from './throughput';

/**
 * `npm run bench`: airlock's speed and scale on a real Temporal dev server
 * with the product's own workers. Prints one table and writes the same
 * figures as JSON. Figures, never assertions: they depend on the machine.
 */

type Part = { readonly server: false; run(o: BenchOptions): Promise<Figure[]> | Figure[] } | { readonly server: true; run(s: Stack, o: BenchOptions): Promise<Figure[]> };

const parts: Record<PartName, Part> = {
  policy: { server: false, run: policyPart },
  masking: { server: false, run: maskingPart },
  floor: { server: true, run: floorPart },
  gate: { server: true, run: gatePart },
  services: { server: true, run: servicesPart },
  http: { server: true, run: httpPart },
  history: { server: true, run: (s) => historyPart(s) },
  approval: { server: true, run: approvalPart },
  stores: { server: true, run: storesPart },
  cli: { server: true, run: cliPart },
  throughput: { server: true, run: throughputPart },
  parked: { server: true, run: parkedPart },
};

function commit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

async function main(): Promise<number> {
  const options = parseBenchArgs(process.argv.slice(2));
  if (options === 'help') {
    process.stdout.write(`${usage}\n`);
    return 0;
  }
  const started = Date.now();
  const figures: Figure[] = [];
  const errors: Array<{ part: string; error: string }> = [];
  const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
  let stack: Stack | undefined;
  onInterrupt = async () => {
    await stack?.stop();
  };
  try {
    for (const name of options.only) {
      const part = parts[name];
      const t0 = Date.now();
      log(`${name} ...`);
      try {
        if (part.server) {
          stack ??= await startStack();
          figures.push(...(await part.run(stack, options)));
        } else figures.push(...(await part.run(options)));
        log(`${name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      } catch (err) {
        // One broken part does not cost the others' figures.
        errors.push({ part: name, error: message(err) });
        log(`${name} FAILED: ${message(err)}`);
      }
    }
  } finally {
    await stack?.stop();
  }
  const seconds = (Date.now() - started) / 1000;
  const meta = {
    date: new Date(started).toISOString(),
    commit: commit(),
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    temporalSdk: '1.24',
    parts: options.only,
    options,
    seconds,
  };
  process.stdout.write(`${renderTable(figures)}\n`);
  process.stdout.write(`\n${options.only.join(', ')} in ${seconds.toFixed(0)} s on ${meta.cpus} CPU(s), node ${meta.node}; figures depend on the machine\n`);
  writeReport(options.json, { meta, figures, errors });
  log(`wrote ${options.json}`);
  for (const e of errors) process.stderr.write(`bench: ${e.part} failed: ${e.error}\n`);
  return errors.length > 0 ? 1 : 0;
}

let onInterrupt: () => Promise<void> = async () => undefined;
let interrupted = false;
// Ctrl-C or a kill stops everything gracefully; a second one exits at once, and the exit hooks still kill every child.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    process.stderr.write(`bench: ${signal}, stopping\n`);
    const force = setTimeout(() => process.exit(130), 20_000);
    void onInterrupt().finally(() => {
      clearTimeout(force);
      process.exit(130);
    });
  });
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${message(err)}\n`);
    process.exit(1);
  },
);
