import { defineCommand, jobIdArg, stringOption } from '../command';
import { withClient } from '../with-client';
import { reportDecision, reviewerName, signingKey } from './decision-output';

export const denyCommand = defineCommand({
  name: 'deny',
  summary: 'Deny a pending request; the model is told the reason',
  usage: 'airlock deny JOB_ID [--request ID] [--reason TEXT] [--reviewer NAME] [--sign KEYFILE] [--json]',
  options: {
    request: { type: 'string' },
    reason: { type: 'string' },
    reviewer: { type: 'string' },
    sign: { type: 'string' },
    json: { type: 'boolean' },
  },
  async run(args, io) {
    const jobId = jobIdArg(this, args);
    const key = signingKey(args, io);
    const outcome = await withClient(io, (client) =>
      client.decide(jobId, {
        decision: 'deny',
        reviewer: reviewerName(args, io),
        ...(key !== undefined ? { signingKey: key } : {}),
        ...(stringOption(args, 'request') !== undefined ? { requestId: stringOption(args, 'request')! } : {}),
        ...(stringOption(args, 'reason') !== undefined ? { reason: stringOption(args, 'reason')! } : {}),
      }),
    );
    return reportDecision(args, io, outcome);
  },
});
