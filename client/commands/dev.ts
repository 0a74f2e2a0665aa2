import { userInfo } from 'node:os';
import { runDevStack } from '../dev/dev-stack';
import { defineCommand } from '../command';
import { UsageError } from '../errors';

export const devCommand = defineCommand({
  name: 'dev',
  summary: 'Run the embedded stack: Temporal dev server (Web UI on 8233), workers, replay model',
  usage: 'airlock dev [--demo] [--codec]',
  options: { demo: { type: 'boolean' }, codec: { type: 'boolean' } },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`dev takes no arguments; usage: ${this.usage}`);
    const config = io.config();
    return runDevStack({
      config,
      demo: args.values.demo === true,
      codec: args.values.codec === true,
      requester: config.reviewer ?? userInfo().username,
      log: io.err,
    });
  },
});
