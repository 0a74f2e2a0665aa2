import { Connection } from '@temporalio/client';
import { display } from '../../core/redaction/display-text';
import { printJson, type CommandRun } from '../command';
import { ensureSearchAttributes } from '../search-attributes';

export const run: CommandRun = async (args, io) => {
  const { address, namespace } = io.config().temporal;
  const connection = await Connection.connect({ address, connectTimeout: 5000 });
  try {
    const added = await ensureSearchAttributes(connection, namespace);
    if (args.values.json === true) printJson(io, { namespace, added });
    else io.out(added.length === 0 ? display`namespace ${namespace}: search attributes already registered` : display`namespace ${namespace}: registered ${added.join(', ')}`);
  } finally {
    await connection.close();
  }
};
