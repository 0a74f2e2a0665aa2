import type { CommandGroup } from '../command';
import { reviewerAddCommand } from './reviewer/add';

export const reviewerCommands: CommandGroup = {
  name: 'reviewer',
  summary: 'Manage reviewer signing keys (decisions the built-in rules accept must be signed)',
  subcommands: [reviewerAddCommand],
};
