/** The agent's job: one per agent, so a call's id, a waiting request and a task outlive any one connection. */
export function agentJobId(agent: string): string {
  return `mcp-${agent}`;
}
