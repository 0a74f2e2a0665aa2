import type { Command, CommandGroup, CommandRun } from '../command';
import { UsageError } from '../../client/errors';
import { bashCompletion, completionShells, zshCompletion } from '../completion-script';

/** The command for a command list: the registry passes its own list in, so this module never imports the registry. */
export function completionCommand(commands: ReadonlyArray<Command | CommandGroup>): CommandRun {
  return async (args, io, command) => {
    const [shell, ...rest] = args.positionals;
    if (rest.length > 0 || (shell !== 'bash' && shell !== 'zsh')) {
      throw new UsageError(`expected one shell, ${completionShells.join(' or ')}; usage: ${command.usage}`);
    }
    // The script goes out as written: it is generated from the registry, not from anything a user or job wrote.
    io.out((shell === 'bash' ? bashCompletion(commands) : zshCompletion(commands)).replace(/\n$/, ''));
  };
}
