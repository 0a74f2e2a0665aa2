/**
 * Text from jobs, models, rules files or the audit log, made safe to show a
 * person on a terminal. Control characters, terminal escapes, bidirectional
 * overrides and invisible format characters are shown as escapes, so a file
 * name cannot recolour the screen, move the cursor, reorder or hide what a
 * reviewer reads, or fake a line of its own.
 *
 * Backslashes are left alone: escaping twice changes nothing, and JSON that
 * passes through stays valid JSON with the same meaning (its strings only
 * gain `\uXXXX` escapes; JSON never holds the C0 characters raw).
 */

// C0 controls (newline apart) and DEL, C1 controls; Arabic letter mark; zero width
// space, LRM, RLM; line and paragraph separators; bidi embeddings and overrides;
// word joiner, invisible operators, bidi isolates, deprecated format characters;
// byte order mark; interlinear annotations; tag characters (a surrogate pair);
// lone surrogates. Zero-width (non-)joiners stay: scripts and emoji need them.
// eslint-disable-next-line airlock/no-module-state -- used only by String#replace, which starts at 0 and leaves lastIndex at 0
const UNSAFE =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]|\udb40[\udc00-\udc7f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// eslint-disable-next-line airlock/no-module-state -- as UNSAFE
const UNSAFE_OR_NEWLINE = new RegExp(`\\n|${UNSAFE.source}`, 'g');

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeUnit(unit: number): string {
  // \xHH for C0, as terminals document them; \uHHHH for the rest, a valid JSON escape.
  return unit < 0x20 ? `\\x${unit.toString(16).padStart(2, '0')}` : `\\u${unit.toString(16).padStart(4, '0')}`;
}

function escape(match: string): string {
  const named = NAMED[match];
  if (named !== undefined) return named;
  let out = '';
  for (let i = 0; i < match.length; i++) out += escapeUnit(match.charCodeAt(i));
  return out;
}

export interface DisplayOptions {
  /**
   * `escape` (default): one value inside a line, so a newline in it is shown
   * as `\n`. `keep`: a whole block the program laid out itself.
   */
  readonly newlines?: 'escape' | 'keep';
}

/** `text` with everything that could act on a terminal shown as an escape. */
export function displayText(text: string, options: DisplayOptions = {}): string {
  return text.replace(options.newlines === 'keep' ? UNSAFE : UNSAFE_OR_NEWLINE, escape);
}

export type DisplayValue = string | number | boolean | null | undefined;

/**
 * Template tag for a line of human output: every interpolated value goes
 * through `displayText`, the template's own text is kept as written. Values
 * read from files may not be what their type says, so each is made a
 * string first.
 */
export function display(strings: TemplateStringsArray, ...values: readonly DisplayValue[]): string {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += displayText(String(values[i])) + (strings[i + 1] ?? '');
  return out;
}
