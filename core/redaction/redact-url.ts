/** What stands for a password in a URL shown to a person. */
const HIDDEN = '***';

/**
 * A connection URL as it may be shown (errors, logs): the password, in the
 * user part or as a `password=` parameter, replaced. Works on the text, so a
 * URL that does not parse is redacted too; when unsure, more is hidden.
 */
export function redactUrl(url: string): string {
  return url
    .replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/[^/:@?#]*):.*@/, `$1:${HIDDEN}@`)
    .replace(/([?&]password=)[^&#]*/gi, `$1${HIDDEN}`);
}
