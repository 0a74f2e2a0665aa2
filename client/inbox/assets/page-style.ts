/** The inbox's stylesheet, served as `/assets/inbox.css`: phone first, high contrast, visible focus. */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #111; --bg: #fff; --muted: #444; --line: #888; --accent: #0b5cad; --accent-fg: #fff; --deny: #a4161a; --ok: #1b5e20; --warn: #7a4b00; --card: #f5f5f5; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #f2f2f2; --bg: #121212; --muted: #c8c8c8; --line: #777; --accent: #8ab4f8; --accent-fg: #111; --deny: #ff8a80; --ok: #a5d6a7; --warn: #ffcc80; --card: #1e1e1e; }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 44rem; margin: 0 auto; padding: 0.75rem 1rem 3rem; }
main:focus { outline: none; }
.top { padding: 0.6rem 1rem; border-bottom: 1px solid var(--line); font-weight: 600; }
.top a { color: var(--fg); text-decoration: none; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 0.5rem; top: 0.5rem; background: var(--bg); padding: 0.4rem; z-index: 1; }
h1 { font-size: 1.35rem; margin: 0.75rem 0; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 0 0 0.4rem; overflow-wrap: anywhere; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; overflow-wrap: anywhere; }
.small { font-size: 0.8em; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 0.8rem; margin: 0 0 1rem; }
.card .when { margin: 0 0 0.5rem; color: var(--muted); }
.card .late { color: var(--deny); font-weight: 600; }
dl { margin: 0; }
dt { font-weight: 600; margin-top: 0.45rem; }
dd { margin: 0; overflow-wrap: anywhere; }
.said { white-space: pre-wrap; }
.status, .hint { color: var(--muted); }
.hint { font-size: 0.9em; }
.notice { border-left: 4px solid var(--line); padding: 0.4rem 0.7rem; }
.notice.error, [data-state="error"] { border-color: var(--deny); color: var(--deny); }
.decide { border-top: 1px solid var(--line); padding-top: 0.5rem; }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 0.75rem 0; padding: 0.5rem 0.75rem; }
.field { margin: 0.75rem 0; }
label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input, textarea { width: 100%; font: inherit; color: var(--fg); background: var(--bg); border: 2px solid var(--line); border-radius: 6px; padding: 0.55rem; }
.actions { display: flex; gap: 0.75rem; flex-wrap: wrap; margin: 1rem 0 0.5rem; }
button, .button { font: inherit; font-weight: 600; min-height: 44px; padding: 0.55rem 1.2rem; border-radius: 6px; border: 2px solid var(--accent); background: var(--accent); color: var(--accent-fg); cursor: pointer; text-decoration: none; display: inline-block; }
button.deny { background: var(--bg); color: var(--deny); border-color: var(--deny); }
button:disabled { opacity: 0.55; cursor: not-allowed; }
.preview { border-left: 4px solid var(--warn); padding: 0.2rem 0.7rem; margin-top: 0.5rem; }
.preview p { margin: 0.2rem 0; }
.result p { margin: 0.3rem 0; }
.result.accepted { color: var(--ok); }
.result.rejected, .result.error { color: var(--deny); }
.result.queued { color: var(--warn); }
`;
