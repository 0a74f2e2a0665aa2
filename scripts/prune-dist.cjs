'use strict';
/**
 * Removes compiled files whose source is gone, before `tsc` writes the new
 * ones: a module turned into a folder (`tool-gate.ts` into `tool-gate/`)
 * would otherwise be shadowed by its stale `tool-gate.js`, which Node
 * resolves first. Kept: the workflow bundles and tsc's build info.
 */
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const dist = path.join(root, 'dist');
const keep = new Set([path.join(dist, 'workflow-bundle.js'), path.join(dist, 'workflow-bundle.plain.js'), path.join(dist, '.tsbuildinfo')]);
let removed = 0;

function prune(dir) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      prune(p);
      if (fs.readdirSync(p).length === 0) fs.rmdirSync(p);
      continue;
    }
    if (keep.has(p)) continue;
    const match = /^(.*)\.js(\.map)?$/.exec(path.relative(dist, p));
    if (match === null) continue;
    if (!fs.existsSync(path.join(root, `${match[1]}.ts`))) {
      fs.rmSync(p);
      removed++;
    }
  }
}

prune(dist);
if (removed > 0) process.stdout.write(`dist: removed ${removed} compiled file(s) whose source is gone\n`);
