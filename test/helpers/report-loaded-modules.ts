import { writeFileSync } from 'node:fs';

/**
 * Preloaded into a process under test (`node --require` with the built
 * file): when the process exits, however it exits, the files it loaded go to
 * the file named by LOADED_MODULES_REPORT, one path a line. TypeScript's
 * `import()` compiles to `require`, so `require.cache` holds every module.
 * The CLI's stand-in for `@temporalio/proto`'s tree (cli/startup/proto-tree.ts)
 * counts as loaded once read, and a last line says which tree it gave.
 */
const report = process.env.LOADED_MODULES_REPORT;
const treeState = Symbol.for('airlock.proto-tree');
if (report !== undefined) {
  process.on('exit', () => {
    const lines: string[] = [];
    let tree: string | undefined;
    for (const [file, loaded] of Object.entries(require.cache)) {
      const state: unknown = loaded === undefined ? undefined : Reflect.get(loaded, treeState);
      if (typeof state === 'string') tree = state;
      if (state !== 'unread') lines.push(file);
    }
    if (tree !== undefined) lines.push(`proto-tree: ${tree}`);
    writeFileSync(report, lines.join('\n'));
  });
}
