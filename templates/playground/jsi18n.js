{% comment %}The scripts' own words in one language (playground/web/jscatalog.py): Django's gettext, ngettext and
interpolate over the djangojs catalogue, as globals for static/js.{% endcomment %}{% autoescape off %}(function (globals) {
  "use strict";
  var catalog = {{ catalog }};
  function pluralidx(n) { var v = {% if plural %}{{ plural }}{% else %}n != 1{% endif %}; return typeof v === "boolean" ? (v ? 1 : 0) : v; }
  globals.gettext = function (msgid) {
    var value = catalog[msgid];
    return value === undefined ? msgid : typeof value === "string" ? value : value[0];
  };
  globals.ngettext = function (singular, plural, count) {
    var value = catalog[singular];
    return value === undefined ? (count == 1 ? singular : plural) : value[pluralidx(count)];
  };
  globals.interpolate = function (fmt, obj, named) {
    if (named) return fmt.replace(/%\(\w+\)s/g, function (m) { return String(obj[m.slice(2, -2)]); });
    return fmt.replace(/%s/g, function () { return String(obj.shift()); });
  };
})(window);
{% endautoescape %}
