// Workshops: when the facilitator moves the room (or switches follow-me), every page of the room follows; the
// board's spotlight shows one attendee's session full screen (watch-only) for the projector.
(function () {
  "use strict";
  document.addEventListener("htmx:wsAfterMessage", function () {
    var move = document.getElementById("room-move");
    if (!move) return;
    if (move.dataset.goto) {
      var to = move.dataset.goto;
      move.removeAttribute("data-goto");
      location.href = to;  // the attendee's own session for the new item (created on the way)
    } else if (move.dataset.reload) {
      move.removeAttribute("data-reload");
      location.reload();
    }
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
