/**
 * The longest run of text every match of a glob contains (see `globToRegExp`):
 * plain characters outside `{...}` and `[...]`, not broken by `*` or `?`.
 * A value without it cannot match, so a substring search can answer most
 * non-matches before the pattern runs. Empty when the glob has no such run.
 */
export function globLiteral(pattern: string): string {
  let longest = '';
  let run = '';
  let inClass = false;
  let braceDepth = 0;
  const cut = () => {
    if (run.length > longest.length) longest = run;
    run = '';
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    switch (c) {
      case '*':
        cut();
        if (pattern[i + 1] === '*') {
          // `**/` may match no segment at all: its slash is not required.
          i += pattern[i + 2] === '/' ? 2 : 1;
        }
        break;
      case '?':
        cut();
        break;
      case '[':
        cut();
        inClass = true;
        if (pattern[i + 1] === '!') i++;
        break;
      case '{':
        cut();
        braceDepth++;
        break;
      case '}':
        if (braceDepth > 0) braceDepth--;
        else run += c;
        break;
      default:
        // Inside braces, text belongs to one alternative only.
        if (braceDepth > 0) cut();
        else run += c;
    }
  }
  cut();
  return longest;
}
