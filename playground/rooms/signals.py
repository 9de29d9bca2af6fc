"""What happens in a room, announced: the rooms never call up into the pages that show them. The web layer
(playground/web/board.py) receives these and tells the room's pages and its board, live."""

from django.dispatch import Signal

# An attendee joined: `room` (Workshop), `attendee` (Attendee).
joined = Signal()
# The facilitator moved the room to agenda item `item`: `room`, `item`.
moved = Signal()
# Follow-me switched: `room`, `on`.
follow_changed = Signal()
# The facilitator revealed the right answer of question `n` (a scenario step) of agenda item `item`: `room`, `item`, `n`.
revealed = Signal()
