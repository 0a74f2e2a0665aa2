import { join } from 'node:path';
import { enableLinearRegexEngine } from '../../host/linear-regex-engine';
import { compileCacheFolder, installCompileCache } from '../startup/compile-cache';
import { useProtoTree } from '../startup/proto-tree';
import type * as Serve from './serve';

/**
 * The resident CLI process's entry, started (detached, output discarded)
 * by a short client that found none. It starts as `bin/airlock.js` does —
 * V8's flags, the compile cache, the smaller protobuf tree — before loading
 * the CLI itself (serve.ts), which then waits for commands.
 */
enableLinearRegexEngine();
installCompileCache(compileCacheFolder(process.env));
useProtoTree();
// Loaded only now: everything it brings compiles through the cache installed above.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { serveResident } = require('./serve') as typeof Serve;
void serveResident({ packageRoot: join(__dirname, '..', '..', '..') }).then(
  () => process.exit(0),
  () => process.exit(1),
);
