#!/usr/bin/env node
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const packageRoot = join(__dirname, '..');
const dist = join(packageRoot, 'dist');
const entry = join(dist, 'cli', 'main.js');
if (!existsSync(entry)) {
  process.stderr.write('airlock is not built yet: run `npm install` (or `npm run build`) in the airlock folder first\n');
  process.exit(1);
}

/** The command in this process, as it always ran. */
function runHere() {
  // V8's flags first: a code cache is made under the flags of its run and refused under others.
  require(join(dist, 'host', 'linear-regex-engine.js')).enableLinearRegexEngine();
  // Before anything else loads: what follows compiles from V8's cache of earlier runs (see cli/startup/compile-cache.ts).
  const { compileCacheFolder, installCompileCache } = require(join(dist, 'cli', 'startup', 'compile-cache.js'));
  installCompileCache(compileCacheFolder(process.env));
  // Short commands load the Temporal API's tree without Temporal Cloud's part (see cli/startup/proto-tree.ts); the
  // commands that serve or run workers load the package's own, as they always have: their start is not waited on.
  const serving = new Set(['dev', 'worker', 'topology', 'inbox', 'mcp', 'codec-server', 'replay']);
  if (!serving.has(process.argv[2] ?? '')) require(join(dist, 'cli', 'startup', 'proto-tree.js')).useProtoTree();
  require(entry).main(process.argv.slice(2));
}

// pending, show, approve and deny go to the resident CLI process when one runs (see cli/resident/).
const { viaResident } = require(join(dist, 'cli', 'resident', 'client.js'));
viaResident({ argv: process.argv.slice(2), env: process.env, packageRoot, serverScript: join(dist, 'cli', 'resident', 'server.js') }).then(
  (outcome) => (outcome.kind === 'done' ? process.exit(outcome.code) : runHere()),
  () => runHere(),
);
