// Workshops: when the facilitator moves the room, every page of the room follows; follow-me docks (or drops) the
// facilitator's session in a panel below the attendee's own (beside it from 1440 px on, its step on the panel's bar),
// without reloading their page; the board's spotlight shows one attendee's session full screen (watch-only) for the
// projector, saying whose it is. /w/new/ lists the agenda being chosen in its order (the order of the ticks, then
// moved), each item with its profile.
(function () {
  "use strict";
  // The step the facilitator's session is at, on the panel's bar: read from the frame's own header (same origin),
  // after its page loads and after every update it receives.
  function followStep(frame) {
    var out = document.getElementById("follow-step"), doc = frame.contentDocument;
    if (!out || !doc || !doc.getElementById("p-header") || doc.followStepHooked) return;
    doc.followStepHooked = true;
    var show = function () {
      var cursor = doc.querySelector("#p-header .cursor");
      out.textContent = cursor ? cursor.parentNode.textContent.replace(/\s+/g, " ").trim() : "";
    };
    show();
    doc.addEventListener("htmx:wsAfterMessage", show);
  }
  var followFrame = document.querySelector("#follow-panel iframe");
  if (followFrame) {
    followFrame.addEventListener("load", function () { followStep(followFrame); });
    followStep(followFrame);  // it may have loaded before this script ran
  }
  function dock(src) {
    var panel = document.getElementById("follow-panel");
    var frame = panel && panel.querySelector("iframe");
    if (!frame) return;
    if (!src) {
      panel.hidden = true;
      document.body.classList.remove("following");
      if (frame.getAttribute("src")) frame.src = "about:blank";  // its socket closes: nothing to watch
      frame.removeAttribute("src");
      document.getElementById("follow-step").textContent = "";
      return;
    }
    if (frame.getAttribute("src") !== src) frame.src = src;
    panel.hidden = false;
    document.body.classList.add("following");
  }
  function boardFollow(follow, src) {
    var page = document.querySelector("[data-item]"), toggle = document.getElementById("follow-toggle");
    var open = document.getElementById("open-mine");
    if (!toggle || !toggle.dataset.labelOn || !open) { location.reload(); return; }
    var on = follow === "on";
    page.dataset.follow = follow;
    toggle.textContent = on ? toggle.dataset.labelOn : toggle.dataset.labelOff;
    toggle.classList.toggle("running", on);
    toggle.dataset.vals = JSON.stringify({ on: on ? "0" : "1" });
    // Follow-me made the facilitator's session for the item: the board offers it in presenter mode.
    var mine = /^\/s\/([^/]+)\//.exec(src || "");
    if (mine && !document.getElementById("present-mine")) {
      var a = document.createElement("a");
      a.className = "button";
      a.href = "/s/" + mine[1] + "/?present=1";
      a.target = "_blank";
      a.rel = "noopener";
      a.id = "present-mine";
      a.textContent = open.dataset.presentLabel;
      open.parentNode.appendChild(document.createTextNode(" "));
      open.parentNode.appendChild(a);
    }
  }
  document.addEventListener("htmx:wsAfterMessage", function () {
    var move = document.getElementById("room-move"), page = document.querySelector("[data-item]");
    if (!move || !page || page === move) return;
    var item = move.dataset.item, follow = move.dataset.follow, src = move.dataset.followSrc, to = move.dataset.goto;
    move.removeAttribute("data-item");
    move.removeAttribute("data-follow");
    move.removeAttribute("data-follow-src");
    // The room is on another item than this page: the board goes to the board, any other page of the room to its
    // owner's own session for the item (created on the way), the facilitator's session tab included.
    if (item !== undefined && item !== page.dataset.item) {
      location.href = (document.getElementById("seats") && move.dataset.board) || to;
      return;
    }
    if (follow === undefined) return;
    if (!document.getElementById("follow-panel") || src === undefined) {
      // The board: its follow-me button says the new state (in place: reloading the board renders every card again
      // just when the whole room opens the facilitator's session).
      if (follow !== page.dataset.follow) boardFollow(follow, src);
      return;
    }
    // An attendee's page: the facilitator's session docked or dropped (never the facilitator's own page in itself).
    page.dataset.follow = follow;
    dock(follow === "on" && src && src.indexOf("/s/" + page.dataset.sid + "/") !== 0 ? src : "");
  });
  // The board: a card for an attendee the page has no slot for (joined after the board was opened) goes at the end.
  document.addEventListener("htmx:oobErrorNoTarget", function (e) {
    var card = e.detail.content, seats = document.getElementById("seats");
    if (!seats || !card || !/^seat-/.test(card.id || "")) return;
    var empty = document.getElementById("no-seats");
    if (empty) empty.remove();
    seats.appendChild(card);
    htmx.process(card);
  });
  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target.closest("button") : null;
    if (!t) return;
    var overlay = document.getElementById("spotlight");
    if (t.classList.contains("spotlight") && overlay) {
      overlay.querySelector("iframe").src = t.dataset.src;
      var who = document.getElementById("spotlight-who");
      if (who) who.textContent = (who.dataset.template || "{name}").replace("{name}", t.dataset.who || "");
      overlay.hidden = false;
      if (overlay.requestFullscreen) overlay.requestFullscreen().catch(function () {});
    } else if (t.id === "spotlight-close" && overlay) {
      overlay.hidden = true;
      overlay.querySelector("iframe").src = "about:blank";
      if (document.fullscreenElement) document.exitFullscreen();
    } else if (t.id === "follow-fold") {
      var panel = t.closest(".follow-panel");
      panel.classList.toggle("folded");
      document.body.classList.toggle("follow-folded", panel.classList.contains("folded"));
      t.setAttribute("aria-expanded", panel.classList.contains("folded") ? "false" : "true");
    }
  });
  // /w/new/: the ticked items in the agenda's order. Without this script the form still works: the order is the
  // library's and every item runs in its scenario's own profile.
  var list = document.getElementById("agenda-list"), row = document.getElementById("agenda-row");
  if (list && row) {
    var renumber = function () {
      var items = list.querySelectorAll(".agenda-item");
      items.forEach(function (li, i) {
        li.querySelector(".order").value = String(i + 1);
      });
      document.getElementById("agenda-empty").hidden = items.length > 0;
    };
    var add = function (box) {
      var li = row.content.firstElementChild.cloneNode(true);
      li.dataset.id = box.value;
      li.querySelector(".order").name = "order-" + box.value;
      li.querySelector(".profile").name = "profile-" + box.value;
      li.querySelector(".agenda-title").textContent = box.dataset.title;
      list.appendChild(li);
    };
    var rowOf = function (id) {
      return Array.prototype.find.call(list.children, function (li) { return li.dataset.id === id; });
    };
    // A page restored by the browser's Back keeps its ticks: list them (in the library's order).
    document.querySelectorAll("#agenda-pick input[name=scenario]:checked").forEach(add);
    renumber();
    document.getElementById("agenda-pick").addEventListener("change", function (e) {
      var box = e.target;
      if (box.name !== "scenario") return;
      var li = rowOf(box.value);
      if (box.checked && !li) add(box);
      if (!box.checked && li) li.remove();
      renumber();
    });
    list.addEventListener("click", function (e) {
      var b = e.target.closest("button"), li = b && b.closest(".agenda-item");
      if (!li) return;
      if (b.classList.contains("agenda-up") && li.previousElementSibling) list.insertBefore(li, li.previousElementSibling);
      else if (b.classList.contains("agenda-down") && li.nextElementSibling) list.insertBefore(li.nextElementSibling, li);
      else if (b.classList.contains("agenda-drop")) {
        var box = document.querySelector('#agenda-pick input[value="' + li.dataset.id + '"]');
        if (box) box.checked = false;
        li.remove();
      }
      renumber();
    });
  }
})();
