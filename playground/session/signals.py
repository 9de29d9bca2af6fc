"""What a session announces. The session layer never calls up into the layers that show it: after a change is
stored it sends `changed`, and whoever shows sessions receives it (the web layer renders and broadcasts the panels;
`PlaygroundConfig.ready` connects it). Nothing is received in a process that shows nothing (a CLI run)."""

from django.dispatch import Signal

# A session's state changed and is stored. Keyword arguments: `live` (the session as this process holds it) and
# `langs` (the languages its pages were opened in, or None: whoever receives it reads them from the session's row).
changed = Signal()
