// The dashboard's own few lines: errors as toasts, the produce dialog, copy links, keyboard shortcuts, keeping the
// partition strips scrolled to their newest end, a drive link's hand-over, and the time slider (this viewer only:
// it asks the server over the websocket for step k and holds live updates until "back to live"). Everything else
// is htmx (POST commands) and the htmx ws extension (out-of-band swaps of the panels the server pushes). Its words
// come from the page's catalogue (gettext: playground/web/jscatalog.py).
(function () {
  "use strict";
  var toastTimer = null;

  function toast(text, kind) {
    var el = document.getElementById("toast");
    if (!el) return;
    el.textContent = text;
    el.className = "show " + (kind || "error");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(function () { el.className = ""; }, kind === "info" ? 2500 : 6000);
  }
  function unreachable() { toast(gettext("The server cannot be reached."), "error"); }

  function scrollStrips() {
    document.querySelectorAll(".strip .cells").forEach(function (ol) {
      ol.scrollLeft = ol.scrollWidth;
      // The inspector's strips: an LSO behind the HW is what the viewer must see, however far the end is past it.
      var part = ol.closest(".ipart");
      var slot = part && +part.dataset.lso < +part.dataset.hw && ol.querySelector('.slot[data-offset="' + part.dataset.lso + '"]');
      if (slot) {
        var dx = slot.getBoundingClientRect().left - ol.getBoundingClientRect().left;
        if (dx < 0 || dx > ol.clientWidth - 40) ol.scrollLeft = Math.max(0, ol.scrollLeft + dx - ol.clientWidth / 3);
      }
    });
    // Keep the narrative's current step in view (inside its list, without moving the page).
    var list = document.querySelector("#p-narrative .steps");
    var cur = list && (list.querySelector("li.next") || list.querySelector("li.current"));
    if (cur) {
      var top = cur.offsetTop - list.offsetTop;
      if (top < list.scrollTop || top > list.scrollTop + list.clientHeight - 40) list.scrollTop = Math.max(0, top - list.clientHeight / 3);
    }
  }

  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    toast((xhr && xhr.responseText) || ("HTTP " + (xhr ? xhr.status : "?")), "error");
  });
  document.addEventListener("htmx:sendError", unreachable);
  document.addEventListener("htmx:afterRequest", function (e) {
    var form = e.detail.elt && e.detail.elt.closest && e.detail.elt.closest("dialog");
    if (form && e.detail.successful) form.close();
  });

  // The live connection: a dot in the corner, and a full snapshot arrives on every (re)connect.
  function wsState(state) {
    var dot = document.getElementById("ws-status");
    if (dot) dot.dataset.state = state;
  }
  document.addEventListener("htmx:wsOpen", function () { wsState("open"); });
  document.addEventListener("htmx:wsClose", function () { wsState("closed"); });
  document.addEventListener("htmx:wsError", function () { wsState("closed"); });
  // <details data-keep-open id=...> stay as the viewer left them across live swaps (the inspector's findings, whose
  // text changes with every poll while a stall lasts)
  var keptOpen = {};
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (d.id && d.hasAttribute && d.hasAttribute("data-keep-open")) keptOpen[d.id] = d.open;
  }, true);
  function reopen() {
    Object.keys(keptOpen).forEach(function (id) {
      var d = document.getElementById(id);
      if (d && keptOpen[id] && !d.open) d.open = true;
    });
  }
  // The header's line of facts is cut where the bar is narrow (a projector's zoom, a long last outcome): then its
  // whole text is its tooltip.
  function titleWhenCut() {
    var meta = document.querySelector("#p-header .meta");
    if (!meta) return;
    if (meta.scrollWidth > meta.clientWidth + 1) meta.title = meta.textContent.replace(/\s+/g, " ").trim();
    else meta.removeAttribute("title");
  }
  window.addEventListener("resize", titleWhenCut);
  // So is a narrative's note (cut to a line) or a step's arguments (cut to what fits), set when the pointer reaches
  // one: the page does not carry each text twice. A <code> span in a note is said with its backticks, as written.
  function asWritten(el) {
    return Array.prototype.map.call(el.childNodes, function (n) {
      return n.nodeName === "CODE" ? "`" + n.textContent + "`" : n.textContent;
    }).join("");
  }
  document.addEventListener("mouseover", function (e) {
    var el = e.target.closest ? e.target.closest(".steps .ntext, .steps .args") : null;
    if (!el) return;
    if (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1) el.title = asWritten(el);
    else el.removeAttribute("title");
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    reopen();
    scrollStrips();
    titleWhenCut();
    var err = document.getElementById("ws-error");
    if (err && err.textContent) { toast(err.textContent, "error"); err.textContent = ""; }
    var note = document.getElementById("ws-notice");
    if (note && note.textContent) { toast(note.textContent, "info"); note.textContent = ""; }
  });

  // The panels' buttons: one delegated handler (the server pushes new panels often; no per-button wiring).
  // <button data-post="URL" data-vals='{"actor": "A", ...}' [data-confirm="..."]> POSTs the values as a form. A
  // group of buttons posting to one URL says it once: <div data-post="URL" data-vals='{"actor": "A"}'> around
  // <button data-vals='{"action": "flush"}'>; a button's values are its group's with its own over them, and one with
  // a data-post of its own in the group (produce) posts there, its group's values still sent.
  function csrf() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  }
  // One Idempotency-Key per click: should the answer be lost and the request sent again, the server answers it as
  // the first time and does nothing twice. (crypto.randomUUID needs https; getRandomValues works on a LAN's http.)
  function idempotencyKey() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join("");
  }
  document.addEventListener("htmx:configRequest", function (e) {
    if (e.detail.verb === "post") e.detail.headers["Idempotency-Key"] = idempotencyKey();
  });
  // The run's speed (time between steps): this browser's choice, sent with "run"; changed while a run goes on,
  // it is sent again (the runner reads it before every step).
  var speed = document.getElementById("run-speed");
  if (speed) {
    try { if (localStorage.getItem("run-speed")) speed.value = localStorage.getItem("run-speed"); } catch (err) { /* private mode */ }
    if (!speed.value) speed.selectedIndex = 1;
    speed.addEventListener("change", function () {
      try { localStorage.setItem("run-speed", speed.value); } catch (err) { /* private mode */ }
      speed.blur();  // the keys (n, r, ...) work again at once
      if (document.querySelector("#p-header button.running")) postForm(speed.dataset.run, { ms: speed.value });
    });
  }
  function group(btn) {
    return btn.parentElement && btn.parentElement.closest("[data-post]");
  }
  function postUrl(btn) {
    var g = btn.dataset.vals !== undefined && group(btn);
    return btn.dataset.post || (g ? g.dataset.post : "");
  }
  function valsOf(el) {
    try { return el && el.dataset.vals ? JSON.parse(el.dataset.vals) : {}; } catch (err) { return {}; }
  }
  function post(btn) {
    if (btn.dataset.confirm && !window.confirm(btn.dataset.confirm)) return;
    var url = postUrl(btn), vals = valsOf(group(btn)), own = valsOf(btn);
    Object.keys(own).forEach(function (k) { vals[k] = own[k]; });
    if (speed && url === speed.dataset.run) vals.ms = speed.value;
    postForm(url, vals);
  }
  // (not "send": that name is the websocket's, below, and a second declaration in one scope replaces the first)
  function postForm(url, vals) {
    fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": idempotencyKey() },
      body: new URLSearchParams(vals).toString()
    }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { toast(t || ("HTTP " + r.status), "error"); });
    }, unreachable);
  }

  document.addEventListener("click", function (e) {
    var mark = e.target.closest ? e.target.closest(".scrub-track [data-step], .goto-step") : null;
    if (mark && scrub) { show(+mark.getAttribute("data-step")); return; }
    var t = e.target.closest ? e.target.closest("button") : null;
    if (!t) return;
    if (postUrl(t)) {
      e.preventDefault();
      post(t);
    } else if (t.classList.contains("open-produce")) {
      var dlg = document.getElementById("produce-dialog");
      document.getElementById("produce-actor").value = t.dataset.actor;
      document.getElementById("produce-actor-label").textContent = t.dataset.actor;
      document.getElementById("produce-value").value = t.dataset.value || "";
      dlg.showModal();
      document.getElementById("produce-value").select();
    } else if (t.classList.contains("close-dialog")) {
      t.closest("dialog").close();
    } else if (t.classList.contains("copy")) {
      copy(t.id === "copy-step-link" ? stepLink(t.dataset.base) : (t.dataset.url || location.href));
      var menu = t.closest("details.links");
      if (menu) menu.open = false;  // done with it: the toast says what was copied
    } else if (t.id === "scrub-live") {
      goLive();
    } else if (t.id === "fork-here" || t.id === "fork-kafka") {
      fork(t.dataset.backend || "");
    } else if (t.id === "help-button") {
      document.getElementById("help-dialog").showModal();
    }
  });

  // Partition choices follow the chosen topic.
  document.addEventListener("change", function (e) {
    if (e.target.id !== "produce-topic") return;
    var n = +e.target.selectedOptions[0].dataset.partitions;
    var sel = document.getElementById("produce-partition");
    while (sel.options.length > 1) sel.remove(1);
    for (var i = 0; i < n; i++) sel.add(new Option(String(i), String(i)));
  });

  // The bar's menus (share, compare) close on Esc and on a click anywhere outside them, as menus do.
  function openMenus(outside) {
    return Array.prototype.filter.call(document.querySelectorAll("details.links[open]"), function (d) {
      return !outside || !d.contains(outside);
    });
  }
  document.addEventListener("click", function (e) {
    openMenus(e.target).forEach(function (d) { d.open = false; });
  });

  var KEYS = { ArrowRight: "n", ArrowLeft: "b", n: "n", b: "b", r: "r", x: "x", t: "t", "?": "?" };
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape" && openMenus(null).length && !document.querySelector("dialog[open]")) {
      e.preventDefault();
      openMenus(null).forEach(function (d) { d.open = false; d.querySelector("summary").focus(); });
      return;
    }
    var tag = (e.target.tagName || "").toLowerCase();
    // The time slider keeps the focus after a drag: its own keys are the arrows; the others still work there.
    var slider = tag === "input" && e.target.type === "range";
    if ((tag === "input" && !slider) || tag === "select" || tag === "textarea" || document.querySelector("dialog[open]")) return;
    if (slider && (e.key === "ArrowLeft" || e.key === "ArrowRight")) return;
    if (scrub && (e.key === "[" || e.key === "]")) { e.preventDefault(); nudge(e.key === "[" ? -1 : 1); return; }
    if (scrub && e.key === "Escape" && at !== null) { e.preventDefault(); goLive(); return; }
    var key = KEYS[e.key];
    if (!key) return;
    var btn = document.querySelector('[data-key="' + key + '"]');
    if (btn && !btn.disabled) { e.preventDefault(); btn.click(); }
  });

  // Hover details of the timeline's arrows (SVG <title> would cost a node per arrow in every update).
  var tip = null;
  document.addEventListener("mouseover", function (e) {
    var g = e.target.closest ? e.target.closest("[data-tip]") : null;
    if (!g) { if (tip) tip.hidden = true; return; }
    if (!tip) { tip = document.createElement("div"); tip.id = "tip"; document.body.appendChild(tip); }
    tip.textContent = g.getAttribute("data-tip");
    tip.hidden = false;
    // Keep it on screen: to the left of the pointer near the right edge, above it near the bottom.
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = e.clientX + 12 + w > document.documentElement.clientWidth ? e.pageX - 12 - w : e.pageX + 12;
    var y = e.clientY + 12 + h > document.documentElement.clientHeight ? e.pageY - 12 - h : e.pageY + 12;
    tip.style.left = Math.max(window.scrollX + 2, x) + "px";
    tip.style.top = Math.max(window.scrollY + 2, y) + "px";
  });

  function copy(url) {
    var done = function () { toast(interpolate(gettext("Copied: %(url)s"), { url: url }, true), "info"); };
    var ask = function () { window.prompt(gettext("Copy this link"), url); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).then(done, ask);
    else ask();
  }

  // ---- a drive link (/s/<id>/#drive=<secret>): hand the secret to the server once, get it back as this browser's
  // cookie, and reload without it in the address bar (the fragment never reached the server or its logs).
  function claimDrive() {
    var m = /^#drive=([A-Za-z0-9_-]{16,128})$/.exec(location.hash);
    var bar = document.getElementById("timebar");
    if (!m || !bar) return;
    history.replaceState(null, "", location.pathname + location.search);
    fetch("/s/" + bar.dataset.sid + "/claim/", {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: m[1] }).toString()
    }).then(function (r) {
      if (r.ok) location.reload();
      else r.text().then(function (t) { toast(t || ("HTTP " + r.status), "error"); });
    }, unreachable);
  }

  // ---- the time slider. `at` is the step this viewer looks at (null: live); the server holds this viewer's live
  // updates while it looks back, and sends the track only, so the slider's end still follows the log.
  var scrub = null, at = null, socket = null, scrubTimer = null, pending = false;

  function length() {
    var track = document.getElementById("p-scrubber");
    return track ? +track.dataset.length : 0;
  }
  function stepLink(base) {
    return base + (at === null ? "" : "?at=" + at);
  }
  function label() {
    var out = document.getElementById("scrub-label");
    if (!out) return;
    var n = length();
    out.textContent = at === null ? interpolate(gettext("live · step %(n)s"), { n: n }, true)
      : interpolate(gettext("viewing step %(k)s · live: step %(n)s"), { k: at, n: n }, true);
    document.getElementById("scrub-live").hidden = at === null;
    document.body.classList.toggle("moment", at !== null);
    document.querySelectorAll("fieldset.ctl").forEach(function (f) {
      f.disabled = at !== null || document.body.classList.contains("watch");
    });
  }
  function send(message) {
    if (socket) socket.send(JSON.stringify(message));
  }
  function show(k) {
    var n = length();
    at = k >= n ? null : Math.max(0, k);
    scrub.value = at === null ? n : at;
    history.replaceState(null, "", location.pathname + (at === null ? "" : "?at=" + at));
    label();
    clearTimeout(scrubTimer);
    pending = true;
    // While dragging, ask for the step the thumb rests on, not every one it passes.
    scrubTimer = setTimeout(function () { pending = false; send(at === null ? { type: "live" } : { type: "at", step: at }); }, 60);
  }
  function goLive() { show(length()); }
  function nudge(delta) { show((at === null ? length() : at) + delta); }
  function fork(backend) {
    var bar = document.getElementById("timebar");
    var vals = { at: at === null ? length() : at };
    if (backend) vals.backend = backend;
    fetch(bar.dataset.forkUrl, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true" },
      body: new URLSearchParams(vals).toString()
    }).then(function (r) {
      var to = r.headers.get("HX-Redirect");
      if (r.ok && to) location.href = to;
      else r.text().then(function (t) { toast(t || ("HTTP " + r.status), "error"); });
    }, unreachable);
  }
  function followServer() {
    // After every frame: the slider's end is the log's length; a live viewer's thumb stays at the end.
    if (!scrub) return;
    var n = length(), moment = document.getElementById("ws-moment");
    scrub.max = n;
    // The server went back to live on its own (the step asked for is no longer in the log): follow it.
    if (moment && moment.dataset.at === "live" && at !== null && !pending) at = null;
    if (at === null) scrub.value = n;
    label();
  }
  document.addEventListener("htmx:wsOpen", function (e) {
    socket = e.detail.socketWrapper;
    if (at !== null) send({ type: "at", step: at });  // a reconnect: this viewer was looking back
  });
  document.addEventListener("htmx:wsAfterMessage", followServer);

  // A frame of differences names the version it assumes this page shows (data-base); when that is not the version
  // the page had, a frame was lost on the way (the channel layer was down): ask for the whole state again.
  var shown = null;
  document.addEventListener("htmx:wsAfterMessage", function () {
    var tag = document.getElementById("state-version");
    if (!tag) return;
    var base = tag.dataset.base;
    if (base !== undefined && base !== "" && shown !== null && base !== shown) send({ type: "snapshot" });
    shown = tag.dataset.version;
    delete tag.dataset.base;
  });

  document.addEventListener("DOMContentLoaded", function () {
    scrollStrips();
    titleWhenCut();
    claimDrive();
    scrub = document.getElementById("scrub");
    if (!scrub) return;
    var start = document.getElementById("timebar").dataset.at;
    at = start === "live" ? null : +start;
    scrub.addEventListener("input", function () { show(+scrub.value); });
    label();
  });
})();
