#!/usr/bin/env node
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const entry = join(__dirname, '..', 'dist', 'client', 'cli.js');
if (!existsSync(entry)) {
  process.stderr.write('airlock is not built yet: run `npm install` (or `npm run build`) in the airlock folder first\n');
  process.exit(1);
}
require(entry).main(process.argv.slice(2));
