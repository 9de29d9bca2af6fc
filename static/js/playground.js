// The dashboard's own few lines: errors as toasts, the produce dialog, copy link, keyboard shortcuts, and keeping
// the partition strips scrolled to their newest end. Everything else is htmx (POST commands) and the htmx ws
// extension (out-of-band swaps of the panels the server pushes).
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

  function scrollStrips() {
    document.querySelectorAll(".strip .cells").forEach(function (ol) { ol.scrollLeft = ol.scrollWidth; });
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
  document.addEventListener("htmx:sendError", function () { toast("The server cannot be reached.", "error"); });
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
  document.addEventListener("htmx:wsAfterMessage", function () {
    scrollStrips();
    var err = document.getElementById("ws-error");
    if (err && err.textContent) { toast(err.textContent, "error"); err.textContent = ""; }
    var note = document.getElementById("ws-notice");
    if (note && note.textContent) { toast(note.textContent, "info"); note.textContent = ""; }
  });

  // The panels' buttons: one delegated handler (the server pushes new panels often; no per-button wiring).
  // <button data-post="URL" data-vals='{"actor": "A", ...}' [data-confirm="..."]> POSTs the values as a form.
  function csrf() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  }
  function post(btn) {
    if (btn.dataset.confirm && !window.confirm(btn.dataset.confirm)) return;
    var vals = {};
    try { vals = btn.dataset.vals ? JSON.parse(btn.dataset.vals) : {}; } catch (err) { vals = {}; }
    fetch(btn.dataset.post, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(vals).toString()
    }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { toast(t || ("HTTP " + r.status), "error"); });
    }, function () { toast("The server cannot be reached.", "error"); });
  }

  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target.closest("button") : null;
    if (!t) return;
    if (t.dataset.post) {
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
    } else if (t.id === "copy-link") {
      var url = t.dataset.url || location.href;
      var done = function () { toast(t.dataset.copied || "Link copied: " + url, "info"); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(url).then(done, function () { window.prompt("Copy this link", url); });
      } else {
        window.prompt("Copy this link", url);
      }
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

  var KEYS = { ArrowRight: "n", ArrowLeft: "b", n: "n", b: "b", r: "r", x: "x", t: "t", "?": "?" };
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || document.querySelector("dialog[open]")) return;
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
    tip.style.left = (e.pageX + 12) + "px";
    tip.style.top = (e.pageY + 12) + "px";
  });

  document.addEventListener("DOMContentLoaded", scrollStrips);
})();
