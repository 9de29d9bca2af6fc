// The gallery's filter: cards whose id, titles, summary or tags contain every word typed stay; a group left empty
// is hidden. The filter is kept in the address (#filter=...) so a link can open the gallery filtered.
(function () {
  "use strict";
  // The Java worker being built: the page asks again every 5 s (an inline script here was refused by the CSP).
  var waiting = document.getElementById("start-when-ready");
  if (waiting) window.setTimeout(function () { waiting.submit(); }, 5000);
  var input = document.getElementById("gallery-filter");
  if (!input) return;
  var count = document.getElementById("gallery-count");
  var none = document.getElementById("gallery-none");
  var cards = Array.prototype.slice.call(document.querySelectorAll(".group .card[data-scenario]"));

  function apply() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    cards.forEach(function (card) {
      var text = ((card.querySelector("[data-search]") || card).dataset.search || "").toLowerCase();
      var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
      card.hidden = !ok;
      if (ok) shown += 1;
    });
    document.querySelectorAll(".group").forEach(function (g) {
      g.hidden = !g.querySelector(".card[data-scenario]:not([hidden])");
    });
    if (count) {
      count.textContent = words.length
        ? interpolate(gettext("%(n)s of %(total)s scenarios"), { n: shown, total: cards.length }, true) : "";
    }
    if (none) none.hidden = shown > 0 || !words.length;
    var hash = words.length ? "#filter=" + encodeURIComponent(input.value) : " ";
    if (window.history.replaceState) window.history.replaceState(null, "", hash === " " ? window.location.pathname : hash);
  }
  var m = /#filter=([^&]*)/.exec(window.location.hash);
  if (m) input.value = decodeURIComponent(m[1]);
  input.addEventListener("input", apply);
  if (input.value) apply();
})();
