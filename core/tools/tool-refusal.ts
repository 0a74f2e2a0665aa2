import { AirlockError } from '../util/errors';

/**
 * A tool refused a call on its own safety checks; the model is told why.
 * Thrown by tool modules and by the host capabilities they call alike.
 */
export class ToolRefusal extends AirlockError {
  override name = 'ToolRefusal';
}
