// The compare page's keys: n / → and b / ← click "next step" and "previous" (links htmx follows). Here rather than
// in an hx-trigger filter, which htmx would evaluate as a string: the Content-Security-Policy allows no eval.
(function () {
  "use strict";
  document.addEventListener("keyup", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea") return;
    var links = document.querySelectorAll("#compare [data-keys]");
    for (var i = 0; i < links.length; i++) {
      if (links[i].dataset.keys.split(" ").indexOf(e.key) >= 0) { links[i].click(); return; }
    }
  });
})();
