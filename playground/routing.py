from django.urls import path

from playground.web import consumers, inspectviews

websocket_urlpatterns = [
    path("ws/s/<str:sid>/", consumers.SessionConsumer.as_asgi()),
    path("ws/w/<str:room>/", consumers.RoomConsumer.as_asgi()),
    path("ws/inspect/", inspectviews.InspectConsumer.as_asgi()),
]
