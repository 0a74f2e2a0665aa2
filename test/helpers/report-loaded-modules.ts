import { writeFileSync } from 'node:fs';

/**
 * Preloaded into a process under test (`node --require` with the built
 * file): when the process exits, however it exits, the files it loaded go to
 * the file named by LOADED_MODULES_REPORT, one path a line. TypeScript's
 * `import()` compiles to `require`, so `require.cache` holds every module.
 */
const report = process.env.LOADED_MODULES_REPORT;
if (report !== undefined) {
  process.on('exit', () => writeFileSync(report, Object.keys(require.cache).join('\n')));
}
