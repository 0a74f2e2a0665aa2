import { parseRulesDocument, RulesFileError } from '../../host/rules-file';
import { globCostProblem, regexCostProblem } from '../../core/util/pattern-cost';

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

test('a rules file with such a pattern does not load, and says which rule and field', () => {
  const load = () =>
    parseRulesDocument(
      { version: 1, rules: [{ id: 'slow', version: 1, name: 'slow', action: 'audit_only', when: { arg: 'path', regex: '(a+)+$' } }] },
      'rules.yaml',
    );
  expect(load).toThrow(RulesFileError);
  expect(load).toThrow(/slow.*when.*repeated group that itself repeats/);
});
