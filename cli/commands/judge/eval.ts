import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { display } from '../../../core/redaction/display-text';
import { evalReport, judgeEvalSetSchema, routedToJudge, type EvalOutcome } from '../../../core/policy/judge-eval';
import { judgeCallSummary } from '../../../core/judge/judge';
import { formatZodIssues } from '../../../core/model/replay-script';
import { printJson, stringOption, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';

const pct = (v: number | null) => (v === null ? 'n/a' : `${(v * 100).toFixed(1)}%`);
const ms = (v: number | null) => (v === null ? 'n/a' : `${Math.round(v)} ms`);

export const run: CommandRun = async (args, io, command) => {
  const file = stringOption(args, 'set');
  if (file === undefined) throw new UsageError(`--set is required (rules/judge-eval.json is a starting set); usage: ${command.usage}`);
  let raw: unknown;
  try {
    raw = parseYaml(await readFile(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--set: cannot read ${file} (${(err as Error).message.split('\n')[0]})`);
  }
  const parsed = judgeEvalSetSchema.safeParse(raw);
  if (!parsed.success) throw new UsageError(`--set: ${file}: ${formatZodIssues(parsed.error)}`);
  const config = io.config();
  if (config.judge.baseUrl === undefined && config.judge.apiKey === undefined) {
    throw new UsageError('no judge endpoint: set AIRLOCK_JUDGE_BASE_URL (or OPENAI_BASE_URL) to an OpenAI-compatible endpoint');
  }
  // The judge and its model client (openai) load only once the set and the endpoint are known to be right.
  const [{ createJudgeActivities }, { createModelClient }] = await Promise.all([
    import('../../../activities/judge'),
    import('../../../host/model-client'),
  ]);
  const judge = createJudgeActivities({
    openai: createModelClient(config.judge, config.judge.timeoutMs),
    model: config.judge.model,
    timeoutMs: config.judge.timeoutMs,
    cacheSize: 0,
  });
  const outcomes: EvalOutcome[] = [];
  for (const c of parsed.data.cases) {
    if (!routedToJudge(c)) {
      outcomes.push({ caseId: c.id, expected: c.expected, predicted: 'not_routed' });
      continue;
    }
    const { outcome, latencyMs } = await judge.judgeRules({
      rules: [{ id: c.rule.id, condition: c.rule.condition }],
      call: judgeCallSummary(c.call.tool, c.call.category, c.call.arguments),
      recentTurns: [],
    });
    const predicted = outcome.status === 'ok' ? (outcome.decisions.find((d) => d.ruleId === c.rule.id)?.result ?? 'unknown') : 'failed';
    outcomes.push({ caseId: c.id, expected: c.expected, predicted, latencyMs });
  }
  const report = evalReport(outcomes);
  if (args.values.json === true) {
    printJson(io, { set: file, model: config.judge.model, endpoint: config.judge.baseUrl ?? 'OpenAI', report, outcomes });
    return;
  }
  io.out(display`judge ${config.judge.model} on ${parsed.data.cases.length} case(s) from ${file}`);
  io.out(`  precision ${pct(report.precision)}   recall ${pct(report.recall)}   unknown ${pct(report.unknownRate)}   routed to the judge ${pct(report.routingRate)}`);
  io.out(`  latency p50 ${ms(report.latencyP50Ms)}   p95 ${ms(report.latencyP95Ms)}`);
  for (const o of outcomes.filter((x) => x.predicted !== x.expected && !(x.predicted === 'not_routed' && x.expected === 'no_match'))) {
    io.out(display`  miss: ${o.caseId}: expected ${o.expected}, got ${o.predicted}`);
  }
};
