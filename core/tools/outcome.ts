/** What a tool run produced, as the model will read it. */
export interface ToolOutcome {
  readonly ok: boolean;
  readonly output: string;
}
