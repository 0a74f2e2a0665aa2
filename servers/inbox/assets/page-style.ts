/**
 * The inbox's stylesheet, served as `/assets/inbox.css`: phone first, high
 * contrast, visible focus, 44-pixel targets. A request's page keeps Approve
 * and Deny on screen: in a bar fixed to the bottom of a narrow screen, and
 * in a left column beside the details from 1000 pixels on.
 */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --fg: #111; --bg: #fff; --muted: #444; --line: #888; --soft: #d0d0d0; --accent: #0b5cad; --accent-fg: #fff; --deny: #a4161a; --ok: #1b5e20; --warn: #7a4b00; --card: #f5f5f5; --bar: #fff; --shadow: rgba(0, 0, 0, 0.2); --add: #e6ffec; --del: #ffebe9; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #f2f2f2; --bg: #121212; --muted: #c8c8c8; --line: #777; --soft: #3a3a3a; --accent: #8ab4f8; --accent-fg: #111; --deny: #ff8a80; --ok: #a5d6a7; --warn: #ffcc80; --card: #1e1e1e; --bar: #1e1e1e; --shadow: rgba(0, 0, 0, 0.7); --add: #12361f; --del: #45181b; }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); overflow-wrap: anywhere; }
main { max-width: 44rem; margin: 0 auto; padding: 0.5rem 1rem 3rem; }
main:focus { outline: none; }
.top { padding: 0.6rem 1rem; border-bottom: 1px solid var(--line); font-weight: 600; }
.top a { color: var(--fg); text-decoration: none; }
.skip { position: absolute; left: -999px; }
.skip:focus { left: 0.5rem; top: 0.5rem; background: var(--bg); padding: 0.4rem; z-index: 3; }
h1 { font-size: 1.35rem; line-height: 1.3; margin: 0.6rem 0; }
h2 { font-size: 1.15rem; margin: 0 0 0.4rem; }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; }
.small { font-size: 0.8em; }
.status, .hint { color: var(--muted); }
.hint { font-size: 0.9em; }
label .hint { font-weight: 400; }
.notice { border-left: 4px solid var(--line); padding: 0.4rem 0.7rem; }
.notice.error, [data-state="error"] { border-color: var(--deny); color: var(--deny); }
.late { color: var(--deny); font-weight: 600; }
time[data-rel] { text-decoration: underline dotted; text-underline-offset: 3px; }
dl { margin: 0; }
dt { font-weight: 600; margin-top: 0.45rem; }
dd { margin: 0; }
.said { white-space: pre-wrap; }
.diff { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.4rem 0 0; padding: 0.4rem; border: 1px solid var(--soft); border-radius: 6px; background: var(--bg); font-size: 0.85em; line-height: 1.4; }
.diff .add { background: var(--add); }
.diff .del { background: var(--del); }
.diff .hunk { color: var(--muted); }
fieldset { border: 1px solid var(--line); border-radius: 8px; margin: 0.75rem 0; padding: 0.5rem 0.75rem; min-width: 0; }
.field { margin: 0.75rem 0; }
label { display: block; font-weight: 600; margin-bottom: 0.25rem; }
input, textarea { width: 100%; font: inherit; color: var(--fg); background: var(--bg); border: 2px solid var(--line); border-radius: 6px; padding: 0.55rem; }
.actions { display: flex; gap: 0.75rem; flex-wrap: wrap; margin: 1rem 0 0.5rem; }
button, .button { font: inherit; font-weight: 600; min-height: 44px; padding: 0.55rem 1.2rem; border-radius: 6px; border: 2px solid var(--accent); background: var(--accent); color: var(--accent-fg); cursor: pointer; text-decoration: none; display: inline-block; }
button.deny { background: var(--bg); color: var(--deny); border-color: var(--deny); }
button.quiet { background: transparent; color: var(--accent); border-color: transparent; padding: 0.55rem 0.4rem; text-decoration: underline; text-underline-offset: 3px; }
button:disabled { opacity: 0.55; cursor: not-allowed; }
[hidden] { display: none !important; }
.preview { border-left: 4px solid var(--warn); padding: 0.2rem 0.7rem; margin-top: 0.5rem; }
.preview p { margin: 0.2rem 0; }
.result p { margin: 0.2rem 0; }
.result.accepted { color: var(--ok); }
.result.rejected, .result.error { color: var(--deny); }
.result.queued { color: var(--warn); }

