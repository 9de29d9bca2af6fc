from django.urls import include, path

from playground import views

SID = "s/<str:sid>/"

urlpatterns = [
    path("", views.gallery, name="gallery"),
    path("new/", views.new_session, name="new"),
    path("healthz", views.healthz, name="healthz"),
    path("i18n/", include("django.conf.urls.i18n")),
    path(SID, views.session_page, name="session"),
    path(SID + "log.json", views.session_log, name="session-log"),
    path(SID + "action/", views.action, name="action"),
    path(SID + "produce/", views.produce, name="produce"),
    path(SID + "clock/", views.clock, name="clock"),
    path(SID + "broker/", views.broker, name="broker"),
    path(SID + "add-producer/", views.add_producer, name="add-producer"),
    path(SID + "add-consumer/", views.add_consumer, name="add-consumer"),
    path(SID + "step/", views.step, name="step"),
    path(SID + "back/", views.back, name="back"),
    path(SID + "reset/", views.reset, name="reset"),
    path(SID + "run/", views.run, name="run"),
    path(SID + "pause/", views.pause, name="pause"),
    path(SID + "rerun/", views.rerun, name="rerun"),
    path(SID + "end/", views.end, name="end"),
]
