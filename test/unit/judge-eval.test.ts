import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { evalReport, judgeEvalSetSchema, percentile, routedToJudge } from '../../core/policy/judge-eval';

test('the shipped labelled set is valid, bilingual, carries injection attempts, and exercises routing', () => {
  const set = judgeEvalSetSchema.parse(JSON.parse(readFileSync(join(__dirname, '..', '..', 'rules', 'judge-eval.json'), 'utf8')));
  expect(set.cases.some((c) => /[\u3040-\u30ff\u4e00-\u9fff]/.test(c.rule.condition))).toBe(true);
  expect(set.cases.some((c) => /^[\x20-\x7e]+$/.test(c.rule.condition))).toBe(true);
  expect(set.cases.filter((c) => c.id.startsWith('injection-')).length).toBeGreaterThanOrEqual(2);
  const routed = set.cases.filter(routedToJudge).map((c) => c.id);
  expect(routed).not.toContain('not-routed-read');
  expect(routed).not.toContain('not-routed-when');
  expect(routed).toContain('routed-when');
});

test('the report: precision over match answers, recall over expected matches, unknown over judged, routing over all', () => {
  const report = evalReport([
    { caseId: 'a', expected: 'match', predicted: 'match', latencyMs: 100 },
    { caseId: 'b', expected: 'match', predicted: 'unknown', latencyMs: 300 },
    { caseId: 'c', expected: 'no_match', predicted: 'match', latencyMs: 200 },
    { caseId: 'd', expected: 'no_match', predicted: 'no_match', latencyMs: 400 },
    { caseId: 'e', expected: 'match', predicted: 'not_routed' },
    { caseId: 'f', expected: 'no_match', predicted: 'failed', latencyMs: 900 },
  ]);
  expect(report).toMatchObject({
    cases: 6,
    routed: 5,
    routingRate: 5 / 6,
    precision: 0.5,
    recall: 1 / 3,
    unknownRate: 2 / 5,
    latencyP50Ms: 300,
    latencyP95Ms: 900,
    confusion: { truePositive: 1, falsePositive: 1, falseNegative: 2, trueNegative: 2 },
  });
  expect(percentile([], 50)).toBeNull();
  expect(evalReport([{ caseId: 'x', expected: 'no_match', predicted: 'no_match', latencyMs: 1 }]).precision).toBeNull();
});
