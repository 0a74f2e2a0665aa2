import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { plugin } = require('../../scripts/lint/plugin.cjs') as { plugin: ESLint.Plugin };

/** `file:line: rule's first words` for every problem in `code`, linted with only `airlock/no-module-state`. */
async function problems(code: string): Promise<string[]> {
  const eslint = new ESLint({
    overrideConfigFile: true,
    overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser }, plugins: { airlock: plugin }, rules: { 'airlock/no-module-state': 'error' } }],
  });
  const [result] = await eslint.lintText(code, { filePath: 'core/example/module.ts' });
  return (result?.messages ?? []).map((m) => `${m.line}: ${m.message.split(':')[0]}`);
}

test('what a module builds once when it loads, and what functions keep in their own variables, is clean', async () => {
  const code = [
    "import { registry } from './registry';",
    'const TABLE = { a: 1, b: 2 };',
    "const NAMES = new Map([['a', 1]]);",
    'const PLAIN = /x+/i;',
    "const ALSO_PLAIN = new RegExp('x', 'u');",
    'const built: string[] = [];',
    "built.push('at load');", // top-level: runs once, when the module loads
    "TABLE.a = 3;",
    "registry.set('mine', TABLE);",
    'export function f(input: string[]): number {',
    '  const local = new Map<string, number>();',
    '  const out: string[] = [];',
    '  for (const s of input) { out.push(s); local.set(s, 1); }',
    '  let n = 0;',
    '  n++;',
    '  const copy = { ...TABLE };',
    '  copy.a = n;',
    '  return out.length + local.size + NAMES.size + copy.a + built.length + (PLAIN.test(input[0] ?? "") ? 1 : 0) + (ALSO_PLAIN.test("") ? 1 : 0);',
    '}',
  ].join('\n');
  expect(await problems(code)).toEqual([]);
});

test('state at the top level is reported where it is declared, and changes to top-level contents where they happen', async () => {
  const code = [
    "import { registry } from './registry';", // 1
    'let count = 0;', // 2
    'export var shared: string | undefined;', // 3
    'const seen = new Map<string, number>();', // 4
    'const marks = new WeakSet<object>();', // 5
    'const WORDS = /a|b/g;', // 6
    "const STICKY = new RegExp('x', 'y');", // 7
    'const list: string[] = [];', // 8
    'const TABLE: Record<string, number> = { a: 1 };', // 9
    'export function f(s: string): void {', // 10
    '  list.push(s);', // 11
    '  TABLE[s] = 1;', // 12
    '  TABLE.a++;', // 13
    '  delete TABLE.a;', // 14
    '  Object.assign(TABLE, { b: 2 });', // 15
    "  registry.set(s, 1);", // 16: an imported module's object
    '  list.sort();', // 17
    '  seen.set(s, 1);', // 18: reported at its declaration only
    '  WORDS.lastIndex = 0;', // 19: likewise
    '  count = 1;', // 20: reported as the `let`
    '  (list as string[]).push(s);', // 21: a cast changes nothing
    '  (TABLE!).b = 3;', // 22
    '}',
  ].join('\n');
  expect(await problems(code)).toEqual([
    '2: top-level let count',
    '3: top-level var shared',
    '4: top-level empty Map seen is filled later',
    '5: top-level empty WeakSet marks is filled later',
    '6: top-level regular expression WORDS with the g flag keeps its position between uses',
    '7: top-level regular expression STICKY with the y flag keeps its position between uses',
    '11: .push() changes the top-level list',
    '12: this assignment changes the top-level TABLE',
    '13: ++ changes the top-level TABLE',
    '14: delete changes the top-level TABLE',
    '15: Object.assign changes the top-level TABLE',
    '16: .set() changes the top-level registry',
    '17: .sort() changes the top-level list',
    '21: .push() changes the top-level list',
    '22: this assignment changes the top-level TABLE',
  ]);
});

test('a shared cache that says why stays; the reason is where it is declared', async () => {
  const code = [
    '// eslint-disable-next-line airlock/no-module-state -- keyed by the pattern it compiles: the same for every job',
    'const compiled = new Map<string, RegExp>();',
    'export function compile(p: string): RegExp {',
    "  const known = compiled.get(p) ?? new RegExp(p, 'u');",
    '  compiled.set(p, known);',
    '  return known;',
    '}',
  ].join('\n');
  expect(await problems(code)).toEqual([]);
});
