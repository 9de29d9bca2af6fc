from django.urls import include, path

from playground.web import commands, http, inspectviews, jscatalog, roomviews, views

SID = "s/<str:sid>/"
# Django's 400 answer without re-reading the body (playground/web/http.py says why).
handler400 = http.bad_request

urlpatterns = [
    path("", views.gallery, name="gallery"),
    path("new/", views.new_session, name="new"),
    path("healthz", views.healthz, name="healthz"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("jsi18n/<str:lang>.js", jscatalog.catalogue, name="jsi18n"),
    path("editor/", views.editor, name="editor"),
    path("editor/check/", views.editor_check, name="editor-check"),
    path("editor/play/", views.editor_play, name="editor-play"),
    path("editor/save/", views.editor_save, name="editor-save"),
    path("sc/<str:text_id>/", views.shared, name="shared"),
    path("sc/<str:text_id>/play/", views.shared_play, name="shared-play"),
    path("sc/<str:text_id>/compare/", views.shared_compare, name="shared-compare"),
    path("compare/", views.compare_scenario, name="compare"),
    path("sc/<str:text_id>.yaml", views.shared_download, name="shared-download"),
    path("w/", roomviews.join_page, name="join"),
    path("w/join/", roomviews.join, name="join-post"),
    path("w/new/", roomviews.new_page, name="room-new"),
    path("w/create/", roomviews.create, name="room-create"),
    path("w/<str:code>/", roomviews.room, name="room"),
    path("w/<str:code>/board/", roomviews.board, name="board"),
    path("w/<str:code>/move/", roomviews.move, name="room-move"),
    path("w/<str:code>/follow/", roomviews.follow, name="room-follow"),
    path("w/<str:code>/reveal/", roomviews.reveal, name="room-reveal"),
    path("w/<str:code>/questions/", roomviews.questions_fragment, name="room-questions"),
    # Watch your own cluster (read-only; every route behind INSPECTOR_KEY): playground/web/inspectviews.py
    path("inspect/", inspectviews.page, name="inspect"),
    path("inspect/key/", inspectviews.key, name="inspect-key"),
    path("inspect/forget/", inspectviews.forget, name="inspect-forget"),
    path("inspect/report.json", inspectviews.report_json, name="inspect-report"),
    path("inspect/scenario/", inspectviews.scenario, name="inspect-scenario"),
    path("inspect/tap/", inspectviews.tap, name="inspect-tap"),
    path("inspect/tap/live/", inspectviews.tap_live, name="inspect-tap-live"),
    path(SID, views.session_page, name="session"),
    path(SID + "log.json", views.session_log, name="session-log"),
    path(SID + "cell/", views.session_cell, name="session-cell"),
    # what a session's page has no room for, page by page (playground/web/lists.py)
    path(SID + "p/", views.session_partitions, name="session-partitions"),
    path(SID + "p/<str:tp>/", views.session_partition, name="session-partition"),
    path(SID + "p/<str:tp>/<int:offset>/<str:part>/", views.session_record, name="session-record"),
    path(SID + "clients/", views.session_clients, name="session-clients"),
    path(SID + "transactions/", views.session_transactions, name="session-transactions"),
    path(SID + "timeline/", views.session_timeline, name="session-timeline"),
    path(SID + "scenario.yaml", views.session_scenario, name="session-scenario"),
    path(SID + "compare/", views.session_compare, name="session-compare"),
    path(SID + "claim/", views.claim, name="claim"),
    path(SID + "fork/", views.fork, name="fork"),
    path(SID + "run/", views.run, name="run"),
    path(SID + "listen/", views.listen, name="listen"),
] + [
    # Every other command of the table, by name (the templates and broadcast.urls reverse these).
    path(SID + f"{name}/", views.command, {"name": name}, name=name)
    for name in commands.COMMANDS
    if name not in ("run", "listen")
]
