// Entry point for the prebuilt CodeMirror 6 bundle (see README.md / build.sh).
// Everything exported here ends up on `window.CM`. Keep the list small: each
// import below may pull more code into the bundle.
import { EditorView, basicSetup, minimalSetup } from "codemirror";
import {
  EditorState,
  EditorSelection,
  StateField,
  StateEffect,
  RangeSetBuilder,
  RangeSet,
  Compartment,
  Prec,
  Facet,
  Transaction,
  Annotation,
  Text,
} from "@codemirror/state";
import {
  keymap,
  placeholder,
  Decoration,
  ViewPlugin,
  WidgetType,
  GutterMarker,
  gutter,
  lineNumbers,
  highlightActiveLine,
  highlightActiveLineGutter,
  hoverTooltip,
  showPanel,
} from "@codemirror/view";
import {
  defaultKeymap,
  history,
  historyKeymap,
  indentWithTab,
  undo,
  redo,
} from "@codemirror/commands";
import {
  syntaxHighlighting,
  defaultHighlightStyle,
  syntaxTree,
  indentUnit,
} from "@codemirror/language";
import {
  linter,
  lintGutter,
  lintKeymap,
  setDiagnostics,
  forceLinting,
  diagnosticCount,
  forEachDiagnostic,
  nextDiagnostic,
  previousDiagnostic,
  openLintPanel,
  closeLintPanel,
} from "@codemirror/lint";
import { yaml, yamlLanguage } from "@codemirror/lang-yaml";

window.CM = {
  // core
  EditorView,
  EditorState,
  EditorSelection,
  Transaction,
  Annotation,
  Text,
  Compartment,
  Prec,
  Facet,
  StateField,
  StateEffect,
  RangeSet,
  RangeSetBuilder,
  // setups / extensions
  basicSetup,
  minimalSetup,
  keymap,
  defaultKeymap,
  history,
  historyKeymap,
  indentWithTab,
  undo,
  redo,
  placeholder,
  lineNumbers,
  highlightActiveLine,
  highlightActiveLineGutter,
  // decorations, widgets, gutters, tooltips, panels
  Decoration,
  ViewPlugin,
  WidgetType,
  GutterMarker,
  gutter,
  hoverTooltip,
  showPanel,
  // language
  yaml,
  yamlLanguage,
  syntaxHighlighting,
  defaultHighlightStyle,
  syntaxTree,
  indentUnit,
  // lint (diagnostics come from the server: setDiagnostics or a linter() source)
  linter,
  lintGutter,
  lintKeymap,
  setDiagnostics,
  forceLinting,
  diagnosticCount,
  forEachDiagnostic,
  nextDiagnostic,
  previousDiagnostic,
  openLintPanel,
  closeLintPanel,
};
