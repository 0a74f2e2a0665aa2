export { agentJob } from './agent-job';
