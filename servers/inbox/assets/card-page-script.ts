/**
 * The approval card's part of the inbox's script (see page-script.ts, which
 * places it inside its closure): the card page's bar, the reviewer's edits
 * and reason, the passkey ceremony that signs a decision, and watching the
 * request until it is decided.
 */
export const CARD_PAGE_SCRIPT = String.raw`  function cardPage() {
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
  }`;
