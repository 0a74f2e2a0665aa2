import { DefaultFailureConverter } from '@temporalio/common';

/**
 * With the codec off, history holds every payload in plain JSON anyway:
 * messages and stack traces stay in the failure's own fields, where the Web
 * UI and `temporal workflow show` read them without a codec server (a
 * refused update or tool call shows its reason, not "Encoded failure").
 * Reading either form works with either converter.
 */
export const failureConverter = new DefaultFailureConverter();
