import { userInfo } from 'node:os';
import type { DecideOutcome } from '../airlock-client';
import { printJson, stringOption, type CommandIo, type ParsedArgs } from '../command';

/** `--reviewer`, else AIRLOCK_REVIEWER, else the login name. */
export function reviewerName(args: ParsedArgs, io: CommandIo): string {
  return stringOption(args, 'reviewer') ?? io.config().reviewer ?? userInfo().username;
}

/** Prints accepted/rejected; a rejection exits non-zero. */
export function reportDecision(args: ParsedArgs, io: CommandIo, outcome: DecideOutcome): number {
  if (args.values.json === true) printJson(io, outcome);
  else if (outcome.accepted) {
    io.out(
      `accepted: request ${outcome.requestId} of job ${outcome.jobId} is ${outcome.status}${
        outcome.editedFingerprint !== null ? ` (edited; new fingerprint ${outcome.editedFingerprint})` : ''
      }`,
    );
  } else io.out(`rejected (${outcome.code}): ${outcome.reason}`);
  return outcome.accepted ? 0 : 1;
}
