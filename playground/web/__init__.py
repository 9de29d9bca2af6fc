"""The web layer: views (sessions, the gallery and editor, rooms, the inspector), the websocket consumers, the
broadcast of panels to a session's viewers, the panels' contexts, forms and template tags.

It imports every layer below it and is imported by none but `playground.urls`, `playground.routing`,
`playground.asgi` and `playground.apps` (which connects its receivers to the session's and the rooms' signals)."""
