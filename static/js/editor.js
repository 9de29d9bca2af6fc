// The scenario editor: CodeMirror 6 (vendored, window.CM) over the form's textarea, checked as you type by the
// server's own loader (POST /editor/check/): every error is marked in the gutter, underlined, written out at the
// end of its line, and listed under the editor. Without JavaScript the textarea and the form still work.
(function () {
  "use strict";
  var form = document.getElementById("editor-form");
  if (!form) return;
  var textarea = document.getElementById("editor-text");
  var statusEl = document.getElementById("editor-status");
  var problems = document.getElementById("editor-problems");
  var view = null, setMessages = null, checks = 0;

  // The draft: kept in this browser per text opened (the example, a library scenario, a shared one, a session's
  // scenario) as it is typed, until it is saved; coming back (Back after Play, a reload) shows it again.
  var draftKey = "playground:draft:" + (form.dataset.draft || "new");
  var original = textarea.value;
  function readDraft() { try { return window.localStorage.getItem(draftKey); } catch (e) { return null; } }
  function keepDraft(doc) {
    try {
      if (doc === original) window.localStorage.removeItem(draftKey); else window.localStorage.setItem(draftKey, doc);
    } catch (e) { /* storage full or off: the text is still in the page */ }
  }
  function restoreDraft() {
    var draft = form.dataset.restore === "false" ? null : readDraft();
    var note = document.getElementById("editor-draft");
    if (draft === null || draft === textarea.value) return;
    textarea.value = draft;
    if (note) note.hidden = false;
  }
  function discardDraft() {
    keepDraft(original);
    if (view) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: original } });
    else textarea.value = original;
    var note = document.getElementById("editor-draft");
    if (note) note.hidden = true;
  }

  function csrf() { return form.querySelector("[name=csrfmiddlewaretoken]").value; }
  function nonce() { var m = document.querySelector('meta[name="csp-nonce"]'); return m ? m.content : ""; }
  function text() { return view ? view.state.doc.toString() : textarea.value; }

  function goto(line) {
    if (!view) { textarea.focus(); return; }
    var doc = view.state.doc, n = Math.min(Math.max(line, 1), doc.lines), l = doc.line(n);
    view.dispatch({ selection: { anchor: l.from, head: l.to }, scrollIntoView: true });
    view.focus();
  }

  function showResult(data) {
    problems.textContent = "";
    (data.errors || []).forEach(function (e) {
      var li = document.createElement("li"), b = document.createElement("button"), code = document.createElement("code");
      b.type = "button"; b.className = "goto"; b.dataset.line = e.line; b.textContent = interpolate(gettext("line %(n)s"), { n: e.line }, true);
      code.textContent = e.field;
      li.dataset.line = e.line;
      li.append(b, " ", code, ": " + e.message);
      problems.appendChild(li);
    });
    form.dataset.problems = String((data.errors || []).length);
    if (data.ok) document.getElementById("editor-refused").hidden = true;
    if (data.ok) {
      var s = data.scenario;
      statusEl.className = "editor-status ok";
      // the page's language: its own words from the catalogue, the scenario's title in that language
      var zh = (document.documentElement.lang || "").indexOf("zh") === 0;
      var title = (zh && s.title.zh) || s.title.en || s.id;
      statusEl.textContent = "✓ " + interpolate(gettext("%(title)s · %(steps)s steps · %(actors)s actors"),
        { title: title, steps: s.steps, actors: s.actors.length }, true);
    } else {
      statusEl.className = "editor-status bad";
      var n = data.errors.length;
      statusEl.textContent = interpolate(ngettext("%(n)s problem", "%(n)s problems", n), { n: n }, true);
    }
  }

  function check(doc) {
    var seq = ++checks;
    return fetch(form.dataset.checkUrl, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRFToken": csrf(), "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ text: doc }).toString()
    }).then(function (r) { return r.json(); }).then(function (data) {
      return seq === checks ? data : null;  // an older answer than one already shown: drop it
    });
  }

  function setup() {
    restoreDraft();
    var CM = window.CM;
    if (!CM) { textarea.addEventListener("input", function () { keepDraft(textarea.value); }); return; }
    // A message at the end of each line that has an error ("next to the lines", not only on hover).
    class Message extends CM.WidgetType {
      constructor(text) { super(); this.text = text; }
      eq(other) { return other.text === this.text; }
      toDOM() {
        var span = document.createElement("span");
        span.className = "cm-inline-error";
        span.textContent = this.text.replace(/ \([^)]*\)/, "");  // the listing in parentheses is in the list below
        return span;
      }
    }
    setMessages = CM.StateEffect.define();
    var messages = CM.StateField.define({
      create: function () { return CM.Decoration.none; },
      update: function (deco, tr) {
        deco = deco.map(tr.changes);
        tr.effects.forEach(function (e) { if (e.is(setMessages)) deco = e.value; });
        return deco;
      },
      provide: function (f) { return CM.EditorView.decorations.from(f); }
    });
    var lint = CM.linter(function (v) {
      var doc = v.state.doc;
      keepDraft(doc.toString());
      return check(doc.toString()).then(function (data) {
        if (!data || view.state.doc !== doc) return [];  // typed on meanwhile: the next check answers
        showResult(data);
        var diagnostics = [], builder = new CM.RangeSetBuilder(), seen = {};
        data.errors.slice().sort(function (a, b) { return a.line - b.line; }).forEach(function (e) {
          var line = doc.line(Math.min(Math.max(e.line, 1), doc.lines));
          diagnostics.push({ from: line.from, to: line.to, severity: "error", message: e.field + ": " + e.message });
          if (!seen[line.number]) {
            seen[line.number] = true;
            builder.add(line.to, line.to, CM.Decoration.widget({ widget: new Message(e.message), side: 1 }));
          }
        });
        view.dispatch({ effects: setMessages.of(builder.finish()) });
        return diagnostics;
      });
    }, { delay: 120 });
    view = new CM.EditorView({
      doc: textarea.value,
      extensions: [CM.basicSetup, CM.yaml(), CM.lintGutter(), lint, messages, CM.keymap.of([CM.indentWithTab]),
                   CM.EditorView.contentAttributes.of({ "aria-label": textarea.getAttribute("aria-label") }),
                   // Its styles go in a <style> element: the Content-Security-Policy lets it in by this page's nonce.
                   CM.EditorView.cspNonce.of(nonce())],
      parent: document.getElementById("editor-host")
    });
    textarea.hidden = true;
    form.dataset.ready = "true";
  }

  // Play or Save with problems stays here and says why (the server would answer the page again, as a POST whose
  // Back asks to send the form again).
  form.addEventListener("submit", function (e) {
    textarea.value = text();
    if (+(form.dataset.problems || 0) > 0) {
      e.preventDefault();
      var refused = document.getElementById("editor-refused");  // stays until the text checks out
      if (refused) { refused.textContent = gettext("Fix the problems listed below first: nothing was started."); refused.hidden = false; }
      var first = problems.querySelector("li");
      if (first) goto(+first.dataset.line);
      return;
    }
    if (e.submitter && e.submitter.id === "editor-save") keepDraft(original);  // saved: the link holds it now
  });
  form.addEventListener("click", function (e) {
    var b = e.target.closest("button");
    if (!b) return;
    if (b.classList.contains("goto")) goto(+b.dataset.line);
    if (b.id === "editor-draft-discard") discardDraft();
    if (b.id === "editor-download") {
      var m = /^id:\s*([a-z0-9-]+)\s*$/m.exec(text());
      var a = document.createElement("a");
      a.href = URL.createObjectURL(new Blob([text()], { type: "application/yaml" }));
      a.download = (m ? m[1] : "scenario") + ".yaml";
      a.click();
      URL.revokeObjectURL(a.href);
    }
  });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup); else setup();
})();
