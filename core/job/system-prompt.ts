import type { PolicySnapshot } from '../policy/snapshot';
import { getTool } from '../tools/registry';

/** One line per tool the job may use, from the registry: name, category and what it does. */
function toolLines(tools: readonly string[]): string[] {
  return tools.flatMap((name) => {
    const tool = getTool(name);
    return tool === undefined ? [] : [`- ${tool.name} (${tool.category}): ${tool.description}`];
  });
}

/** The job's system message: what the agent is, how it acts, and the snapshot's standing instructions. */
export function systemPrompt(jobId: string, snapshot: PolicySnapshot, tools: readonly string[]): string {
  return [
    `You are an operations agent working on a home server (job ${jobId}).`,
    'You act only through tool calls. The tools of this job (nothing else is configured on this server):',
    ...toolLines(tools),
    'Call complete, alone, with a short summary when the goal is reached.',
    'Every call passes a policy gate first; some wait for a person to approve them, and the result tells you what happened.',
    ...(snapshot.instructions.length > 0 ? ['Standing instructions:', ...snapshot.instructions.map((t) => `- ${t}`)] : []),
  ].join('\n');
}
