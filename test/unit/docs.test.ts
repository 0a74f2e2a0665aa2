import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { commands } from '../../cli/command-registry';
import { isGroup } from '../../cli/command';
import { configVariableNames } from '../../core/config/config';
import { repoRoot } from '../helpers/processes';

/**
 * The documents hold together: every relative link and anchor resolves,
 * every `airlock COMMAND` they show exists in the command registry, every
 * AIRLOCK_* variable they name is one airlock (or a test) reads, and every
 * variable airlock reads is documented — the configuration's own in the
 * configuration guide's table.
 */

const documents = ['README.md', 'CONTRIBUTING.md', ...readdirSync(join(repoRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const text = (file: string) => readFileSync(join(repoRoot, file), 'utf8');

/** The text outside fenced code blocks and inline code (where links are links), and the code itself. */
function split(markdown: string): { readonly prose: string; readonly code: string } {
  const prose: string[] = [];
  const code: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) {
      fenced = !fenced;
      continue;
    }
    if (fenced) {
      code.push(line);
      continue;
    }
    prose.push(line.replace(/`[^`]*`/g, (span) => {
      code.push(span.slice(1, -1));
      return '';
    }));
  }
  return { prose: prose.join('\n'), code: code.join('\n') };
}

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, each space a `-`; a repeated heading gets `-1`, `-2`… */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6} (.*)$/.exec(line);
    if (heading === null) continue;
    const base = (heading[1] ?? '').toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every link target of a document's prose: markdown links, and the `src`/`href` of HTML in it. */
function targetsOf(prose: string): string[] {
  const markdown = [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] ?? '');
  const html = [...prose.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
  return [...markdown, ...html];
}

test('every relative link and anchor of every document resolves', () => {
  const broken: string[] = [];
  for (const file of documents) {
    for (const target of targetsOf(split(text(file)).prose)) {
      if (/^(https?:|mailto:)/.test(target)) continue;
      const [path = '', anchor] = target.split('#');
      const to = path === '' ? join(repoRoot, file) : resolve(dirname(join(repoRoot, file)), path);
      if (!existsSync(to)) {
        broken.push(`${file}: ${target} (no ${relative(repoRoot, to)})`);
        continue;
      }
      if (anchor !== undefined && !anchorsOf(readFileSync(to, 'utf8')).has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${relative(repoRoot, to)})`);
    }
  }
  expect(broken).toEqual([]);
});

test('the link check itself: a missing file and a missing anchor are found, a heading with punctuation is its GitHub anchor', () => {
  expect(anchorsOf('## HTTPS from airlock itself (`--tls`)\n## Undo\n## Undo\n```\n# not a heading\n```')).toEqual(new Set(['https-from-airlock-itself---tls', 'undo', 'undo-1']));
  expect(targetsOf(split('see [a](docs/a.md#b), `[not](a link)`, <img src="x.png">').prose)).toEqual(['docs/a.md#b', 'x.png']);
});

test('every `airlock COMMAND` the documents show is a command of the registry', () => {
  const names = new Map(commands.map((c) => [c.name, isGroup(c) ? new Set(c.subcommands.map((s) => s.name)) : undefined]));
  const unknown: string[] = [];
  for (const file of documents) {
    for (const m of split(text(file)).code.matchAll(/(?:^|[\s(|;&$])airlock ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/gm)) {
      const [, command = '', sub] = m;
      if (!names.has(command)) unknown.push(`${file}: airlock ${command}`);
      const subs = names.get(command);
      if (subs !== undefined && sub !== undefined && !subs.has(sub)) unknown.push(`${file}: airlock ${command} ${sub}`);
    }
  }
  expect(unknown).toEqual([]);
});

/** AIRLOCK_* names a set of files holds (code, compose file, Dockerfile). */
function variablesIn(folders: readonly string[], files: readonly string[] = []): Set<string> {
  const found = new Set<string>();
  const visit = (path: string) => {
    for (const entry of readdirSync(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      if (entry.isDirectory()) visit(full);
      else if (/\.(ts|js|cjs|mjs)$/.test(entry.name)) for (const m of readFileSync(full, 'utf8').matchAll(/(?:env\.|env\[['"]|['"`$({])(AIRLOCK_[A-Z0-9_]*[A-Z0-9])\b/g)) found.add(m[1] ?? '');
    }
  };
  for (const folder of folders) visit(join(repoRoot, folder));
  for (const file of files) for (const m of readFileSync(join(repoRoot, file), 'utf8').matchAll(/\$\{(AIRLOCK_[A-Z0-9_]*[A-Z0-9])/g)) found.add(m[1] ?? '');
  return found;
}

test('every AIRLOCK_* variable the documents name is read by airlock (or its tests), and every one airlock reads is documented; the configuration\'s own in its table', () => {
  const product = new Set([...configVariableNames.filter((n) => n.startsWith('AIRLOCK_')), ...variablesIn(['core', 'host', 'client', 'servers', 'ops', 'cli', 'workers', 'activities', 'scripts', 'bin'], ['docker-compose.temporal.yml'])]);
  const known = new Set([...product, ...variablesIn(['test'])]);
  const named = new Map<string, string>();
  for (const file of documents) for (const m of text(file).matchAll(/AIRLOCK_[A-Z0-9_]*[A-Z0-9]/g)) named.set(m[0], file);
  expect([...named].filter(([name]) => !known.has(name)).map(([name, file]) => `${file}: ${name}`)).toEqual([]);
  expect([...product].filter((name) => !named.has(name))).toEqual([]);
  const configuration = text('docs/configuration.md');
  expect(configVariableNames.filter((name) => !configuration.includes(`| \`${name}\``))).toEqual([]);
});

test("every AIRLOCK_* variable the CLI's help names is one airlock reads", () => {
  const read = new Set([...configVariableNames, ...variablesIn(['core', 'host', 'client', 'servers', 'ops', 'cli', 'workers', 'activities', 'scripts', 'bin'])]);
  const help = JSON.stringify(commands);
  expect([...help.matchAll(/AIRLOCK_[A-Z0-9_]*[A-Z0-9]/g)].map((m) => m[0]).filter((name) => !read.has(name))).toEqual([]);
});
