import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

// The project's own lint rules (plain CommonJS, so ESLint's config loads them without a build).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { plugin } = require('../../scripts/lint/plugin.cjs') as { plugin: ESLint.Plugin };

/** A small project on disk, linted with exactly the two rules as the project configures them. */
async function lint(files: Record<string, string>, floors = false): Promise<string[]> {
  const root = mkdtempSync(join(tmpdir(), 'airlock-lint-'));
  try {
    writeFileSync(join(root, 'package.json'), '{}');
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, name)), { recursive: true });
      writeFileSync(join(root, name), text);
    }
    const eslint = new ESLint({
      cwd: root,
      overrideConfigFile: true,
      overrideConfig: [
        { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser }, plugins: { airlock: plugin }, rules: { 'airlock/no-import-cycle': 'error' } },
        { files: ['core/**/*.ts'], rules: { 'airlock/core-layers': 'error' } },
        ...(floors ? [{ files: ['**/*.ts'], rules: { 'airlock/floors': 'error' as const } }] : []),
      ],
    });
    const results = await eslint.lintFiles(Object.keys(files).filter((f) => f.endsWith('.ts')));
    return results.flatMap((r) => r.messages.map((m) => `${r.filePath.slice(root.length + 1)}:${m.line}: ${m.message}`)).sort();
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const header = (name: string, imports: string) => `/**\n * core/${name}/ — what it is.\n *\n * May import: ${imports}.\n */\n`;

const layered = {
  'core/util/hash.ts': `${header('util', 'nothing else in core/')}export const hash = (s: string) => s;\n`,
  'core/redaction/mask.ts': `${header('redaction', 'util')}import { hash } from '../util/hash';\nexport const mask = (s: string) => hash(s);\n`,
  'core/job/state.ts': `${header('job', 'util, redaction')}import { mask } from '../redaction/mask';\nimport { view } from './view';\nexport const state = () => mask(view);\n`,
  'core/job/view.ts': `export const view = 'v';\n`,
};

test('a tree whose folders import only what their headers allow, without circles, is clean', async () => {
  expect(await lint(layered)).toEqual([]);
});

test('an import circle fails on every file of it, naming the way round; type-only imports count', async () => {
  const problems = await lint({
    ...layered,
    'client/a.ts': `import type { B } from './b';\nexport type A = B | 1;\n`,
    'client/b.ts': `import { c } from './c';\nexport type B = typeof c;\n`,
    'client/c.ts': `import type { A } from './a';\nexport const c: A | 2 = 2;\n`,
  });
  expect(problems).toEqual([
    'client/a.ts:1: import circle: client/a.ts -> client/b.ts -> client/c.ts -> client/a.ts. Move what both sides need down into a module both import.',
    'client/b.ts:1: import circle: client/b.ts -> client/c.ts -> client/a.ts -> client/b.ts. Move what both sides need down into a module both import.',
    'client/c.ts:1: import circle: client/c.ts -> client/a.ts -> client/b.ts -> client/c.ts. Move what both sides need down into a module both import.',
  ]);
});

test('a core/ folder importing a folder its header does not list fails, and so does one importing upwards', async () => {
  const problems = await lint({
    ...layered,
    'core/util/hash.ts': `${header('util', 'nothing else in core/')}import { mask } from '../redaction/mask';\nexport const hash = (s: string) => s + typeof mask;\n`,
  });
  expect(problems).toContain(
    "core/util/hash.ts:6: core/util/ may import nothing else in core/ (its header in core/util/hash.ts), not core/redaction/ (../redaction/mask).",
  );
  // The same change makes a circle between the two folders.
  expect(problems.filter((p) => p.includes('import circle'))).toHaveLength(2);
});

test('core/ files import nothing outside core/, sit in a folder, and every folder has exactly one header', async () => {
  const problems = await lint({
    ...layered,
    'host/disk.ts': `export const disk = 1;\n`,
    'core/redaction/leak.ts': `import { disk } from '../../host/disk';\nexport const leak = disk;\n`,
    'core/loose.ts': `export const loose = 1;\n`,
    'core/audit/events.ts': `export const events = [];\n`,
    'core/model/a.ts': `${header('model', 'util')}export const a = 1;\n`,
    'core/model/b.ts': `${header('model', 'redaction')}export const b = 1;\n`,
    'core/tools/t.ts': `${header('tools', 'util, shelf')}export const t = 1;\n`,
  });
  expect(problems).toEqual(
    expect.arrayContaining([
      'core/redaction/leak.ts:1: core/ is pure: ../../host/disk is outside core/.',
      'core/loose.ts:1: core/ holds concept folders only: move loose.ts into the folder of its concept.',
      'core/audit/events.ts:1: core/audit/ needs exactly one header with a "May import:" line in its main file (found 0)',
      'core/model/a.ts:1: core/model/ needs exactly one header with a "May import:" line in its main file (found 2)',
      'core/tools/t.ts:1: core/tools/\'s header allows "shelf", which is no folder of core/',
    ]),
  );
});

/** A house of floors, each top folder with its README's list. */
const house = {
  ...layered,
  'core/README.md': 'May import: nothing outside core.\n',
  'host/README.md': 'May import: core.\n',
  'host/disk.ts': `import { hash } from '../core/util/hash';\nexport const disk = hash('d');\n`,
  'client/README.md': 'May import: core, host.\n',
  'client/cli.ts': `import { disk } from '../host/disk';\nexport const cli = disk;\n`,
};

test('top folders that import only the floors their READMEs list are clean', async () => {
  expect(await lint(house, true)).toEqual([]);
});

test('an upward import fails naming the README; a floor without a README, a name that is no floor and a circle of floors fail too', async () => {
  const upward = await lint({ ...house, 'host/disk.ts': `import { cli } from '../client/cli';\nexport const disk = cli;\n` }, true);
  expect(upward).toContain('host/disk.ts:1: host/ may import core/ (its README.md), not client/ (../client/cli).');
  const problems = await lint(
    {
      ...house,
      'workers/main.ts': `export const main = 1;\n`,
      'host/README.md': 'May import: core, client, attic.\n',
    },
    true,
  );
  expect(problems).toEqual(
    expect.arrayContaining([
      'workers/main.ts:1: workers/ needs a README.md with a "May import:" line naming the top folders it may import',
      'host/disk.ts:1: host/README.md allows "attic", which is no top folder',
      'client/cli.ts:1: the floors make a circle: client/ -> host/ -> client/; one of them must not import the other',
    ]),
  );
});
