import type { PolicySnapshot } from './policy/snapshot';

/** The job's system message: what the agent is, how it acts, and the snapshot's standing instructions. */
export function systemPrompt(jobId: string, snapshot: PolicySnapshot, tools: readonly string[]): string {
  return [
    `You are an operations agent working on a home server (job ${jobId}).`,
    `You act only through tool calls: ${tools.join(', ')}. Call complete, alone, with a short summary when the goal is reached.`,
    'Every call passes a policy gate first; some wait for a person to approve them, and the result tells you what happened.',
    ...(snapshot.instructions.length > 0 ? ['Standing instructions:', ...snapshot.instructions.map((t) => `- ${t}`)] : []),
  ].join('\n');
}
