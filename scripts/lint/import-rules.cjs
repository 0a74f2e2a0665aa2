'use strict';
/**
 * Two lint rules on the project's own imports, read as text from the files
 * on disk (relative specifiers only; packages are the other rules' job):
 *
 * - `airlock/no-import-cycle`: no file may take part in an import circle,
 *   type-only imports included (a circle of types is still a circle of
 *   concepts).
 * - `airlock/core-layers`: `core/` holds concept folders only; a file in
 *   `core/X/` imports from another folder `core/Y/` only when X's header
 *   lists Y ("May import: util, tools."), and nothing outside `core/`. The
 *   header is the one-paragraph comment in the folder's main file, so the
 *   rule and what a reader is told are the same text.
 *
 * - `airlock/floors`: each top folder (`workflows/`, `activities/`, `host/`,
 *   `workers/`, `client/`, `servers/`, `ops/`, `cli/`, `scripts/`; `core/` by the rule above) imports
 *   from another top folder only when its `README.md` lists it ("May
 *   import: core, host."), and the lists make no circle: the house stands
 *   in floors, and nothing imports upwards.
 *
 * `require.resolve` only names a file (a workflow bundle's entry, say) and
 * is no import. The graph is read once per lint run and per project root.
 */
const fs = require('node:fs');
const path = require('node:path');

