import type { CommandGroup } from '../command';
import { judgeEvalCommand } from './judge/eval';

export const judgeCommands: CommandGroup = {
  name: 'judge',
  summary: 'Measure the small-LLM rule judge against a labelled set',
  subcommands: [judgeEvalCommand],
};
