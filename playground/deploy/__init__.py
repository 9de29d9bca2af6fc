"""Running the site: production mode and its secret key (`production`), the database URL (`dburl`), the client's
address behind trusted proxies (`clientaddr`), static files on the event loop (`staticfiles`), and real servers on
loopback for the tests and the bench (`procs`). Only the standard library and Django: `settings.py` imports these.

`python -m playground.deploy serve --host H --port P` is what `make run HOST=0.0.0.0` calls."""
