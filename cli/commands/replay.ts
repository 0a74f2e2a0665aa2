import { z } from 'zod';
import { display } from '../../core/redaction/display-text';
import { stringOption, type CommandRun } from '../command';
import { UsageError } from '../../client/errors';
import { loadReplayScript, startReplayServer } from '../../ops/dev/replay-server';
import { untilStopped } from '../stop-signal';

const portSchema = z.coerce.number().int().min(0).max(65535);

export const run: CommandRun = async (args, io, command) => {
  const file = stringOption(args, 'script');
  if (file === undefined) throw new UsageError(`--script is required; usage: ${command.usage}`);
  const port = portSchema.safeParse(stringOption(args, 'port') ?? '0');
  if (!port.success) throw new UsageError('--port takes a number between 0 and 65535');
  const stopped = untilStopped();
  const server = await startReplayServer({ script: await loadReplayScript(file), port: port.data });
  io.out(display`replay server for ${file} at ${server.baseUrl} (set OPENAI_BASE_URL to it); Ctrl-C stops it`);
  await stopped;
  await server.close();
};
