import { readRulesFile, RulesFileError } from '../../../host/config/rules-file';
import { statePaths } from '../../../host/config/paths';
import { callFacts } from '../../../host/target-facts';
import { display } from '../../../core/redaction/display-text';
import { parseDuration } from '../../../core/util/duration';
import { maskValue, summarizeArgs } from '../../../core/redaction/masking';
import type { CallFacts } from '../../../core/tools/facts';
import type { RulesFile } from '../../../core/policy/rules';
import { buildSnapshot, shortVersion, type PolicySnapshot } from '../../../core/policy/snapshot';
import { callsNeedingFacts, changeLabel, changeRule, rehearseJob, summarizeByRule, type RehearsedCall } from '../../../core/job/rehearsal';
import { pathTargetsOf } from '../../../core/tools/registry';
import { printJson, stringOption, type CommandIo, type CommandRun } from '../../command';
import { JobError, UsageError } from '../../../client/errors';
import { readJobs } from '../../../client/history/job-history';
import { jobsQuery, listRuns } from '../../../client/history/runs';
import { printRulesFileError } from './source';
import { withClient } from '../../with-client';

const DEFAULT_SINCE = '7d';

/** The rules as a job of this machine would take them, with the roots the job itself had (when its snapshot was read). */
function snapshotMaker(io: CommandIo, file: string, rules: RulesFile): (roots: readonly string[] | undefined) => PolicySnapshot {
  const config = io.config();
  const cache = new Map<string, PolicySnapshot>();
  return (roots) => {
    const chosen = roots ?? statePaths(config).roots;
    const key = JSON.stringify(chosen);
    let snapshot = cache.get(key);
    if (snapshot === undefined) {
      snapshot = buildSnapshot(rules, file, { roots: chosen, judgeModel: config.judge.model, judgeTimeoutMs: config.judge.timeoutMs });
      cache.set(key, snapshot);
    }
    return snapshot;
  };
}

/** `--since`: a duration back from now (`7d`, `24h`), or a time (`2026-11-30T14:00:00Z`). */
function sinceTime(text: string, now: number): Date {
  const ms = parseDuration(text);
  if (ms !== undefined) return new Date(now - ms);
  const at = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text.trim()) ? Date.parse(text.trim()) : Number.NaN;
  if (Number.isNaN(at)) throw new UsageError(`--since takes a duration such as 7d, 24h or 90m, or a time such as 2026-11-30T14:00:00Z, not ${JSON.stringify(text)}`);
  return new Date(at);
}

function when(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`rehearse takes no positional arguments; usage: ${command.usage}`);
  const file = stringOption(args, 'rules');
  if (file === undefined) throw new UsageError(`--rules FILE is required (the rules to rehearse); usage: ${command.usage}`);
  const jobId = stringOption(args, 'job');
  if (jobId !== undefined && (jobId === '' || /["\\]/.test(jobId))) throw new UsageError('--job takes a job id (without quotes or backslashes)');
  const sinceText = stringOption(args, 'since') ?? (jobId === undefined ? DEFAULT_SINCE : undefined);
  const since = sinceText === undefined ? undefined : sinceTime(sinceText, Date.now());
  const json = args.values.json === true;

  let rules: RulesFile;
  try {
    rules = await readRulesFile(file);
  } catch (err) {
    if (!(err instanceof RulesFileError)) throw err;
    printRulesFileError(io, err, json);
    return 1;
  }
  const snapshotFor = snapshotMaker(io, file, rules);

  const read = await withClient(io, async (airlock) => {
    const runs = await listRuns(airlock.client, jobsQuery({ since, jobId }));
    if (jobId !== undefined && runs.length === 0) {
      throw new JobError(
        `no job ${jobId}${since !== undefined ? ` started since ${since.toISOString()}` : ''} in namespace ${io.config().temporal.namespace} (a history past the namespace's retention is gone)`,
      );
    }
    return readJobs(airlock.client, runs);
  });

  const rehearsed: RehearsedCall[] = [];
  for (const job of read.jobs) {
    const snapshot = snapshotFor(job.roots);
    // Targets the job never resolved but the new rules look at: only the file system can answer, as it is now.
    const factsNow = new Map<string, CallFacts>();
    for (const { key, call } of callsNeedingFacts(job, snapshot)) {
      factsNow.set(key, await callFacts(pathTargetsOf(call.toolName, call.args), snapshot.detectors.roots));
    }
    rehearsed.push(...rehearseJob(job, snapshot, factsNow));
  }
  const changes = rehearsed.filter((c) => c.changed);
  const byRule = summarizeByRule(changes);
  const version = snapshotFor(undefined).version;

  if (json) {
    printJson(io, {
      source: file,
      policyVersion: version,
      since: since?.toISOString() ?? null,
      job: jobId ?? null,
      jobs: read.jobs.length,
      runs: read.runs,
      calls: rehearsed.length,
      changes: changes.map((c) => ({
        jobId: c.jobId,
        runId: c.runId,
        decidedAt: new Date(c.at).toISOString(),
        callId: c.callId,
        toolName: c.toolName,
        args: maskValue(c.args),
        happened: c.happened,
        before: c.before,
        after: c.after,
        change: changeLabel(c),
        rule: changeRule(c),
        facts: c.facts,
      })),
      byRule,
      skipped: read.skipped,
    });
    return 0;
  }

  const window = sinceText === undefined ? '' : parseDuration(sinceText) !== undefined ? ` started in the last ${sinceText}` : ` started since ${since?.toISOString() ?? ''}`;
  const scope = jobId !== undefined ? `job ${jobId}${window}` : `jobs${window}`;
  io.out(
    display`rehearsal of ${file} (policy ${shortVersion(version)}) on ${scope}: ${read.jobs.length} job(s), ${rehearsed.length} tool call(s), ${changes.length} decision(s) would change`,
  );
  for (const c of changes) {
    const facts = c.facts === 'now' ? ' [targets as they are now]' : '';
    io.out(display`  ${c.jobId} ${when(c.at)} ${c.callId} ${c.toolName} ${summarizeArgs(c.args, 120)}: ${changeLabel(c)} (rule ${changeRule(c)})${facts}`);
  }
  if (byRule.length > 0) {
    io.out('by rule:');
    for (const r of byRule) {
      const detail = Object.entries(r.by).map(([label, n]) => `${label}: ${n}`).join('; ');
      io.out(display`  ${r.ruleId}: ${r.changes} (${detail})`);
    }
  }
  if (changes.some((c) => c.after.judge.length > 0)) {
    io.out('judged rules are not asked in a rehearsal: a call marked "if the judge matches" depends on its answer');
  }
  for (const s of read.skipped) io.out(display`skipped ${s.jobId} run ${s.runId}: ${s.reason}`);
  return 0;
};
