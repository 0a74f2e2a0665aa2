import { CARD_PAGE_SCRIPT } from './card-page-script';

/**
 * The inbox's one script, served as `/assets/inbox.js` (no build step: it
 * is plain ES2017 for the browser). Every text it shows goes in through
 * `textContent`; list updates are the server's escaped HTML. It keeps no
 * secret: it remembers the reviewer name a passkey ceremony gave it
 * (registration, or identification on a browser that has none), and a
 * passkey signs each decision.
 */
export const PAGE_SCRIPT = String.raw`(function () {
  'use strict';
  var body = document.body;
  var base = body.getAttribute('data-base') || '';
  var kind = body.getAttribute('data-page');
  var REFRESH_MS = 5000;
  var MINUTE_MS = 60000;
  // Only names a passkey ceremony gave: registration, or identification.
  var REVIEWER_KEY = 'airlock.passkeyReviewer';
  // The name typed into the page before passkeys identified the reviewer.
  var OLD_REVIEWER_KEY = 'airlock.reviewer';
  // The server's clock minus this device's: relative times stay right when the device's clock is off.
  var skew = (function () {
    var server = Date.parse(body.getAttribute('data-now') || '');
    return isNaN(server) ? 0 : server - Date.now();
  })();
  // Times shown as local date and time instead of "waiting 3m" (the card page's when line toggles it).
  var absolute = false;

  function byId(id) { return document.getElementById(id); }

  function remembered() {
    try { return localStorage.getItem(REVIEWER_KEY) || ''; } catch (e) { return ''; }
  }

  function remember(name) {
    try {
      localStorage.removeItem(OLD_REVIEWER_KEY);
      if (name) localStorage.setItem(REVIEWER_KEY, name);
      else localStorage.removeItem(REVIEWER_KEY);
    } catch (e) { /* storage off: the passkey says who it is each time */ }
  }

  function postJson(path, value) {
    return fetch(base + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(value),
      credentials: 'omit',
      cache: 'no-store'
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (json) {
        if (!res.ok) throw new Error(json && typeof json.error === 'string' ? json.error : 'the server answered ' + res.status);
        return json;
      });
    });
  }

  function show(el, state, lines) {
    el.textContent = '';
    el.setAttribute('data-state', state);
    el.className = 'result ' + state;
    lines.forEach(function (line) {
      var p = document.createElement('p');
      p.textContent = line;
      el.appendChild(p);
    });
  }

  function passkeyError(err) {
    var name = err && err.name ? err.name : '';
    if (name === 'NotAllowedError') return 'The passkey prompt was cancelled or timed out, or this device has no passkey registered for that reviewer here.';
    if (name === 'InvalidStateError') return 'This device already has a passkey registered for this reviewer.';
    if (name === 'SecurityError') return 'This browser refused passkeys on this address: open the page at its public https:// (or http://localhost) URL.';
    return err && err.message ? err.message : String(err);
  }

  function webauthn() {
    if (typeof window.SimpleWebAuthnBrowser === 'undefined' || !window.PublicKeyCredential) {
      throw new Error('This browser cannot use passkeys here (a secure context is needed: https, or http://localhost).');
    }
    return window.SimpleWebAuthnBrowser;
  }

  function clock() {
    return new Date().toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }

  // As the server words it (core/reviewer/approval-card.ts humanDuration).
  function duration(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm';
    var h = Math.floor(m / 60);
    if (h < 24) return h + 'h';
    var d = Math.floor(h / 24);
    return h % 24 === 0 ? d + 'd' : d + 'd ' + (h % 24) + 'h';
  }

  function localTime(t) {
    return new Date(t).toLocaleString([], { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
  }

  // A <time data-rel> in the reader's words: relative (or local with absolute on), its title the local time.
  function timeText(el) {
    var t = Date.parse(el.getAttribute('datetime') || '');
    if (isNaN(t)) return;
    var rel = el.getAttribute('data-rel');
    var now = Date.now() + skew;
    var local = localTime(t);
    var text;
    if (rel === 'at') text = local;
    else if (rel === 'since') text = absolute ? 'waiting since ' + local : 'waiting ' + duration(now - t);
    else if (t > now) text = absolute ? 'expires ' + local : 'expires in ' + duration(t - now);
    else text = absolute ? 'expired ' + local : 'expired ' + duration(now - t) + ' ago';
    if (el.textContent !== text) el.textContent = text;
    el.title = local;
    if (rel === 'until') el.classList.toggle('late', t <= now);
  }

  function times() {
    Array.prototype.forEach.call(document.querySelectorAll('time[data-rel]'), timeText);
  }

  function listPage() {
    var list = byId('list');
    var status = byId('list-status');
    var last = list.innerHTML;
    var said = status.textContent;
    // Announced only when it changes (a count, the connection); the refresh time is its title.
    function say(text) {
      if (text !== said) status.textContent = said = text;
      status.title = 'updated ' + clock();
    }
    function refresh() {
      fetch(base + '/partials/list', { cache: 'no-store', credentials: 'omit' }).then(function (res) {
        var count = res.headers.get('X-Airlock-Count');
        return res.text().then(function (text) {
          if (text !== last) {
            last = text;
            // The server's HTML, every value in it escaped.
            list.innerHTML = text;
            times();
          }
          say(count === null || count === '' ? 'Not connected to Temporal' : count + ' waiting');
        });
      }).catch(function () {
        say('The inbox server cannot be reached; trying again');
      }).then(function () { setTimeout(refresh, REFRESH_MS); });
    }
    setTimeout(refresh, REFRESH_MS);
  }

${CARD_PAGE_SCRIPT}

  function undoPage() {
    var list = byId('undo-list');
    var jobId = list.getAttribute('data-job');
    var result = byId('result');
    var buttons = Array.prototype.slice.call(document.querySelectorAll('button.undo'));
    var busy = false;
    function setBusy(on) {
      busy = on;
      buttons.forEach(function (b) { b.disabled = on; });
    }
    // Who asks is the passkey's: the undo's request names them, and a rule may keep them from deciding it.
    function undo(callId) {
      if (busy) return;
      setBusy(true);
      show(result, 'working', ['Confirm with your passkey who asks for the undo…']);
      postJson('/api/identify/options', {}).then(function (prepared) {
        return webauthn().startAuthentication({ optionsJSON: prepared.options }).catch(function (err) {
          throw new Error(passkeyError(err));
        });
      }).then(function (response) {
        show(result, 'working', ['Asking for the undo…']);
        return postJson('/api/undo', { jobId: jobId, callId: callId, response: response });
      }).then(function (done) {
        remember(done.reviewer);
        if (done.status === 'parked') {
          show(result, 'accepted', ['The undo waits for approval: opening its request…']);
          location.href = base + '/jobs/' + encodeURIComponent(done.undoJob) + '/requests/' + encodeURIComponent(done.requestId);
          return;
        }
        show(result, done.isError ? 'rejected' : 'accepted', [done.text]);
        setBusy(false);
      }).catch(function (err) {
        show(result, 'error', [err && err.message ? err.message : String(err)]);
        setBusy(false);
      });
    }
    buttons.forEach(function (b) {
      b.addEventListener('click', function () { undo(b.getAttribute('data-call')); });
    });
  }

  function registerPage() {
    var token = location.hash.slice(1);
    var intro = byId('register-for');
    var button = byId('register');
    var result = byId('result');
    if (token === '') {
      intro.textContent = 'This link has no registration token. Run airlock reviewer add NAME --passkey and open the link it prints.';
      return;
    }
    postJson('/api/register/options', { token: token }).then(function (prepared) {
      intro.textContent = 'Create a passkey for reviewer ' + prepared.reviewer + ' on this device. The link works once, until ' + new Date(prepared.expiresAt).toLocaleString() + '.';
      button.disabled = false;
      button.addEventListener('click', function () {
        button.disabled = true;
        show(result, 'working', ['Follow your device’s prompt…']);
        webauthn().startRegistration({ optionsJSON: prepared.options }).catch(function (err) {
          throw new Error(passkeyError(err));
        }).then(function (response) {
          return postJson('/api/register', { token: token, response: response });
        }).then(function (done) {
          history.replaceState(null, '', location.pathname);
          // The approval page says who is deciding without asking: this browser now knows.
          remember(done.reviewer);
          show(result, 'accepted', ['Passkey registered for ' + done.reviewer + '. Decisions you sign with it on this site are accepted by the jobs.', 'This browser remembers you as ' + done.reviewer + '.']);
          var a = document.createElement('a');
          a.href = base + '/';
          a.textContent = 'See what is waiting';
          result.appendChild(a);
        }).catch(function (err) {
          button.disabled = false;
          show(result, 'error', [err && err.message ? err.message : String(err)]);
        });
      });
    }).catch(function (err) {
      intro.textContent = err && err.message ? err.message : String(err);
      intro.setAttribute('data-state', 'error');
    });
  }

  times();
  setInterval(times, MINUTE_MS);
  if (kind === 'list') listPage();
  else if (kind === 'card') cardPage();
  else if (kind === 'register') registerPage();
  else if (kind === 'undo') undoPage();
})();
`;
