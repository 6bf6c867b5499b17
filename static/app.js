// Progressive enhancement only: every page works without this file.
(function () {
  "use strict";

  // Show timestamps in the viewer's time zone (the server renders UTC).
  function localizeTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when)) {
        el.textContent = when.toLocaleString();
        el.title = el.getAttribute("datetime");
      }
    });
  }

  // A closed stream (a proxy's 502, a restart) is retried with exponential backoff;
  // pages of a whole team retrying in step would hammer the server,
  // so each reconnection also waits a random part of that backoff (jitter).
  var failures = 0;
  var lastEventId = "";
  function noteId(event) { if (event.lastEventId) { lastEventId = event.lastEventId; } }
  function JitteredEventSource(url) {
    var self = this;
    var listeners = [];
    var real = null;
    var closed = false;
    var delay = failures ? Math.random() * Math.min(30000, 250 * Math.pow(2, failures)) : 0;
    self.url = url;
    self.onerror = null;
    self.onopen = null;
    self.onmessage = null;
    Object.defineProperty(self, "readyState", {
      get: function () { return real ? real.readyState : (closed ? 2 : 0); },
    });
    self.addEventListener = function (name, fn) {
      listeners.push([name, noteId], [name, fn]);
      if (real) { real.addEventListener(name, noteId); }
      if (real) { real.addEventListener(name, fn); }
    };
    self.removeEventListener = function (name, fn) {
      listeners = listeners.filter(function (l) { return l[0] !== name || l[1] !== fn; });
      if (real) { real.removeEventListener(name, fn); }
    };
    self.close = function () { closed = true; if (real) { real.close(); } };
    window.setTimeout(function () {
      if (closed) { return; }
      // A new stream resumes after the last event this page has seen, not from the render.
      if (lastEventId) { url = url.replace(/([?&]after=)\d+/, "$1" + lastEventId); }
      real = new EventSource(url, { withCredentials: true });
      real.addEventListener("message", noteId);
      listeners.forEach(function (l) { real.addEventListener(l[0], l[1]); });
      real.onopen = function (e) { failures = 0; setLive(true); if (self.onopen) { self.onopen(e); } };
      real.onerror = function (e) {
        if (real.readyState === 2) { failures += 1; }
        setLive(false);
        if (self.onerror) { self.onerror(e); }
      };
      real.onmessage = function (e) { if (self.onmessage) { self.onmessage(e); } };
      ["heartbeat", "hello"].forEach(function (name) {
        real.addEventListener(name, function () { lastHeard = Date.now(); setLive(true); });
      });
      // A reload may name where to go instead: a deleted attempt's page goes to its campaign.
      real.addEventListener("reload", function (event) {
        var to = event.data || "";
        if (to.charAt(0) === "/" && to.charAt(1) !== "/") { window.location.replace(to); }
        else { window.location.reload(); }
      });
    }, delay);
  }
  // A live page's stream: each message is named after the fragment it brings, and replaces
  // the element of that `sse-swap` name (or, `hx-swap="beforeend"`, a log's new lines are
  // appended to it). The element is looked up when the message comes, so two messages for
  // one element in a row both land; htmx's SSE extension listened on the element itself
  // and lost a message that came before the new element had settled. Without htmx (an
  // air-gapped lab, no CDN) the same code keeps the page live.
  function follow(root) {
    var source = new JitteredEventSource(root.getAttribute("sse-connect"));
    var heard = {};
    function listen(scope) {
      scope.querySelectorAll("[sse-swap]").forEach(function (el) {
        var name = el.getAttribute("sse-swap");
        if (heard[name]) { return; }
        heard[name] = true;  // a card that appears later brings its name with it
        source.addEventListener(name, function (event) { swapFragment(name, event.data); listen(root); });
      });
    }
    listen(root);
    var closeOn = root.getAttribute("sse-close");
    if (closeOn) {
      source.addEventListener(closeOn, function () {
        source.close();
        // Not offline: the server ended it for good (a share link revoked or expired).
        setLive(false);
        ended = root.getAttribute("data-closed") || "ended";
        var badge = document.getElementById("live-status");
        if (badge) { badge.textContent = ended; }
      });
    }
    source.onerror = function () {
      if (source.readyState === 2) { source.close(); follow(root); }
    };
  }
  function swapFragment(name, html) {
    document.querySelectorAll('[sse-swap="' + CSS.escape(name) + '"]').forEach(function (el) {
      var template = document.createElement("template");
      template.innerHTML = html;
      // As htmx's own swaps do: an element of the fragment marked hx-preserve keeps the one
      // of its id already shown (the code a reader opened beside the error).
      template.content.querySelectorAll("[hx-preserve][id]").forEach(function (fresh) {
        var shown = document.getElementById(fresh.id);
        if (shown) { fresh.replaceWith(shown); }
      });
      var added = Array.prototype.slice.call(template.content.children);
      if (el.getAttribute("hx-swap") === "beforeend") {
        el.appendChild(template.content);  // a log's new lines
      } else if (added.length === 1 && added[0].isEqualNode(el)) {
        return;  // nothing changed: a value typed into it (not an attribute) stays
      } else {
        var kept = keptChoices(el);
        var before = cardStatuses([el]);
        el.replaceWith(template.content);
        restoreChoices(kept);
        restoreTicks();
        tellBrowser(before, cardStatuses(added));
      }
      // The fragment's own forms and links are htmx's to enhance, as on a page load.
      if (window.htmx) { added.forEach(function (node) { htmx.process(node); }); }
    });
    localizeTimes(document);
    keepLogsAtEnd(document);
    showBrowserAlerts(document);
    setLive(true);
  }

  // Opt-in browser notifications, per campaign (kept in this browser): an attempt whose card
  // turns ready, crashed or measured, so the engineer can leave the tab while a server loads.
  var TOLD = { ready: "is ready", crashed: "crashed", measured: "was measured" };
  function browserAlertsKey(id) { return "campaign-dash:alerts:" + id; }
  // The attempt cards in these elements (a card's own swap, or the timeline's), by id.
  function cardStatuses(nodes) {
    var found = {};
    nodes.forEach(function (node) {
      if (!node.querySelectorAll) { return; }
      var cards = Array.prototype.slice.call(node.querySelectorAll("[id^='attempt-'][data-status]"));
      if (node.matches("[id^='attempt-'][data-status]")) { cards.push(node); }
      cards.forEach(function (card) { found[card.id] = card; });
    });
    return found;
  }
  function tellBrowser(before, after) {
    var box = document.querySelector("[data-browser-alerts]");
    if (!box || !("Notification" in window) || Notification.permission !== "granted") { return; }
    if (localStorage.getItem(browserAlertsKey(box.getAttribute("data-browser-alerts"))) !== "on") { return; }
    Object.keys(after).forEach(function (id) {
      var card = after[id];
      var now = card.getAttribute("data-status");
      var was = before[id] && before[id].getAttribute("data-status");
      if (!was || now === was || !TOLD[now]) { return; }
      var title = card.querySelector(".title");
      var cause = card.querySelector(".root-cause code");
      var body = (title ? title.textContent.trim() : "An attempt") + " " + TOLD[now] +
        (now === "crashed" && cause ? ": " + cause.textContent.trim() : "");
      var note = new Notification(document.title, { body: body, tag: id + "-" + now });
      window.__lastBrowserAlert = body;  // what a test reads back
      note.onclick = function () { window.focus(); card.scrollIntoView(); };
    });
  }
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.matches || !box.matches("[data-browser-alerts]")) { return; }
    var key = browserAlertsKey(box.getAttribute("data-browser-alerts"));
    if (!box.checked) { localStorage.removeItem(key); return; }
    if (!("Notification" in window)) { box.checked = false; return; }
    Notification.requestPermission().then(function (answer) {
      box.checked = answer === "granted";
      if (box.checked) { localStorage.setItem(key, "on"); } else { localStorage.removeItem(key); }
    });
  });
  function showBrowserAlerts(root) {
    root.querySelectorAll("[data-browser-alerts]").forEach(function (box) {
      box.checked = "Notification" in window && Notification.permission === "granted" &&
        localStorage.getItem(browserAlertsKey(box.getAttribute("data-browser-alerts"))) === "on";
    });
  }
  document.addEventListener("DOMContentLoaded", function () { showBrowserAlerts(document); });

  // A live swap brings the server's choices (a new attempt to retest, the status the log
  // reached) but keeps one the reader picked and has not submitted yet.
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select[data-keep-choice]")) {
      event.target.dataset.touched = "1";
    }
  });
  function keptChoices(root) {
    var kept = [];
    var selects = root.matches("select[data-keep-choice]") ? [root] : root.querySelectorAll("select[data-keep-choice]");
    Array.prototype.forEach.call(selects, function (select) {
      if (select.dataset.touched && select.form) {
        kept.push([select.form, select.name, select.value]);
      }
    });
    return kept;
  }
  function restoreChoices(kept) {
    kept.forEach(function (k) {
      var select = k[0].elements[k[1]];
      if (select && select.querySelector('option[value="' + CSS.escape(k[2]) + '"]')) {
        select.value = k[2];
        select.dataset.touched = "1";
      }
    });
  }

  // Attempts ticked to compare stay ticked when a live update redraws their cards.
  var ticked = {};
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (box.matches && box.matches('input[type="checkbox"][form="compare-form"]')) {
      if (box.checked) { ticked[box.value] = true; } else { delete ticked[box.value]; }
    }
  });
  function restoreTicks() {
    document.querySelectorAll('input[type="checkbox"][form="compare-form"]').forEach(function (box) {
      box.checked = !!ticked[box.value];
    });
  }

  // A stream that says nothing for three heartbeats is as good as dead: say so.
  var lastHeard = Date.now();
  var ended = "";  // what the badge says once the server ended the stream for good
  function setLive(on) {
    var badge = document.getElementById("live-status");
    if (!badge || ended) { return; }
    badge.textContent = on ? "live" : "offline, retrying";
    badge.className = on ? "live-status on" : "live-status off";
    if (on) { lastHeard = Date.now(); }
  }
  window.setInterval(function () {
    if (document.querySelector("[data-live]") && Date.now() - lastHeard > 45000) { setLive(false); }
  }, 5000);

  document.addEventListener("DOMContentLoaded", function () {
    localizeTimes(document);
    // The page says it is not live until a script runs to make it so.
    var badge = document.getElementById("live-status");
    if (badge && !ended && badge.className === "live-status off") { badge.textContent = "connecting"; }
    if (window.htmx) {
      // Let refusals (409, 422) reach the page: the server retargets them to #flash.
      htmx.config.responseHandling = [
        { code: "204", swap: false },
        { code: "[23]..", swap: true },
        { code: "(409|422|403)", swap: true, error: false },
        { code: "...", swap: false, error: true },
      ];
    }
    // A flash ("#12 deleted") is said once: its query parameter leaves the address, so a
    // reload or a copied link does not say it again.
    document.querySelectorAll("#flash [data-once]").forEach(function (flash) {
      var url = new URL(window.location.href);
      url.searchParams.delete(flash.getAttribute("data-once"));
      history.replaceState(history.state, "", url.pathname + url.search + url.hash);
    });
    document.querySelectorAll("[sse-connect]").forEach(follow);
    window.__pageLoadedAt = window.__pageLoadedAt || Date.now();
  });
  // The campaign's timeline. Filtering by status and text, by the rules of the server's GET
  // form (app/views.py AttemptFilter), as you type and again on whatever live updates bring;
  // a swapped card filed into its lane's list, newest first; the fold kept as the reader left it.
  var foldOpen = null;
  document.addEventListener("toggle", function (event) {
    if (event.target.id === "eliminated-fold") { foldOpen = event.target.open; }
  }, true);
  function searchText(card) {
    var parts = [];
    card.querySelectorAll(".seq, .title, .root-cause code, .chip.class, .verdict").forEach(function (el) {
      parts.push(el.textContent);
    });
    parts.push(card.getAttribute("data-search") || "");
    return parts.join(" ").toLowerCase();
  }
  function fileCards(timeline) {
    timeline.querySelectorAll("article.card[data-lane]").forEach(function (card) {
      var list = card.parentElement;
      var lane = card.getAttribute("data-lane");
      if (list && list.getAttribute("data-lane-list") === lane) { return; }
      var target = timeline.querySelector('[data-lane-list="' + CSS.escape(lane) + '"]');
      if (!target) { return; }
      var id = Number(card.id.replace("attempt-", ""));
      var before = Array.prototype.find.call(target.querySelectorAll("article.card"), function (other) {
        return Number(other.id.replace("attempt-", "")) < id;
      });
      target.insertBefore(card, before || null);
    });
    countLanes(timeline, false);
    // Shown only while it holds some: a refused launch is rare and out of the story.
    var refused = timeline.querySelector("#refused-fold");
    if (refused) {
      var empty = !refused.querySelector("article.card");
      if (refused.hidden !== empty) { refused.hidden = empty; }
    }
  }
  // Each lane's count: its cards, or under a filter how many of them it shows.
  function countLanes(timeline, active) {
    timeline.querySelectorAll("[data-count-of]").forEach(function (count) {
      var list = timeline.querySelector('[data-lane-list="' + CSS.escape(count.getAttribute("data-count-of")) + '"]');
      if (!list) { return; }
      var all = list.querySelectorAll("article.card");
      var seen = Array.prototype.filter.call(all, function (card) { return !card.hidden; }).length;
      var text = active ? seen + " of " + all.length : String(all.length);
      if (count.textContent !== text) { count.textContent = text; }
    });
  }
  function applyFilter() {
    var form = document.querySelector("form[data-filter]");
    var timeline = document.getElementById("timeline");
    if (!form || !timeline) { return; }
    var status = form.elements.status.value;
    var q = form.elements.q.value.trim().toLowerCase();
    var cards = timeline.querySelectorAll("article.card[data-lane]");
    var shown = 0;
    var deadEndShown = false;
    cards.forEach(function (card) {
      var match = (!status || card.getAttribute("data-status") === status) &&
        (!q || searchText(card).indexOf(q) !== -1);
      card.hidden = !match;
      if (match) {
        shown += 1;
        if (card.getAttribute("data-lane") === "eliminated") { deadEndShown = true; }
      }
    });
    var active = Boolean(status || q);
    countLanes(timeline, active);
    var count = form.querySelector("[data-filter-count]");
    var said = active ? shown + " of " + cards.length + " match" : "";
    if (count && count.textContent !== said) { count.textContent = said; }
    var fold = document.getElementById("eliminated-fold");
    if (fold && active && deadEndShown && !fold.open) { fold.open = true; }
  }
  function refreshTimeline() {
    var timeline = document.getElementById("timeline");
    if (!timeline) { return; }
    fileCards(timeline);
    var fold = document.getElementById("eliminated-fold");
    if (fold && foldOpen !== null && fold.open !== foldOpen) { fold.open = foldOpen; }
    applyFilter();
  }
  document.addEventListener("input", function (event) {
    if (event.target.form && event.target.form.matches("form[data-filter]")) { applyFilter(); }
  });
  document.addEventListener("change", function (event) {
    if (event.target.form && event.target.form.matches("form[data-filter]")) { applyFilter(); }
  });
  document.addEventListener("submit", function (event) {
    if (!event.target.matches("form[data-filter]")) { return; }
    // Filtered here, no page load; the address says what is shown (a link to paste).
    event.preventDefault();
    applyFilter();
    var params = new URLSearchParams(new FormData(event.target));
    ["status", "q"].forEach(function (name) { if (!params.get(name)) { params.delete(name); } });
    var query = params.toString();
    history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
  });
  // Whatever swaps a card or the timeline in (htmx, its SSE extension, the offline path),
  // the next frame files, folds and filters again.
  var refreshQueued = false;
  document.addEventListener("DOMContentLoaded", function () {
    refreshTimeline();
    var work = document.querySelector(".campaign-body .work");
    if (!work || !window.MutationObserver) { return; }
    new MutationObserver(function () {
      if (refreshQueued) { return; }
      refreshQueued = true;
      window.requestAnimationFrame(function () { refreshQueued = false; refreshTimeline(); });
    }).observe(work, { childList: true, subtree: true });
  });

  // A log is read from its end: keep the newest lines in view (unless the reader scrolled up).
  var pinned = {};
  function keepLogsAtEnd(root) {
    root.querySelectorAll("pre.log[id^='log-']").forEach(function (pre) {
      // Lines arrive appended: keep as many as the page first showed, the newest.
      var max = parseInt(pre.getAttribute("data-max-lines"), 10);
      while (max && pre.children.length > max) { pre.removeChild(pre.firstElementChild); }
      if (pinned[pre.id] !== false) { pre.scrollTop = pre.scrollHeight; }
      pre.addEventListener("scroll", function () {
        pinned[pre.id] = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { keepLogsAtEnd(document); });

  // A form's answer is a whole page, read from its top: a refusal beside its field, the
  // Launch form's preview or a new share link (shown once) may be far below the fold.
  document.addEventListener("DOMContentLoaded", function () {
    var answer = document.querySelector(".field-error, #launch-preview, .new-share");
    if (answer) { answer.scrollIntoView({ block: "center" }); }
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    localizeTimes(event.target);
    keepLogsAtEnd(document);
  });

  // An error page's Back, from this file: a `javascript:` link is inline script, which the
  // policy refuses. Without script (or history) it is a link to the campaigns.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-back]");
    if (link && window.history.length > 1) {
      event.preventDefault();
      window.history.back();
    }
  });
})();
