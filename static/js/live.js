// A session page's live connection and its forms, in the few lines it uses of htmx and its ws extension (issue 33:
// they were 57 KB of the page's first load, its heaviest part). Other pages (the board, the inspector, compare)
// keep htmx. What it does, as htmx does it, and the events it fires under htmx's names (playground.js and rooms.js
// listen to them on any page):
// - every element with ws-connect opens a websocket to that path; it reconnects after a close with htmx's "full
//   jitter" back-off (up to 30 s). A frame's top-level elements are swapped out of band: hx-swap-oob="true" (or
//   none) replaces the element of the same id, "outerHTML:SELECTOR" the element the selector names; one with no
//   target fires htmx:oobErrorNoTarget. Events: htmx:wsOpen (detail.socketWrapper.send), htmx:wsClose,
//   htmx:wsError, htmx:wsAfterMessage.
// - a form with hx-post is posted (urlencoded, the CSRF token and an Idempotency-Key in its headers) instead of
//   submitted; htmx:afterRequest (detail.elt, detail.successful), htmx:responseError (detail.xhr.status and
//   responseText) or htmx:sendError say how it went.
(function () {
  "use strict";
  function fire(elt, name, detail) {
    elt.dispatchEvent(new CustomEvent(name, { bubbles: true, detail: detail }));
  }

  function swap(html) {
    var holder = document.createElement("template");
    holder.innerHTML = html;
    Array.prototype.slice.call(holder.content.children).forEach(function (el) {
      var how = el.getAttribute("hx-swap-oob") || "true", colon = how.indexOf(":");
      var target = colon > 0 ? document.querySelector(how.slice(colon + 1)) : el.id && document.getElementById(el.id);
      el.removeAttribute("hx-swap-oob");
      if (!target) { fire(document.body, "htmx:oobErrorNoTarget", { content: el }); return; }
      // as htmx does: the field being typed in keeps its focus and caret when its panel is swapped
      var active = document.activeElement, id = active && target.contains(active) ? active.id : "";
      var caret = id && typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null;
      target.replaceWith(el);
      var again = id && document.getElementById(id);
      if (again && again !== active) {
        again.focus();
        if (caret && typeof again.setSelectionRange === "function") try { again.setSelectionRange(caret[0], caret[1]); } catch (err) { /* a field without a caret */ }
      }
    });
  }

  function connect(elt, retries) {
    var path = elt.getAttribute("ws-connect");
    var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + path);
    var wrapper = { send: function (message) { if (ws.readyState === 1) ws.send(message); } };
    ws.onopen = function () {
      retries = 0;
      fire(elt, "htmx:wsOpen", { elt: elt, socketWrapper: wrapper });
    };
    ws.onmessage = function (e) {
      if (!elt.isConnected) return;
      swap(e.data);
      fire(elt, "htmx:wsAfterMessage", { elt: elt, message: e.data, socketWrapper: wrapper });
    };
    ws.onerror = function () { fire(elt, "htmx:wsError", { elt: elt, socketWrapper: wrapper }); };
    ws.onclose = function () {
      fire(elt, "htmx:wsClose", { elt: elt, socketWrapper: wrapper });
      if (!elt.isConnected) return;
      var delay = Math.random() * Math.min(1000 * Math.pow(2, retries), 30000);
      setTimeout(function () { connect(elt, retries + 1); }, delay);
    };
  }

  function token() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  }
  function idempotencyKey() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    return Array.prototype.map.call(bytes, function (b) { return (b + 256).toString(16).slice(1); }).join("");
  }
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.hasAttribute || !form.hasAttribute("hx-post")) return;
    e.preventDefault();
    var body = new URLSearchParams(new FormData(form, e.submitter || undefined)).toString();
    fetch(form.getAttribute("hx-post"), {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": token(), "Content-Type": "application/x-www-form-urlencoded", "Idempotency-Key": idempotencyKey() },
      body: body
    }).then(function (r) {
      return r.text().then(function (text) {
        if (!r.ok) fire(form, "htmx:responseError", { elt: form, xhr: { status: r.status, responseText: text } });
        fire(form, "htmx:afterRequest", { elt: form, successful: r.ok, xhr: { status: r.status, responseText: text } });
      });
    }, function () { fire(form, "htmx:sendError", { elt: form }); });
  });

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("[ws-connect]"), function (elt) { connect(elt, 0); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
