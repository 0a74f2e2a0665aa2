/**
 * Whether an owner-written pattern (a rule's `regex` or `glob`) can take
 * time that grows faster than the text it is matched against: the policy
 * evaluates it on every call, on arguments a model chose, so a pattern
 * that backtracks catastrophically on a long path would stall the job.
 * Refused at load, conservatively: nested quantifiers (`(a+)+`), repeated
 * alternations (`(a|b)*`), backreferences, and more than a few unbounded
 * repetitions in one pattern (each one multiplies the work on a failing
 * match). What passes is matched in time close to linear in the text.
 */

/** Unbounded repetitions one pattern may hold. */
export const MAX_UNBOUNDED = 4;

interface Group {
  quantified: boolean;
  alternation: boolean;
}

/** Why a regular expression is refused, or undefined when it may be used. */
export function regexCostProblem(pattern: string): string | undefined {
  const stack: Group[] = [{ quantified: false, alternation: false }];
  let unbounded = 0;
  let last: 'atom' | 'group' | 'none' = 'none';
  let closed: Group | undefined;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    const top = stack[stack.length - 1];
    if (top === undefined) return 'unbalanced parentheses';
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (/[1-9]/.test(next) || next === 'k') return 'backreferences (\\1, \\k<name>) can take exponential time; match without them';
      i++;
      last = 'atom';
      continue;
    }
    if (c === '[') {
      // A class is one atom: skip to its end.
      let j = i + 1;
      if (pattern[j] === '^') j++;
      if (pattern[j] === ']') j++;
      while (j < pattern.length && pattern[j] !== ']') j += pattern[j] === '\\' ? 2 : 1;
      i = j;
      last = 'atom';
      continue;
    }
    if (c === '(') {
      stack.push({ quantified: false, alternation: false });
      // Skip a group's `?:`, `?=`, `?!`, `?<name>` head.
      if (pattern[i + 1] === '?') {
        const head = /^\?(?::|=|!|<=|<!|<[A-Za-z_][A-Za-z0-9_]*>)/.exec(pattern.slice(i + 1));
        if (head !== null) i += head[0].length;
      }
      last = 'none';
      continue;
    }
    if (c === ')') {
      const group = stack.pop();
      const outer = stack[stack.length - 1];
      if (group === undefined || outer === undefined) return 'unbalanced parentheses';
      closed = group;
      // What a group holds counts for the group around it too.
      outer.quantified ||= group.quantified;
      last = 'group';
      continue;
    }
    if (c === '|') {
      top.alternation = true;
      last = 'none';
      continue;
    }
    const quantifier = c === '*' || c === '+' ? 'unbounded' : c === '?' ? 'optional' : c === '{' ? braces(pattern, i) : undefined;
    if (quantifier !== undefined && last !== 'none') {
      if (c === '{') i = pattern.indexOf('}', i);
      if (pattern[i + 1] === '?' || pattern[i + 1] === '+') i++;
      if (quantifier === 'unbounded' || quantifier === 'repeat') {
        if (last === 'group' && closed !== undefined) {
          if (closed.quantified) return 'a repeated group that itself repeats (like (a+)+) can take exponential time';
          if (closed.alternation) return 'a repeated alternation (like (a|b)*) can take exponential time; use a character class';
        }
        top.quantified = true;
      }
      if (quantifier === 'unbounded' && ++unbounded > MAX_UNBOUNDED) return `more than ${MAX_UNBOUNDED} unbounded repetitions (*, +, {n,}) make a failing match slow on long text`;
      last = 'none';
      continue;
    }
    last = 'atom';
  }
  if (stack.length !== 1) return 'unbalanced parentheses';
  return undefined;
}

/** `{n}` repeats a fixed count; `{n,m}` up to m; `{n,}` without bound. */
function braces(pattern: string, at: number): 'unbounded' | 'repeat' | 'optional' | undefined {
  const m = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(at));
  if (m === null) return undefined;
  if (m[2] !== undefined && (m[3] ?? '') === '') return 'unbounded';
  const most = Number(m[3] ?? m[1]);
  return most > 1 ? 'repeat' : 'optional';
}

/** Wildcards one glob may hold. */
export const MAX_GLOB_STARS = 8;

/** Why a glob is refused, or undefined: each `*`/`**` is a repetition of the regular expression it becomes. */
export function globCostProblem(pattern: string): string | undefined {
  const stars = (pattern.match(/\*+/g) ?? []).length;
  return stars > MAX_GLOB_STARS ? `more than ${MAX_GLOB_STARS} wildcards (* or **) make a failing match slow on long paths; use fewer` : undefined;
}