/* The list: one compact row per request, its sentence two lines at most; the whole row opens it. */
.rows { list-style: none; margin: 0.5rem 0 0; padding: 0; border-top: 1px solid var(--soft); }
.row { position: relative; padding: 0.55rem 0.5rem; border-bottom: 1px solid var(--soft); }
.row:hover { background: var(--card); }
.row-link { display: block; color: var(--fg); font-weight: 600; text-decoration: none; }
.row-link::after { content: ""; position: absolute; inset: 0; }
.row-link:hover .row-action { text-decoration: underline; }
.row-action { display: -webkit-box; -webkit-box-orient: vertical; -webkit-line-clamp: 2; line-clamp: 2; overflow: hidden; }
.row-meta { margin: 0.15rem 0 0; color: var(--muted); font-size: 0.9em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.row-meta time { position: relative; z-index: 1; }

/* A request's page. */
.back { margin: 0; }
.back a { display: inline-block; padding: 0.5rem 0; }
.summary { margin: 0; }
.summary .action { font-size: 1.25rem; margin: 0.25rem 0 0.4rem; }
.call { margin: 0 0 0.25rem; font-size: 0.9em; color: var(--muted); }
.when { margin: 0; color: var(--muted); cursor: pointer; }
.who { display: flex; flex-wrap: wrap; align-items: center; column-gap: 0.3rem; margin: 0.1rem 0 0.25rem; color: var(--muted); }
.who strong { color: var(--fg); }
.bar .actions { flex-wrap: nowrap; gap: 0.5rem; margin: 0; }
.bar .actions button { flex: 1 1 auto; padding-left: 0.6rem; padding-right: 0.6rem; }
.bar .actions button.quiet { flex: 0 0 auto; }
.bar .notice { margin: 0 0 0.4rem; }
.result { margin: 0 0 0.4rem; max-height: 30vh; overflow-y: auto; }
.result:empty { display: none; }
.reason-box { margin: 0 0 0.5rem; }
.reason-box textarea { min-height: 3.2rem; resize: vertical; }
.sign-note { margin: 0.5rem 0; }
.details h2 { font-size: 1rem; color: var(--muted); margin: 1.25rem 0 0; }
.detail { border-bottom: 1px solid var(--soft); }
.detail > summary { display: list-item; cursor: pointer; font-weight: 600; padding: 0.55rem 0; min-height: 44px; }
.detail-body { padding: 0 0 0.6rem; }
.detail-body p { margin: 0; }
.plain { list-style: none; margin: 0; padding: 0; }
.plain li + li { margin-top: 0.3rem; }

/* Narrow screens: Approve and Deny stay at the bottom; the reason opens in the bar (Deny opens it first). */
@media (max-width: 999.98px) {
  body[data-page="card"] main { padding-bottom: 8rem; }
  .bar { position: fixed; left: 0; right: 0; bottom: 0; z-index: 2; background: var(--bar); border-top: 1px solid var(--line); box-shadow: 0 -2px 12px var(--shadow); padding: 0.5rem 0.75rem calc(0.5rem + env(safe-area-inset-bottom, 0px)); }
  .bar > * { max-width: 42rem; margin-left: auto; margin-right: auto; }
  .reason-box { display: none; }
  .bar.open .reason-box { display: block; }
  .bar.open #reason-toggle { display: none; }
}

/* Wide screens: the summary and the decision on the left, the details on the right. */
@media (min-width: 1000px) {
  body[data-page="card"] main { max-width: 80rem; padding: 0.5rem 2rem 2rem; }
  body[data-page="list"] main { max-width: 60rem; }
  .decision { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.15fr); gap: 2.5rem; align-items: start; }
  .primary { position: sticky; top: 0; max-height: 100vh; overflow-y: auto; padding: 0 6px 6px; margin: 0 -6px; }
  .summary .action { font-size: 1.6rem; }
  .bar { border: 1px solid var(--line); border-radius: 8px; padding: 0.75rem; background: var(--card); margin-top: 0.75rem; }
  #reason-toggle { display: none; }
  .details h2 { margin-top: 0.6rem; }
}
`;
