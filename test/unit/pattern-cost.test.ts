import { parseRulesDocument, RulesFileError } from '../../host/config/rules-file';
import { globCostProblem, regexCostProblem } from '../../core/util/pattern-cost';
import { linearEngine, patternRegExp } from '../../core/util/linear-regex';

test.each([
  ['(a+)+$', /repeated group that itself repeats/],
  ['^(\\w+\\s?)*$', /repeated group that itself repeats/],
  ['((ab)*)+', /repeated group that itself repeats/],
  ['(.*)*x', /repeated group that itself repeats/],
  ['(a|aa)+b', /repeated alternation/],
  ['(x|y){2,}', /repeated alternation/],
  ['(a)\\1', /backreferences/],
  ['(?<w>a)\\k<w>', /backreferences/],
  ['.*a.*b.*c.*d.*e', /more than 4 unbounded repetitions/],
])('the regex %s is refused at load', (pattern, reason) => {
  expect(regexCostProblem(pattern)).toMatch(reason);
});

test.each(['^/srv/(media|share)/.*\\.mkv$', '\\.(tar|zip|7z)$', '^[a-z0-9_-]{1,64}$', '(?:ab)+c', 'secret|password|token', '^\\d{3,4}$', '[(|)]+'])(
  'the regex %s is accepted',
  (pattern) => {
    expect(regexCostProblem(pattern)).toBeUndefined();
  },
);

test('globs with many wildcards are refused; ordinary ones are not', () => {
  expect(globCostProblem('/srv/**/a/**/b/**/c/**/d/**/e/**/f/**/g/**/h/**/i')).toMatch(/more than 8 wildcards/);
  expect(globCostProblem('/srv/media/**/*.mkv')).toBeUndefined();
});

test('with the linear engine (as every airlock process runs), a backreference does not load, and the worst shapes match at once', () => {
  const load = (regex: string) =>
    parseRulesDocument({ version: 1, rules: [{ id: 'slow', version: 1, name: 'slow', action: 'audit_only', when: { arg: 'path', regex } }] }, 'rules.yaml');
  expect(linearEngine()).toBe(true);
  expect(() => load('(a)\\1')).toThrow(RulesFileError);
  expect(() => load('(a)\\1')).toThrow(/slow.*when.*cannot be matched in time linear in the text/);
  expect(() => load('^\\p{L}+$')).toThrow(/Unicode property escapes/);
  // Catastrophic for a backtracking engine (seconds at 30 characters); linear here, on 100,000.
  for (const regex of ['^(a+)+b$', '^((?:a|a))*b$', '^.*/.*\\.key$']) {
    const snapshot = load(regex);
    const rule = snapshot.rules[0];
    const when = rule?.when;
    expect(when !== undefined && 'regex' in when ? patternRegExp(when.regex ?? '').test(`${'a'.repeat(100_000)}!`) : undefined).toBe(false);
  }
});
