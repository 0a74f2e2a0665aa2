import { patternRegExp } from './linear-regex';

/**
 * Glob patterns for rule conditions: `*` matches within one path segment,
 * `**` across segments, `?` one character, `[...]` a class, `{a,b}` either.
 */
export function globToRegExp(pattern: string): RegExp {
  let out = '';
  let inClass = false;
  let braceDepth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (inClass) {
      if (c === ']') inClass = false;
      out += c === '\\' ? '\\\\' : c;
      continue;
    }
    switch (c) {
      case '*':
        if (pattern[i + 1] === '*') {
          // `**/` also matches zero segments.
          if (pattern[i + 2] === '/') {
            out += '(?:.*/)?';
            i += 2;
          } else {
            out += '.*';
            i += 1;
          }
        } else {
          out += '[^/]*';
        }
        break;
      case '?':
        out += '[^/]';
        break;
      case '[':
        inClass = true;
        out += pattern[i + 1] === '!' ? (i++, '[^') : '[';
        break;
      case '{':
        braceDepth++;
        out += '(?:';
        break;
      case '}':
        if (braceDepth > 0) {
          braceDepth--;
          out += ')';
        } else out += '\\}';
        break;
      case ',':
        out += braceDepth > 0 ? '|' : ',';
        break;
      default:
        out += /[.+^${}()|\\]/.test(c) ? `\\${c}` : c;
    }
  }
  if (inClass || braceDepth > 0) throw new SyntaxError(`unbalanced glob pattern ${JSON.stringify(pattern)}`);
  return patternRegExp(`^${out}$`);
}

export function globMatches(pattern: string, value: string): boolean {
  return globToRegExp(pattern).test(value);
}
