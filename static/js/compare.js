// The compare view's keys (n or →, b or ←): every press is a step. htmx drops a trigger while the element's last
// request is in flight, so pressing n every 100 ms moved fewer steps than presses; here presses are counted, and
// each is taken by clicking the step button once the previous step has been swapped in (the button's own hx-get
// keeps the address and the history as a click does).
(function () {
  "use strict";
  var pending = 0; // steps asked for, not taken yet: forwards > 0, backwards < 0
  var busy = false;

  function take() {
    if (busy || pending === 0) return;
    var button = document.getElementById(pending > 0 ? "cmp-next" : "cmp-prev");
    if (!button) { pending = 0; return; } // the first or last step: nothing further
    busy = true;
    pending += pending > 0 ? -1 : 1;
    button.click();
  }

  document.addEventListener("keyup", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || !document.getElementById("compare")) return;
    var d = e.key === "n" || e.key === "ArrowRight" ? 1 : e.key === "b" || e.key === "ArrowLeft" ? -1 : 0;
    if (!d) return;
    // a press the other way cancels the ones not taken yet
    pending = (pending > 0 && d < 0) || (pending < 0 && d > 0) ? 0 : pending + d;
    take();
  });
  document.addEventListener("htmx:afterSettle", function () { busy = false; take(); });
  function reset() { busy = false; pending = 0; }
  document.addEventListener("htmx:responseError", reset);
  document.addEventListener("htmx:sendError", reset);

  // The pair's form: the same profile twice is refused before it is sent (the server refuses it too), and a new
  // pair opens at the step shown now, not at the step the page was first loaded at.
  function samePair(form) {
    var a = form.elements.a, b = form.elements.b;
    if (!a || !b) return;
    b.setCustomValidity(a.value === b.value ? gettext("Choose two different profiles: the same one twice is the same run.") : "");
  }
  document.addEventListener("change", function (e) {
    var form = e.target.form;
    if (form && form.classList.contains("compare-form")) samePair(form);
  });
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.classList || !form.classList.contains("compare-form")) return;
    samePair(form);
    if (!form.checkValidity()) { e.preventDefault(); form.reportValidity(); return; }
    var shown = document.getElementById("compare");
    var at = form.elements.at;
    if (shown && at && shown.dataset.at) at.value = shown.dataset.at;
  });
})();
