import { callFacts } from '../../../host/target-facts';
import { preflight } from '../../../core/job/preflight';
import { conditionMatches } from '../../../core/policy/conditions';
import { candidateRules, detectorProbe, evaluateCall } from '../../../core/policy/evaluate';
import { type CallContext } from '../../../core/policy/call-evaluation';
import { allTools, getTool, pathTargetsOf, sideEffectToolNames } from '../../../core/tools/registry';
import { loadToolsSetup } from '../../../host/config/tools-config-file';
import { display } from '../../../core/redaction/display-text';
import { printJson, stringOption, type CommandIo, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';
import { describeSource, rulesFileFor, snapshotFor } from './source';

/** Every registered tool with its category, and whether this machine's tools config can run it. */
async function listTools(args: Parameters<CommandRun>[0], io: CommandIo): Promise<void> {
  const setup = await loadToolsSetup(io.config());
  const tools = allTools()
    .filter((t) => t.category !== 'control')
    .map((t) => ({ name: t.name, category: t.category, risk: t.risk, needs: [...t.needs], available: setup.availableTools.includes(t.name), description: t.description }));
  if (args.values.json === true) {
    printJson(io, { toolsConfig: setup.file ?? null, tools });
    return;
  }
  io.out(display`${tools.length} tools (tools config: ${setup.file ?? 'none, file tools only'}):`);
  for (const t of tools) {
    const missing = t.available ? '' : ` — not configured here (needs ${t.needs.join(', ')})`;
    io.out(display`  ${t.name.padEnd(16)} ${t.category.padEnd(17)} risk ${t.risk}${missing}`);
  }
}

export const run: CommandRun = async (args, io, command) => {
  if (args.values.tools === true) {
    await listTools(args, io);
    return;
  }
  const toolName = stringOption(args, 'tool');
  if (toolName === undefined) throw new UsageError(`--tool is required; usage: ${command.usage}`);
  if (getTool(toolName) === undefined || toolName === 'complete') {
    throw new UsageError(`--tool takes a registered tool: ${sideEffectToolNames.join(', ')}`);
  }
  const file = rulesFileFor(io.config(), stringOption(args, 'file'));
  const snapshot = await snapshotFor(io.config(), file);
  const call = preflight(
    { id: 'dry-run', name: toolName, arguments: stringOption(args, 'args') ?? '{}' },
    sideEffectToolNames,
    snapshot.detectors.roots,
  );
  if (call.kind !== 'tool') throw new UsageError(call.kind === 'error' ? call.message : 'not a tool call');
  const targets = pathTargetsOf(toolName, call.args);
  const ctx: CallContext = {
    toolName,
    category: call.category,
    args: call.args,
    scope: { piece: stringOption(args, 'piece'), movement: stringOption(args, 'movement') },
    targets,
    facts: await callFacts(targets, snapshot.detectors.roots),
  };
  const evaluation = evaluateCall(snapshot, 'tool.before', ctx, {}, Date.now());
  const { probe } = detectorProbe(snapshot, ctx);
  const candidates = candidateRules(snapshot, 'tool.before', ctx).map((rule) => {
    const holds = rule.when === undefined || conditionMatches(rule.when, call.args, probe);
    const verdict = !holds
      ? 'when does not hold'
      : rule.condition !== undefined
        ? `needs the judge (${rule.enforceJudge && !rule.shadow ? 'enforced' : 'shadow'}); not asked in a dry run`
        : rule.shadow
          ? `matches (shadow: ${rule.action}, no effect)`
          : `matches → ${rule.action}`;
    return { ruleId: rule.id, ruleVersion: rule.version, action: rule.action, holds, verdict };
  });
  const result = {
    source: describeSource(file),
    policyVersion: snapshot.version,
    call: { tool: toolName, category: call.category, args: call.args },
    candidates,
    detectors: evaluation.detectors,
    decision: evaluation.decision,
    decidingRule: evaluation.deciding?.ruleId ?? null,
    instructions: evaluation.instructions,
  };
  if (args.values.json === true) {
    printJson(io, result);
    return;
  }
  io.out(display`${toolName} ${JSON.stringify(call.args)} (category ${call.category}) against ${result.source}`);
  io.out(candidates.length === 0 ? '  no rule is in scope for this call' : `  ${candidates.length} rule(s) in scope:`);
  for (const c of candidates) io.out(display`    ${c.ruleId} v${c.ruleVersion}: ${c.verdict}`);
  if (evaluation.detectors.length > 0) io.out(display`  detectors fired: ${evaluation.detectors.join(', ')}`);
  const deciding = evaluation.deciding !== undefined ? ` (rule ${evaluation.deciding.ruleId})` : '';
  io.out(display`decision: ${evaluation.decision}${deciding}`);
  for (const text of evaluation.instructions) io.out(display`  instruction: ${text}`);
};
