// Workshops: when the facilitator moves the room (or switches follow-me), every page of the room follows; the
// board's spotlight shows one attendee's session full screen (watch-only) for the projector.
(function () {
  "use strict";
  document.addEventListener("htmx:wsAfterMessage", function () {
    var move = document.getElementById("room-move"), page = document.querySelector("[data-item]");
    if (!move || !page || page === move) return;
    var item = move.dataset.item, follow = move.dataset.follow, to = move.dataset.goto;
    move.removeAttribute("data-item");
    move.removeAttribute("data-follow");
    // The room is on another item than this page: the attendee's own session for it (created on the way).
    if (item !== undefined && item !== page.dataset.item) location.href = to;
    // Follow-me switched since this page was rendered: the page shows (or drops) the facilitator's session.
    else if (follow !== undefined && follow !== page.dataset.follow) location.reload();
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
      overlay.hidden = false;
      if (overlay.requestFullscreen) overlay.requestFullscreen().catch(function () {});
    } else if (t.id === "spotlight-close" && overlay) {
      overlay.hidden = true;
      overlay.querySelector("iframe").src = "about:blank";
      if (document.fullscreenElement) document.exitFullscreen();
    } else if (t.id === "follow-fold") {
      t.closest(".follow-panel").classList.toggle("folded");
    }
  });
})();
