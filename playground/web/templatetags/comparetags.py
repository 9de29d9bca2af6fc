"""The compare view's entry point: a small form choosing the profile pair (templates/playground/compare_form.html)."""

from __future__ import annotations

from typing import Any

from django import template

from playground.engine.spec import DEFAULT_PROFILE, Profile, profile_from_key
from playground.session.compare import PROFILES, other_profile, profile_text

register = template.Library()


@register.inclusion_tag("playground/compare_form.html")
def compare_form(
    action: str,
    a: Profile | str | None = None,
    b: Profile | None = None,
    scenario: str = "",
    at: Any = None,
    ident: str = "",
) -> dict[str, Any]:
    """A GET form to `action` with the pair to compare: side A defaults to the item's own profile, side B to
    Kafka 4 with the Java client (or the default profile, when that is A's)."""
    a = profile_from_key(a) if isinstance(a, str) else (a or DEFAULT_PROFILE)  # a panel's context holds its key
    b = b or other_profile(a)
    return {
        "action": action,
        "a": profile_text(a),
        "b": profile_text(b),
        "scenario": scenario,
        "at": at,
        "ident": ident,
        "choices": [(profile_text(p), p.label) for p in PROFILES],
    }
