/**
 * POSIX path arithmetic without Node's `path` module, for code that runs in
 * the workflow sandbox. Lexical only: symlinks are the tools side's business.
 */
export function normalizePosix(path: string): string {
  const absolute = path.startsWith('/');
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!absolute) out.push('..');
      continue;
    }
    out.push(part);
  }
  const joined = out.join('/');
  return absolute ? `/${joined}` : joined === '' ? '.' : joined;
}

export function resolvePosix(base: string, path: string): string {
  return normalizePosix(path.startsWith('/') ? path : `${base}/${path}`);
}

export function isInside(parent: string, child: string): boolean {
  const p = normalizePosix(parent);
  const c = normalizePosix(child);
  return c === p || c.startsWith(p === '/' ? '/' : `${p}/`);
}

export function basenamePosix(path: string): string {
  const normalized = normalizePosix(path);
  return normalized.slice(normalized.lastIndexOf('/') + 1);
}
