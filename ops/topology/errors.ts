import { AirlockError } from '../../core/util/errors';

/** A topology cannot be started, or is already running in that folder. */
export class TopologyError extends AirlockError {
  override name = 'TopologyError';
}