const SOURCE_DIRS = ['core', 'workflows', 'activities', 'host', 'workers', 'client', 'servers', 'ops', 'cli', 'scripts'];
const SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)(['"])(\.{1,2}\/[^'"]*)\1/gm;
const MAY_IMPORT = /^\s*\*\s*May import:\s*(.+?)\.?\s*$/m;

function walk(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

function resolveImport(fromFile, spec) {
  const base = path.resolve(path.dirname(fromFile), spec);
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') && fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  return undefined;
}

/** Every relative import of one file: `{ spec, target, line }`, target undefined when it names no .ts file. */
function importsOf(file, text = fs.readFileSync(file, 'utf8')) {
  const found = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const line = text.slice(0, m.index).split('\n').length;
    found.push({ spec: m[2], target: resolveImport(file, m[2]), line });
  }
  return found;
}

/** The import graph of the project's source folders (tests are leaves and stay out of it). */
function importGraph(root) {
  const files = SOURCE_DIRS.flatMap((d) => walk(path.join(root, d), []));
  const graph = new Map();
  for (const f of files) graph.set(f, importsOf(f));
  return graph;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function circles(graph) {
  let index = 0;
  const stack = [];
  const on = new Set();
  const idx = new Map();
  const low = new Map();
  const result = [];
  const connect = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const { target: w } of graph.get(v) ?? []) {
      if (w === undefined || !graph.has(w)) continue;
      if (!idx.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        component.push(w);
      } while (w !== v);
      const selfLoop = component.length === 1 && (graph.get(v) ?? []).some((i) => i.target === v);
      if (component.length > 1 || selfLoop) result.push(new Set(component));
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) connect(v);
  return result;
}

/** One path around the circle from `start` back to it, for the message. */
function circlePath(graph, component, start) {
  const seen = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const { target: w } of graph.get(v) ?? []) {
      if (w === undefined || !component.has(w)) continue;
      if (w === start) {
        const trail = [v];
        for (let p = seen.get(v); p !== null && p !== undefined; p = seen.get(p)) trail.unshift(p);
        return [...trail, start];
      }
      if (!seen.has(w)) {
        seen.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/** The concept folders of core/ with what each header allows; `problems` for folders without a readable header. */
function coreLayers(root) {
  const core = path.join(root, 'core');
  const folders = new Map();
  const problems = [];
  let entries = [];
  try {
    entries = fs.readdirSync(core, { withFileTypes: true });
  } catch {
    return { folders, problems, strayFiles: [] };
  }
  const strayFiles = entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(core, e.name));
  for (const e of entries.filter((d) => d.isDirectory())) {
    const headers = walk(path.join(core, e.name), []).flatMap((f) => {
      const head = fs.readFileSync(f, 'utf8').match(/^\s*\/\*\*[\s\S]*?\*\//);
      const may = head?.[0].match(MAY_IMPORT);
      return may === null || may === undefined ? [] : [{ file: f, list: may[1] }];
    });
    if (headers.length !== 1) {
      problems.push(`core/${e.name}/ needs exactly one header with a "May import:" line in its main file (found ${headers.length})`);
      folders.set(e.name, { allowed: null, main: undefined });
      continue;
    }
    const list = headers[0].list.trim();
    const allowed = /^nothing\b/.test(list) ? [] : list.split(/\s*,\s*/).filter((w) => w.length > 0);
    folders.set(e.name, { allowed: new Set(allowed), main: headers[0].file });
  }
  for (const [name, { allowed }] of folders) {
    for (const other of allowed ?? []) {
      if (!folders.has(other)) problems.push(`core/${name}/'s header allows "${other}", which is no folder of core/`);
    }
  }
  return { folders, problems, strayFiles };
}

/** Top folders a floor's README may name besides the source folders (tests are leaves, which scripts may borrow helpers of). */
const OTHER_FLOORS = ['test'];

/** Each top folder's README "May import:" list; `problems` for a missing or unreadable one, a name that is no floor, or lists that make a circle. */
function floors(root) {
  const folders = new Map();
  const problems = [];
  for (const name of SOURCE_DIRS) {
    if (!fs.existsSync(path.join(root, name))) continue;
    const readme = path.join(root, name, 'README.md');
    const text = fs.existsSync(readme) ? fs.readFileSync(readme, 'utf8') : '';
    const may = text.match(/^May import:\s*(.+?)\.?\s*$/m);
    if (may === null) {
      problems.push({ folder: name, message: `${name}/ needs a README.md with a "May import:" line naming the top folders it may import` });
      folders.set(name, null);
      continue;
    }
    const list = may[1].trim();
    const allowed = /^nothing\b/.test(list) ? [] : list.split(/\s*,\s*/).map((w) => w.replace(/\s*\(.*\)$/, '')).filter((w) => w.length > 0);
    for (const other of allowed) {
      if (!SOURCE_DIRS.includes(other) && !OTHER_FLOORS.includes(other)) problems.push({ folder: name, message: `${name}/README.md allows "${other}", which is no top folder` });
    }
    folders.set(name, new Set(allowed));
  }
  // The lists, followed from each folder: one that leads back to itself is a circle of floors.
  for (const start of folders.keys()) {
    const seen = new Set();
    const visit = (name, trail) => {
      for (const next of folders.get(name) ?? []) {
        if (next === start) {
          problems.push({ folder: start, message: `the floors make a circle: ${[...trail, next].map((f) => `${f}/`).join(' -> ')}; one of them must not import the other` });
          return true;
        }
        if (seen.has(next)) continue;
        seen.add(next);
        if (visit(next, [...trail, next])) return true;
      }
      return false;
    };
    visit(start, [start]);
  }
  return { folders, problems };
}

const cache = new Map();
function projectFacts(root) {
  let facts = cache.get(root);
  if (facts === undefined) {
    const graph = importGraph(root);
    facts = { graph, circles: circles(graph), layers: coreLayers(root), floors: floors(root) };
    cache.set(root, facts);
  }
  return facts;
}

/** The project root: the nearest folder above `file` with a package.json. */
function rootOf(file) {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

const rel = (root, f) => path.relative(root, f).split(path.sep).join('/');

const noImportCycle = {
  meta: { type: 'problem', docs: { description: 'No file takes part in an import circle.' }, schema: [] },
  create(context) {
    const file = context.filename;
    const root = rootOf(file);
    if (root === undefined) return {};
    return {
      Program(node) {
        const { graph, circles: found } = projectFacts(root);
        const component = found.find((c) => c.has(file));
        if (component === undefined) return;
        const trail = circlePath(graph, component, file);
        const first = (graph.get(file) ?? []).find((i) => i.target === trail[1]);
        context.report({
          node,
          loc: first === undefined ? node.loc : { line: first.line, column: 0 },
          message: `import circle: ${trail.map((f) => rel(root, f)).join(' -> ')}. Move what both sides need down into a module both import.`,
        });
      },
    };
  },
};

const coreLayersRule = {
  meta: { type: 'problem', docs: { description: "A core/ folder imports only what its header's \"May import:\" line lists." }, schema: [] },
  create(context) {
    const file = context.filename;
    const root = rootOf(file);
    if (root === undefined) return {};
    const core = path.join(root, 'core');
    const inCore = path.relative(core, file);
    if (inCore.startsWith('..') || path.isAbsolute(inCore)) return {};
    return {
      Program(node) {
        const { graph, layers } = projectFacts(root);
        const parts = inCore.split(path.sep);
        if (parts.length === 1) {
          context.report({ node, message: `core/ holds concept folders only: move ${parts[0]} into the folder of its concept.` });
          return;
        }
        const own = parts[0];
        const layer = layers.folders.get(own);
        if (layer === undefined || layer.allowed === null) {
          const problem = layers.problems.find((p) => p.startsWith(`core/${own}/`));
          context.report({ node, message: problem ?? `core/${own}/ has no "May import:" header.` });
          return;
        }
        if (file === layer.main) {
          for (const problem of layers.problems.filter((p) => p.startsWith(`core/${own}/`))) context.report({ node, message: problem });
        }
        for (const { spec, target, line } of graph.get(file) ?? importsOf(file)) {
          const resolved = target ?? path.resolve(path.dirname(file), spec);
          const there = path.relative(core, resolved);
          const loc = { line, column: 0 };
          if (there.startsWith('..') || path.isAbsolute(there)) {
            context.report({ node, loc, message: `core/ is pure: ${spec} is outside core/.` });
            continue;
          }
          const folder = there.split(path.sep)[0];
          if (folder === own || layer.allowed.has(folder)) continue;
          context.report({
            node,
            loc,
            message: `core/${own}/ may import ${layer.allowed.size === 0 ? 'nothing else in core/' : [...layer.allowed].join(', ')} (its header in ${rel(root, layer.main)}), not core/${folder}/ (${spec}).`,
          });
        }
      },
    };
  },
};

const floorsRule = {
  meta: { type: 'problem', docs: { description: 'A top folder imports only the top folders its README\'s "May import:" line lists.' }, schema: [] },
  create(context) {
    const file = context.filename;
    const root = rootOf(file);
    if (root === undefined) return {};
    const own = rel(root, file).split('/')[0];
    if (!SOURCE_DIRS.includes(own)) return {};
    return {
      Program(node) {
        const { graph, floors: house } = projectFacts(root);
        // A folder's own problems are told once, in its first file.
        const first = [...graph.keys()].filter((f) => rel(root, f).split('/')[0] === own).sort()[0];
        if (file === first) for (const p of house.problems.filter((q) => q.folder === own)) context.report({ node, message: p.message });
        // core/'s own rule says what it may import.
        const allowed = house.folders.get(own);
        if (own === 'core' || allowed === undefined || allowed === null) return;
        for (const { spec, target, line } of graph.get(file) ?? importsOf(file)) {
          const resolved = target ?? path.resolve(path.dirname(file), spec);
          const there = rel(root, resolved).split('/')[0];
          if (there === own || there === '..' || allowed.has(there)) continue;
          context.report({
            node,
            loc: { line, column: 0 },
            message: `${own}/ may import ${allowed.size === 0 ? 'no other top folder' : [...allowed].map((f) => `${f}/`).join(', ')} (its README.md), not ${there}/ (${spec}).`,
          });
        }
      },
    };
  },
};

module.exports = {
  rules: { 'no-import-cycle': noImportCycle, 'core-layers': coreLayersRule, floors: floorsRule },
  importGraph,
  circles,
  coreLayers,
  floors,
};
