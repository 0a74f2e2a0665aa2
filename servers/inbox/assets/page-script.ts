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

  function cardPage() {
    var main = byId('main');
    var form = byId('decide');
    var jobId = form.getAttribute('data-job');
    var requestId = form.getAttribute('data-request');
    var bar = byId('bar');
    var reason = byId('reason');
    var result = byId('result');
    var approve = byId('approve');
    var deny = byId('deny');
    var reasonToggle = byId('reason-toggle');
    var whoText = byId('who-text');
    var notYou = byId('not-you');
    var when = byId('when');
    var edits = Array.prototype.slice.call(document.querySelectorAll('input.edit'));
    var decided = false;
    var busy = false;

    form.addEventListener('submit', function (e) { e.preventDefault(); });

    // On a narrow screen the bar is fixed to the bottom: the page ends, and scrolls focus, above it.
    function fitBar() {
      var fixed = getComputedStyle(bar).position === 'fixed';
      var room = fixed ? (bar.offsetHeight + 24) + 'px' : '';
      main.style.paddingBottom = room;
      document.documentElement.style.scrollPaddingBottom = room;
    }
    fitBar();
    window.addEventListener('resize', fitBar);
    if (typeof window.ResizeObserver === 'function') new window.ResizeObserver(fitBar).observe(bar);

    function say(state, lines) {
      show(result, state, lines);
      fitBar();
    }

    // Relative times, each minute; a tap (or Enter) on the when line shows the local date and time instead.
    when.setAttribute('role', 'button');
    when.setAttribute('tabindex', '0');
    when.setAttribute('aria-pressed', 'false');
    function flip() {
      absolute = !absolute;
      when.setAttribute('aria-pressed', absolute ? 'true' : 'false');
      times();
    }
    when.addEventListener('click', flip);
    when.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); flip(); }
    });

    function showWho() {
      var name = remembered();
      whoText.textContent = '';
      if (name) {
        whoText.appendChild(document.createTextNode('Deciding as '));
        var strong = document.createElement('strong');
        strong.textContent = name;
        whoText.appendChild(strong);
        whoText.appendChild(document.createTextNode(' · '));
      } else {
        whoText.textContent = 'Your passkey tells the page who you are when you decide.';
      }
      notYou.hidden = name === '';
    }
    showWho();
    notYou.addEventListener('click', function () {
      remember('');
      showWho();
      say('info', ['Forgotten here: your passkey says who you are when you decide.']);
      approve.focus();
    });

    function reasonShown() { return reason.getClientRects().length > 0; }
    function openReason() {
      bar.classList.add('open');
      deny.textContent = 'Deny with this reason';
      fitBar();
      reason.focus();
    }
    reasonToggle.addEventListener('click', openReason);

    function changed() {
      var out = {};
      edits.forEach(function (input) {
        if (input.value !== input.getAttribute('data-before')) out[input.getAttribute('data-field')] = input.value;
      });
      return out;
    }

    function preview() {
      var changes = changed();
      var fields = Object.keys(changes);
      var box = byId('edit-preview');
      if (box === null) return;
      var ul = byId('edit-changes');
      ul.textContent = '';
      edits.forEach(function (input) {
        var field = input.getAttribute('data-field');
        if (!(field in changes)) return;
        var li = document.createElement('li');
        li.textContent = field + ': ' + input.getAttribute('data-before') + ' → ' + changes[field];
        ul.appendChild(li);
      });
      box.hidden = fields.length === 0;
      approve.textContent = fields.length === 0 ? 'Approve' : 'Approve with edits';
    }
    edits.forEach(function (input) { input.addEventListener('input', preview); });

    function setBusy(on) {
      busy = on;
      approve.disabled = on || decided;
      deny.disabled = on || decided;
      reasonToggle.disabled = on || decided;
    }

    function outcomeLines(outcome, decision) {
      if (outcome.accepted === true) {
        var done = outcome.status === 'denied' ? 'Denied: the job took your decision and tells the model your reason.' : 'Approved: the job took your decision; the call runs once it is checked against the target as it is now.';
        var lines = [done];
        if (outcome.editedFingerprint) lines.push('Edited call, new fingerprint ' + outcome.editedFingerprint + '.');
        return ['accepted', lines];
      }
      if (outcome.accepted === 'queued') return ['queued', ['Sent, not yet taken: ' + outcome.reason]];
      return ['rejected', ['The job rejected this ' + decision + ' (' + outcome.code + '): ' + outcome.reason, 'Nothing ran. The rejection is in the audit log.']];
    }

    // The reviewer with a discoverable passkey: the server answers whose passkey signed its one-time challenge.
    function identify() {
      say('working', ['Confirm with your passkey who you are…']);
      return postJson('/api/identify/options', {}).then(function (prepared) {
        return webauthn().startAuthentication({ optionsJSON: prepared.options }).catch(function (err) {
          throw new Error(passkeyError(err));
        });
      }).then(function (response) {
        return postJson('/api/identify', { response: response });
      }).then(function (done) {
        remember(done.reviewer);
        showWho();
        return done.reviewer;
      });
    }

    function decide(decision) {
      if (busy || decided) return;
      var why = reason.value.trim();
      if (decision === 'deny' && why === '') {
        say('error', ['Say why you deny it: the model is told your reason.']);
        reason.focus();
        return;
      }
      var args = changed();
      var name = remembered();
      setBusy(true);
      (name ? Promise.resolve(name) : identify()).then(function (reviewer) {
        var request = { jobId: jobId, requestId: requestId, decision: decision, reviewer: reviewer };
        if (why !== '') request.reason = why;
        if (decision === 'approve' && Object.keys(args).length > 0) request.args = args;
        say('working', ['Preparing the decision…']);
        return postJson('/api/decision/options', request);
      }).then(function (prepared) {
        say('working', prepared.summary.concat(['Confirm with your passkey…']));
        return webauthn().startAuthentication({ optionsJSON: prepared.options }).catch(function (err) {
          throw new Error(passkeyError(err));
        }).then(function (response) {
          say('working', ['Sending the signed decision to the job…']);
          return postJson('/api/decision', { jobId: jobId, payload: prepared.payload, response: response });
        });
      }).then(function (outcome) {
        var shown = outcomeLines(outcome, decision);
        if (shown[0] === 'accepted' || shown[0] === 'queued') decided = true;
        say(shown[0], shown[1]);
        // An approved reversible change: where to take it back once it ran.
        var later = byId('undo-later');
        if (later !== null && decision === 'approve' && decided) later.hidden = false;
      }).catch(function (err) {
        var lines = [err && err.message ? err.message : String(err)];
        if (name) lines.push('Not ' + name + '? Choose “not you?” and decide again: your passkey says who you are.');
        say('error', lines);
      }).then(function () { setBusy(false); });
    }
    approve.addEventListener('click', function () { decide('approve'); });
    deny.addEventListener('click', function () {
      // Deny opens the reason first where it is folded away (a phone's bar), then denies with it.
      if (!reasonShown()) {
        openReason();
        return;
      }
      decide('deny');
    });

    function watch() {
      fetch(base + '/api/jobs/' + encodeURIComponent(jobId) + '/requests/' + encodeURIComponent(requestId), { cache: 'no-store', credentials: 'omit' })
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (state) {
          if (state && state.waiting === false && !decided && !busy) {
            decided = true;
            byId('gone').hidden = false;
            setBusy(false);
            fitBar();
          }
        })
        .catch(function () { /* the next round tries again */ })
        .then(function () { if (!decided) setTimeout(watch, REFRESH_MS); });
    }
    setTimeout(watch, REFRESH_MS);
  }

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
