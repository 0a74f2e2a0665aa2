import type { CommandGroup } from '../command';
import { rulesAddCommand } from './rules/add';
import { rulesListCommand } from './rules/list';
import { rulesTestCommand } from './rules/test';
import { rulesDisableCommand, rulesEnableCommand } from './rules/toggle';
import { rulesValidateCommand } from './rules/validate';

export const rulesCommands: CommandGroup = {
  name: 'rules',
  summary: 'List, validate, dry-run, add, enable and disable rules',
  subcommands: [rulesListCommand, rulesValidateCommand, rulesTestCommand, rulesAddCommand, rulesEnableCommand, rulesDisableCommand],
};
